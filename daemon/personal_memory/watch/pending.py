"""The paths that changed and are not imported yet: a debouncer. Each path is imported
once it has been quiet for the settle window, and at least every ``MAX_DELAY_FACTOR``
windows while it keeps changing. A settled path waits once for the paths of its folder
marked within a window after it (a rename seen as a deletion and a creation, in either
order), so that both are imported at once, as a move; in a burst (a checkout writing
thousands of files), until the burst is over. A note file found empty when it
settles waits longer (``EMPTY_SETTLE_SECONDS`` of quiet): editors that truncate a file
and write it a moment later would otherwise have the note recorded as deleted, then
restored; so does one found gone, alone in its folder's queue
(``MISSING_SETTLE_SECONDS``): an editor that renames it away and writes it anew.
Thread-safe: the observer's thread marks, the loop takes."""

from __future__ import annotations

import bisect
import os
import stat
import threading
import time
from collections import Counter, deque

from ..notes.folders import Folder
from ..notes.markdown import is_note_name

# A path that keeps changing is still imported at least this often.
MAX_DELAY_FACTOR = 10
# A settled path waits for the paths marked just after it at most this many windows after
# its own last mark.
WAIT_WINDOWS = 2
# A folder with at least this many waiting paths first marked after a settled one, the last
# of them marked within a window, is in a burst (git checkout, rsync, an unzip): the settled
# path waits until the burst has been quiet for a window, at most MAX_DELAY_FACTOR windows
# after its own last mark. git writes in path order, so a renamed note's new file may come
# half a second after the old one went, when thousands of others are written between.
BURST_MARKS = 50
# How long an emptied note file must stay empty (and quiet) before it is imported.
EMPTY_SETTLE_SECONDS = 5.0
# How long a note file gone, alone in its folder's queue, must stay gone before it is
# imported (an editor that renames the note away and writes it anew a moment later, on a
# slow disk). Any other path of its folder marked meanwhile ends the wait: a move seen as
# a deletion and a creation is then paired as before.
MISSING_SETTLE_SECONDS = 1.5


Key = tuple[Folder, str]


