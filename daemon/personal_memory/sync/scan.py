"""Finding the notes of a folder on disk: a walk that skips hidden folders and symlinks,
names what it cannot read, and maps NFD names (as macOS writes them) to one NFC path."""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from dataclasses import dataclass
from typing import Iterable

from ..errors import RootUnavailable
from ..notes import markdown
from ..notes.folders import FileStat, Folder
from ..records import SkippedFile


@dataclass(frozen=True)
class Found:
    """A note found by a scan: its OS path (which may be NFD) and stat signature."""
    path: str
    stat: FileStat
    os_rel: str


def in_scope(relpath: str, scope: Iterable[str] | None) -> bool:
    """Whether ``relpath`` is one of the paths of ``scope`` or lies under one ("" is the
    whole folder). Its own path and each folder above it are looked up in a set: a scope
    of thousands of paths (a burst) is not scanned once per path."""
    if scope is None:
        return True
    if not isinstance(scope, (set, frozenset)):
        scope = set(scope)
    if "" in scope or relpath in scope:
        return True
    return any(parent in scope for parent in _parents(relpath))


def _parents(relpath: str):
    """The folders above ``relpath``, nearest first (``a/b/c``: ``a/b``, ``a``)."""
    cut = relpath.rfind("/")
    while cut > 0:
        relpath = relpath[:cut]
        yield relpath
        cut = relpath.rfind("/")


class Listings:
    """One pass's listings of folders, by the NFC form of each name, each folder listed
    once: the twins of a name and the NFD spelling of a path are found without listing a
    folder of thousands once per file. A name made after its folder was listed is seen
    by the next event or rescan."""

    def __init__(self) -> None:
        self._folders: dict[str, dict[str, list[str]] | None] = {}

    def named(self, folder: str, nfc: str) -> list[str] | None:
        """The names in ``folder`` whose NFC form is ``nfc``, in code point order; None
        when the folder cannot be listed."""
        if folder not in self._folders:
            try:
                listing = os.listdir(folder)
            except OSError:
                self._folders[folder] = None
            else:
                names: dict[str, list[str]] = {}
                for n in listing:
                    names.setdefault(markdown.normalise_path(n), []).append(n)
                self._folders[folder] = names
        names = self._folders[folder]
        return None if names is None else sorted(names.get(nfc, ()))


def printable(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 shown as \\xNN escapes."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _permission_hint(root: os.PathLike) -> str:
    if sys.platform == "darwin":
        return (" (macOS privacy protection: grant Full Disk Access, or Files and Folders "
                "access, to the program running personal-memory in System Settings > "
                "Privacy & Security)")
    return ""


def same_dir(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_root(folder: Folder) -> None:
    root = folder.root
    try:
        st = os.stat(root)
    except FileNotFoundError:
        raise RootUnavailable(f"{root}: folder is missing (unmounted or moved?); "
                              "nothing was tombstoned") from None
    except PermissionError:
        raise RootUnavailable(f"{root}: permission denied{_permission_hint(root)}; "
                              "nothing was tombstoned") from None
    if not stat.S_ISDIR(st.st_mode):
        raise RootUnavailable(f"{root}: not a folder; nothing was tombstoned")
    try:
        with os.scandir(root):
            pass
    except PermissionError:
        raise RootUnavailable(f"{root}: cannot list the folder{_permission_hint(root)}; "
                              "nothing was tombstoned") from None

NOT_REGULAR = "not a regular file (a FIFO, socket or device took its name)"
# Links inside a notes folder are not followed (a link to a note elsewhere would make it
# two notes, a link to a folder above a loop); each is named, and a note replaced by one
# is gone.
LINKED_NOTE = "a symbolic link: not followed (its target is not read)"
LINKED_FOLDER = ("a symbolic link to a folder: not followed; add its target as a notes "
                 "folder of its own")


def scan(folder: Folder, scope: Iterable[str] | None = None,
         skipped: list[SkippedFile] | None = None,
         unlisted: list[str] | None = None,
         listings: Listings | None = None) -> dict[str, Found]:
    """relpath (NFC) -> :class:`Found` for every note in scope. Folders that could not
    be listed are added to ``unlisted`` (their notes must not look deleted)."""
    found: dict[str, Found] = {}
    skipped = [] if skipped is None else skipped
    unlisted = [] if unlisted is None else unlisted
    listings = Listings() if listings is None else listings
    root = os.path.realpath(folder.root)  # a symlinked root is followed, once
    starts = {""} if scope is None or "" in scope else set(scope)
    for start in sorted(starts):
        covered = any(parent in starts for parent in _parents(start))
        if covered or (start and markdown.is_hidden(start)):
            continue
        _walk(root, start, found, skipped, unlisted, listings)
    return found

def os_path(root: str, rel: str, listings: Listings | None = None) -> str | None:
    """The OS path of the note whose NFC relative path is ``rel``, or None. Each
    component is taken as given when it exists, else matched by its NFC form (a name
    stored NFD, as macOS writes them)."""
    current = root
    for part in rel.split("/") if rel else []:
        candidate = os.path.join(current, part)
        if not os.path.lexists(candidate):
            matches = (listings or Listings()).named(current, part)
            if not matches:
                return None
            candidate = os.path.join(current, matches[0])
        current = candidate
    return current

def occupied(root: str, rel: str, listings: Listings | None = None) -> bool:
    """Whether a note's path holds a file: a note (back, or never gone), or a FIFO, socket
    or device that took its name (named as skipped, its note kept as it was). A folder or
    a symbolic link that took its name, or nothing, is no note: the note is gone."""
    path = os_path(root, rel, listings)
    if path is None:
        return False
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISDIR(mode) or stat.S_ISLNK(mode))


def _walk(root: str, start: str, found: dict, skipped: list[SkippedFile],
          unlisted: list[str], listings: Listings) -> None:
    top = os_path(root, start, listings) if start else root
    if top is None:
        _parent_unlisted(root, start, skipped, unlisted)
        return
    try:
        st = os.lstat(top)
    except OSError:
        return
    if stat.S_ISREG(st.st_mode):
        name = os.path.basename(top)
        if markdown.is_note_name(name):
            _add(found, skipped, os.path.relpath(top, root), top, st)
            _twins(root, top, found, skipped, listings)
        return
    if not stat.S_ISDIR(st.st_mode):
        if start and stat.S_ISLNK(st.st_mode):
            _linked(start, top, skipped)
        elif start and markdown.is_note_name(
                os.path.basename(top)):  # a FIFO, socket or device: named, never opened
            skipped.append(SkippedFile(printable(markdown.normalise_path(start)), NOT_REGULAR))
        return
    stack = [top]
    while stack:
        current = stack.pop()
        try:
            entries = list(os.scandir(current))
        except OSError as exc:
            rel = markdown.normalise_path(os.path.relpath(current, root))
            _unlisted("" if rel == "." else rel, exc, skipped, unlisted)
            continue
        for entry in entries:
            try:
                if entry.is_symlink():
                    _linked(os.path.relpath(entry.path, root), entry.path, skipped)
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if markdown.is_watched_dir(entry.name):
                        stack.append(entry.path)
                elif markdown.is_note_name(entry.name):
                    st = entry.stat(follow_symlinks=False)
                    rel = os.path.relpath(entry.path, root)
                    if stat.S_ISREG(st.st_mode):
                        _add(found, skipped, rel, entry.path, st)
                    else:  # named, never opened: a FIFO would block whoever reads it
                        skipped.append(SkippedFile(printable(markdown.normalise_path(rel)),
                                                   NOT_REGULAR))
            except OSError:
                continue  # vanished while listing: the next event or rescan sees it

def _linked(rel: str, path: str, skipped: list[SkippedFile]) -> None:
    """A symbolic link inside the folder: named when it reads as a note or as a folder
    that would be watched (a link to a file of another kind, or a hidden one, is not)."""
    name = os.path.basename(path)
    if markdown.is_note_name(name):
        reason = LINKED_NOTE
    elif markdown.is_watched_dir(name) and os.path.isdir(path):
        reason = LINKED_FOLDER
    else:
        return
    skipped.append(SkippedFile(printable(markdown.normalise_path(rel)), reason))


def _parent_unlisted(root: str, start: str, skipped: list[SkippedFile],
                     unlisted: list[str]) -> None:
    """A path not found may lie in a folder that cannot be listed (``chmod 000``): then
    nothing says it is gone, and that folder is unlisted, as a whole scan finds it. The
    nearest folder above it that exists decides."""
    parts = start.split("/")[:-1]
    for depth in range(len(parts), 0, -1):
        rel = "/".join(parts[:depth])
        try:
            with os.scandir(os.path.join(root, rel)):
                return  # listed: the path is gone
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            _unlisted(rel, exc, skipped, unlisted)
            return


def _unlisted(rel: str, exc: OSError, skipped: list[SkippedFile],
              unlisted: list[str]) -> None:
    """A folder that cannot be listed: its notes are kept, and it is named."""
    unlisted.append(rel)
    skipped.append(SkippedFile(printable(rel or "."), f"cannot list folder: {exc.strerror}; "
                               "its notes are kept as they were"))


def _twins(root: str, path: str, found: dict, skipped: list[SkippedFile],
           listings: Listings) -> None:
    """The other spellings of one file's name in its folder (NFC beside NFD), so that a
    sync of that one path names the twin as a whole scan does."""
    folder, name = os.path.split(path)
    names = listings.named(folder, markdown.normalise_path(name)) or []
    for other in (n for n in names if n != name):
        twin = os.path.join(folder, other)
        try:
            st = os.lstat(twin)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            _add(found, skipped, os.path.relpath(twin, root), twin, st)


def _add(found: dict, skipped: list[SkippedFile], rel: str, path: str,
         st: os.stat_result) -> None:
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes in the name, kept as surrogates
        skipped.append(SkippedFile(printable(rel), "file name is not valid UTF-8; rename "
                                   "the file to import it"))
        return
    key = markdown.normalise_path(rel)
    if (shadowed := markdown.shadowed_note(key)) is not None:
        skipped.append(SkippedFile(printable(rel), f"its name reads as a section of "
                                   f"{printable(shadowed)} ('#' after the note's name); "
                                   "rename it to import it"))
        return
    other = found.get(key)
    if other is not None:
        # Twins (NFC and NFD spellings of one name): keep the NFC one, else the first
        # in code point order, so the choice never flips between scans.
        keep_new = (rel == key, other.os_rel > rel) > (other.os_rel == key, False)
        loser = other.os_rel if keep_new else rel
        skipped.append(SkippedFile(printable(loser), "another file has the same name "
                                   "after Unicode normalisation; rename one of them"))
        if not keep_new:
            return
    found[key] = Found(path, FileStat.of(st), rel)


@dataclass(frozen=True)
class LoadedFile:
    """A file read and validated outside any transaction, ready to be written."""
    rel: str
    text: str
    digest: str
    stat: FileStat
    read_at: int


def load(path: str, rel: str, read_at: int) -> LoadedFile | SkippedFile | None:
    """Read and validate one note completely (outside any transaction): the file, why it
    cannot be imported, or None when it vanished (its deletion is handled by its own event
    or scan). Opened without blocking (a FIFO renamed over a note must not hang the
    daemon) and checked to be a regular file once open."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return SkippedFile(printable(rel), f"unreadable: {exc.strerror}")
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return SkippedFile(printable(rel), NOT_REGULAR)
        if st.st_size > markdown.MAX_FILE_BYTES:
            return SkippedFile(printable(rel), f"too large ({st.st_size:,} bytes; the "
                               f"limit is {markdown.MAX_FILE_BYTES:,})")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(markdown.MAX_FILE_BYTES + 1)
        after = os.fstat(fd)
    except OSError as exc:
        return SkippedFile(printable(rel), f"unreadable: {exc.strerror}")
    finally:
        os.close(fd)
    try:
        text = markdown.decode(data)
    except markdown.BadNote as exc:
        return SkippedFile(printable(rel), str(exc))
    return LoadedFile(rel, text, hashlib.sha256(data).hexdigest(), FileStat.of(after), read_at)