class PendingPaths:
    def __init__(self, settle_seconds: float, empty_settle_seconds: float = EMPTY_SETTLE_SECONDS,
                 burst_marks: int = BURST_MARKS,
                 missing_settle_seconds: float = MISSING_SETTLE_SECONDS):
        self.settle = settle_seconds
        self.empty_settle = max(empty_settle_seconds, settle_seconds)
        self.missing_settle = max(missing_settle_seconds, settle_seconds)
        self.burst_marks = burst_marks
        self._lock = threading.Lock()
        self._pending: dict[Key, tuple[float, float]] = {}  # first and last mark
        self._held: dict[Key, float] = {}  # held back (emptied, or waiting): when they settle
        self._gone: set[Key] = set()  # held back as gone, until their folder stirs
        self._links: dict[Key, set[Key]] = {}  # paths one event named together
        self._waited: set[Key] = set()  # paths that waited for what came after them
        self._last_mark = float("-inf")  # when any path was last marked

    def mark(self, folder: Folder, rel: str, now: float | None = None) -> None:
        self.mark_together([(folder, rel)], now)

    def mark_together(self, keys: list[Key], now: float | None = None) -> None:
        """One event's paths (a move's two sides). They stay linked until imported: linked
        paths settle as one, when the last marked of them has settled, so a move, or a
        chain of them (a to b, then b to c), is imported whole and recorded as moves
        rather than deletions and new notes."""
        now = time.monotonic() if now is None else now
        with self._lock:
            self._last_mark = max(self._last_mark, now)
            stirred = {folder for folder, _ in keys}
            for key in [k for k in self._gone if k[0] in stirred and k not in keys]:
                self._held[key] = now  # its folder stirs: it settles with the others
                self._gone.discard(key)
            for key in keys:
                self._gone.discard(key)
                first, _ = self._pending.get(key, (now, now))
                self._pending[key] = (first, now)
                self._held.pop(key, None)  # changed again: settle afresh
                self._waited.discard(key)
                if len(keys) > 1:
                    self._links.setdefault(key, set()).update(k for k in keys if k != key)

    def quiet_at(self) -> float:
        """When the queue will have had no mark for a settle window (monotonic seconds;
        -inf when nothing was ever marked): the end of a burst."""
        with self._lock:
            return self._last_mark + self.settle

    def __bool__(self) -> bool:
        with self._lock:
            return bool(self._pending)

    def clear_but_empty(self) -> dict[Folder, set[str]]:
        """Forget every waiting path but those found empty now, and return them: a full
        rescan covers the others, while an emptied file keeps waiting for its long settle
        (an editor that truncates and writes a second later) and the rescan leaves it."""
        with self._lock:
            keys = list(self._pending)
        empty = {key for key in keys if _empty_file(*key)}  # sizes asked outside the lock
        kept: dict[Folder, set[str]] = {}
        with self._lock:
            for key in list(self._pending):
                if key in empty or key in self._gone:
                    kept.setdefault(key[0], set()).add(key[1])
                else:
                    self._drop(key)
        return kept

    def next_deadline(self) -> float | None:
        """When the next path settles (monotonic seconds), or None when none waits."""
        with self._lock:
            linked, seen = self._linked()
            deadlines = [d for _, d in linked]
            alone = min((d for key, d in self._alone(seen)), default=None)
            return min(deadlines + ([] if alone is None else [alone]), default=None)

    def take_settled(self, now: float | None = None) -> dict[Folder, set[str]]:
        """The settled paths, by folder, removed from the queue."""
        now = time.monotonic() if now is None else now
        with self._lock:
            linked, seen = self._linked()
            due = [{key: self._pending[key][1] for key in group}
                   for group, deadline in linked if deadline <= now]
            due += [{key: self._pending[key][1]} for key, d in self._alone(seen) if d <= now]
        # The file's size is asked outside the lock: the observer's thread must not wait.
        empty = {key for group in due for key in group
                 if key not in self._held and _empty_file(*key)}
        gone = {key for group in due if len(group) == 1 for key in group
                if key not in self._held and _gone_note(*key)}
        scopes: dict[Folder, set[str]] = {}
        with self._lock:
            marks, latest = self._by_folder() if due else ({}, {})
            asking = [group for group in due if not self._waited.issuperset(group)]
            group_arrival = dict(zip(map(id, asking), self._arrivals(asking, marks)))
            burst_end = dict(zip(map(id, due), self._bursts(due, marks, latest, now)))
            # folders with another path waiting, before any is taken (asked of gone notes)
            crowded = {folder for folder, n in Counter(
                folder for folder, _ in self._pending).items() if n > 1} if gone else set()
            for group in due:
                if any(self._pending.get(key, (None, None))[1] != last
                       for key, last in group.items()):
                    continue  # marked again meanwhile: it settles afresh
                if empty.intersection(group):
                    for key in empty.intersection(group):
                        self._held[key] = group[key] + self.empty_settle
                    continue
                if gone.intersection(group) and not crowded.intersection(f for f, _ in group):
                    for key in group:  # gone, and nothing else of its folder waits
                        self._held[key] = group[key] + self.missing_settle
                        self._gone.add(key)
                    continue
                if burst_end[id(group)] > now:  # its folder is in a burst: wait it out
                    for key in group:
                        self._held[key] = max(self._held.get(key, 0.0), burst_end[id(group)])
                    continue
                if group_arrival.get(id(group), 0.0) > now:
                    until = group_arrival[id(group)]
                    for key in group:  # it waits (once) for the paths marked just after it
                        self._held[key] = max(self._held.get(key, 0.0), until)
                        self._waited.add(key)
                    continue
                for folder, rel in group:
                    scopes.setdefault(folder, set()).add(rel)
                    self._drop((folder, rel))
        return scopes

    # -- under the lock ------------------------------------------------------------------

    def _by_folder(self) -> tuple[dict[Folder, list[tuple[float, float]]], dict[Folder, float]]:
        """Each folder's waiting paths as (first mark, when it settles), in order, and its
        latest mark: one pass over the queue, for what the settled paths wait for."""
        linked, seen = self._linked()
        settles = {key: deadline for keys, deadline in linked for key in keys}
        settles.update(self._alone(seen))
        marks: dict[Folder, list[tuple[float, float]]] = {}
        latest: dict[Folder, float] = {}
        for key, (first, last) in self._pending.items():
            marks.setdefault(key[0], []).append((first, settles[key]))
            latest[key[0]] = max(latest.get(key[0], last), last)
        for folder_marks in marks.values():
            folder_marks.sort()
        return marks, latest

    def _arrivals(self, groups: list[dict[Key, float]],
                  marks: dict[Folder, list[tuple[float, float]]]) -> list[float]:
        """For each group, when the last of the paths of its folders marked within a
        settle window after it settles (0 when none was): what it waits for, so that a
        rename that arrives as a deletion and a creation a moment apart, in either order
        (git, rsync, a script's rm and cp), is imported whole, as a move. At most
        ``WAIT_WINDOWS`` windows after the group's last mark: a path held longer (marked
        again and again while the daemon was busy) does not hold up a save beside it.
        One pass over each folder's marks, however many groups ask (a checkout's burst)."""
        asks = [(max(group.values()), folder, n) for n, group in enumerate(groups)
                for folder in {f for f, _ in group}]
        out = [0.0] * len(groups)
        for folder in {folder for _, folder, _ in asks}:
            windows = sorted((last, n) for last, f, n in asks if f == folder)
            for n, until in zip((n for _, n in windows), window_max(
                    marks.get(folder, []), [last for last, _ in windows], self.settle)):
                out[n] = max(out[n], until)
        return [min(until, max(group.values()) + WAIT_WINDOWS * self.settle)
                for until, group in zip(out, groups)]

    def _bursts(self, groups: list[dict[Key, float]],
                marks: dict[Folder, list[tuple[float, float]]], latest: dict[Folder, float],
                now: float) -> list[float]:
        """For each group, when the burst its folders are in ends (0 when none is): at
        least ``burst_marks`` waiting paths first marked since the group's last mark, the
        last of the folder's marks within a window of now; it ends a window after that
        mark, at most ``MAX_DELAY_FACTOR`` windows after the group's last mark."""
        out = []
        for group in groups:
            since = max(group.values())
            end = 0.0
            for folder in {f for f, _ in group}:
                folder_marks = marks.get(folder, [])
                after = len(folder_marks) - bisect.bisect_left(folder_marks, (since,))
                if after >= self.burst_marks and latest[folder] + self.settle > now:
                    end = max(end, min(latest[folder] + self.settle,
                                       since + self.settle * MAX_DELAY_FACTOR))
            out.append(end)
        return out

    def _alone(self, linked: set[Key]):
        """(path, when it settles) for each waiting path not in ``linked``: quiet for the
        settle window since its last mark (or waiting since its first for
        ``MAX_DELAY_FACTOR`` windows); an emptied file, after its long settle."""
        held, settle = self._held, self.settle
        longest = settle * MAX_DELAY_FACTOR
        return ((key, held[key] if key in held else min(last + settle, first + longest))
                for key, (first, last) in self._pending.items()
                if not linked or key not in linked)  # a key's hash is not free

    def _linked(self) -> tuple[list[tuple[list[Key], float]], set[Key]]:
        """The waiting paths linked to others, in groups, each with when it settles (all
        its paths quiet: the latest of theirs), and the set of them. Most paths are linked
        to none, and a burst of thousands is then read in one pass."""
        out: list[tuple[list[Key], float]] = []
        seen: set[Key] = set()
        for start in self._links:
            if start in seen or start not in self._pending:
                continue
            group, todo = [], [start]
            seen.add(start)
            while todo:
                key = todo.pop()
                group.append(key)
                for other in self._links.get(key, ()):
                    if other in self._pending and other not in seen:
                        seen.add(other)
                        todo.append(other)
            marks = [self._pending[key] for key in group]
            quiet = min(max(last for _, last in marks) + self.settle,
                        min(first for first, _ in marks) + self.settle * MAX_DELAY_FACTOR)
            out.append((group, max([quiet] + [self._held[k] for k in group
                                              if k in self._held])))
        return out, seen

    def _drop(self, key: Key) -> None:
        self._pending.pop(key, None)
        self._held.pop(key, None)
        self._gone.discard(key)
        self._waited.discard(key)
        for other in self._links.pop(key, ()):
            self._links.get(other, set()).discard(key)


def window_max(marks: list[tuple[float, float]], starts: list[float],
               width: float) -> list[float]:
    """For each of the sorted ``starts``, the largest second value of the ``marks``
    (sorted (first mark, deadline) pairs) whose first mark lies in [start, start + width]
    (0 when none does): a sliding window's maximum, in one pass over both."""
    out, window = [], deque()  # indices into marks, their deadlines decreasing
    lo = hi = 0
    for start in starts:
        while hi < len(marks) and marks[hi][0] <= start + width:
            while window and marks[window[-1]][1] <= marks[hi][1]:
                window.pop()
            window.append(hi)
            hi += 1
        while lo < hi and marks[lo][0] < start:
            lo += 1
        while window and window[0] < lo:
            window.popleft()
        out.append(marks[window[0]][1] if window else 0.0)
    return out


def _gone_note(folder: Folder, rel: str) -> bool:
    """Whether the path has a note's name and nothing is there now."""
    return bool(rel) and is_note_name(os.path.basename(rel)) and \
        not os.path.lexists(os.path.join(folder.root, rel))


def _empty_file(folder: Folder, rel: str) -> bool:
    """Whether the path is an existing regular file of no bytes."""
    if not rel:
        return False
    try:
        st = os.stat(os.path.join(folder.root, rel))
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size == 0
