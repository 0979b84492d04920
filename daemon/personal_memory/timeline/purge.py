"""Purge: the one operation that rewrites history, with proof.

A purge selects revisions (by memory ID, by note, or by a text found anywhere in them),
refuses while a note file still holds the text (the next sync would import it again),
blanks every place the text can live (see ``store.purging``), rewrites the file and
empties its WAL, then scans the database's bytes for the text in every form the store may
hold it. A failed proof names where the text still is.
"""

from __future__ import annotations

import json
import os
import shutil
import unicodedata
from dataclasses import replace
from typing import Callable

from ..errors import DiskFull, PurgeRefused
from ..paths import processes_with_open
from ..records import PurgeReport, ReplicaPurge
from ..search.text import find_folded, fold
from ..store import Database, folder_files, scan_files
from ..store.purging import Candidate
from ..times import format_time, now_micros

MIN_NEEDLE_BYTES = 4  # shorter texts occur by chance in any file


def forms(text: str) -> list[bytes]:
    """The byte strings under which the store may hold ``text``: as written, in each
    Unicode normal form (the full-text index reads NFKC), lower-cased, folded as a search
    matches it, and inside JSON (ASCII escapes, as provenance and metadata are written)."""
    variants = [text] + [unicodedata.normalize(f, text) for f in ("NFC", "NFD", "NFKC", "NFKD")]
    variants += [v.casefold() for v in variants] + [v.lower() for v in variants] + [fold(text)]
    variants += [json.dumps(v)[1:-1] for v in variants]
    return [v.encode("utf-8") for v in dict.fromkeys(variants)
            if len(v.encode("utf-8")) >= MIN_NEEDLE_BYTES]


def refuse_while_notes_hold(db: Database, namespace: str, found: list[Candidate],
                            matching: str | None, note: str | None) -> None:
    """Raise :class:`PurgeRefused` while a synced note still holds the text, or still
    exists at a path being erased."""
    texts: dict[tuple[str, str], str | None] = {}
    folded: dict[tuple[str, str], str] = {}
    for c in found:
        prov = c.provenance or {}
        if c.deleted or "collection" not in prov or "path" not in prov:
            continue
        root = db.collection_root(namespace, prov["collection"])
        if root is None:
            continue
        path = os.path.join(root, prov["path"])
        key = (prov["collection"], prov["path"])
        if key not in texts:
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    texts[key] = fh.read().replace("\r\n", "\n")
            except OSError:
                texts[key] = None
        text = texts[key]
        if text is None:
            continue
        if matching is not None and find_folded(prov["collection"], matching):
            raise PurgeRefused(f"the collection {prov['collection']!r} ({root}) is named "
                               "with this text, so every note of it would be erased while "
                               "its files are there; purge a text that is not part of the "
                               "collection's name")
        if note is not None or (matching is not None and find_folded(prov["path"], matching)):
            raise PurgeRefused(f"{path} still exists; delete or rename the file and let the "
                               "sync record it first (else the next sync imports it again), "
                               "then purge")
        if matching is not None:  # in any form a search would find it in
            if key not in folded:  # line by line: a line's number stays its number
                folded[key] = "\n".join(map(fold, text.split("\n")))
            held = folded[key]
            at = held.find(fold(matching))
        else:  # a section's own lines (not a repeated table header)
            held = text
            needle = "\n".join(c.content.split("\n")[c.metadata.get("context", 0):])
            at = text.find(needle) if needle.strip() else -1
        if at >= 0:
            line = held[:at].count("\n") + 1
            raise PurgeRefused(
                f"{path}:{line} still contains the text; edit the note and let the sync "
                "record the edit first (else the next sync imports it again), then purge")


def needles(db: Database, found: list[Candidate], matching: str | None, note: str | None,
            ) -> list[str]:
    """The texts whose absence proves the purge: the matched text; or the purged
    revisions' own texts that no other revision holds (and a note's path)."""
    if matching is not None:  # and each form it was found in
        return [matching] + db.written_forms([c.revision_id for c in found], matching)
    ids = [c.revision_id for c in found]
    texts = [t for c in found for t in (c.content, c.title) if t]
    out = [n for n in dict.fromkeys(texts)
           if len(n.encode()) >= MIN_NEEDLE_BYTES and not db.text_elsewhere(n, ids)]
    if note is not None:
        out.append(note)
    return out


def purge(db: Database, *, namespace: str, selector: str, memory_id: str | None,
          note: str | None, matching: str | None, known_before: int | None,
          reason: str | None, dry_run: bool, companions: list[str] = (),
          replica_set_up: bool = False,
          then: Callable[[list[bytes]], ReplicaPurge] | None = None) -> PurgeReport:
    """``companions``: folders of copies kept beside the database (Litestream's WAL copies),
    scanned with it; the caller empties them once the file is rewritten. ``replica_set_up``:
    a replica exists, so the erasure is unfinished until it forgets. ``then``: that step,
    given the byte patterns of the erased text; its record goes into the report.

    A purge that matched revisions but could not prove the erasure stays unfinished in the
    audit (:meth:`Database.unfinished_purges`); the next purge, whatever it selects (or
    none), finishes it: rewrite, empty the WAL, scan, and the replica when asked."""
    with db.snapshot():
        found = db.purge_candidates(namespace, memory_id=memory_id, note=note,
                                    matching=matching, known_before=known_before) \
            if (memory_id, note, matching) != (None, None, None) else []
        unfinished = db.unfinished_purges()
        # a note purged only before a time: its later revisions (its deletion, at least)
        # keep its path, so the path stays and is not what the proof looks for
        path_kept = note is not None and known_before is not None and bool(found) and len(
            db.purge_candidates(namespace, note=note)) > len(found)
        # nothing here: where the same selection matches (a text in another namespace)
        elsewhere = [] if found or (memory_id, note, matching) == (None, None, None) else [
            ns for ns in db.namespaces() if ns != namespace and db.purge_candidates(
                ns, memory_id=memory_id, note=note, matching=matching,
                known_before=known_before)]
    if path_kept:
        found = [c._replace(rename=False) for c in found]
        note = None
    report = PurgeReport(namespace=namespace, selector=selector, dry_run=dry_run,
                         revision_ids=[c.revision_id for c in found],
                         memory_ids=sorted({c.memory_id for c in found}),
                         unfinished=sorted(unfinished), elsewhere=elsewhere)
    if dry_run and found:  # what the purge itself would refuse, said now
        try:
            refuse_while_notes_hold(db, namespace, found, matching, note)
        except PurgeRefused as exc:
            return replace(report, refused=str(exc))
    if dry_run or not (found or unfinished):
        return report
    now = now_micros()
    if found:
        refuse_while_notes_hold(db, namespace, found, matching, note)
        with db.snapshot():
            erased = needles(db, found, matching, note)
        with db.errors():
            audit = db.purge_revisions(
                found, namespace=namespace, selector=selector, reason=reason, purged_at=now,
                erase=[matching] if matching else ([note] if note else []),
                unfinished=["file"] + (["replica"] if replica_set_up else []))
    else:  # finishing earlier purges: the text given, if any, is what to prove gone
        audit, erased = None, [matching] if matching is not None else []
    with db.snapshot():  # a collection's folder may hold the text: kept, and named
        kept = dict.fromkeys(b for t in erased for b in db.bindings_holding(t))
    try:
        with db.errors():
            checkpoint = db.rewrite_file()
    except DiskFull as exc:
        left = sorted(set(unfinished) | ({audit} if audit is not None else set()))
        raise DiskFull(
            f"database {db.path}: disk full while rewriting the file: "
            f"{'purges' if len(left) > 1 else 'purge'} {', '.join(map(str, left))} of the "
            f"audit {'are' if len(left) > 1 else 'is'} recorded (the revisions are blanked) "
            "but unfinished, and the file's free pages and WAL may still hold the text; "
            "free space, then run 'memory purge --resume' to finish it") from exc
    blocked = bool(checkpoint.busy and checkpoint.frames_left)
    for folder in companions:
        shutil.rmtree(folder, ignore_errors=True)
    patterns = [f for n in erased for f in forms(n)]
    own, others = folder_files(db.path, companions)
    counts = scan_files(own + others, patterns, [
        b for name, folder in kept for k in ("collection-root:" + name, folder)
        for b in dict.fromkeys([k.encode(), json.dumps(k)[1:-1].encode()])])
    occurrences = sum(counts[p] for p in own)
    where = []
    if occurrences:  # a table still holding it is found in the bytes too
        with db.snapshot():
            where = [w for n in erased for w in db.residue(n)]
    advice = None
    if where:
        advice = ("the text is still in " + ", ".join(dict.fromkeys(where))
                  + ": revisions that hold it were not selected; purge them too (for "
                  "example with --matching)")
    elif blocked:
        holders = processes_with_open([db.path, db.path + "-wal", db.path + "-shm"])
        advice = ("a reader holds an old snapshot, so the WAL could not be emptied ("
                  + ("the database is open in " + ", ".join(holders) if holders else
                     "no other process is seen with it open")
                  + "): let it finish or stop it, then run the same purge again (it "
                  "finishes this one)")
    elif occurrences:
        advice = ("the text is in the file's free space or index pages: run the purge "
                  "again, and report this if it stays")
    finished = [] if advice else db.finish_purges("file")
    replica = then(patterns) if then and advice is None else None  # never copy residue
    if (replica is not None and replica.verified) or not replica_set_up:
        finished += db.finish_purges("replica")
    with db.snapshot():
        left = db.unfinished_purges()
    return PurgeReport(
        namespace=namespace, selector=selector, dry_run=False,
        revision_ids=report.revision_ids, memory_ids=report.memory_ids,
        purged_at=format_time(now), reason=reason,
        bytes_scanned=sum(os.path.getsize(p) for p in own if os.path.exists(p)),
        occurrences=occurrences, files_scanned=[p for p in own if os.path.exists(p)],
        other_files_with_copies={p: n for p, n in counts.items() if p in others and n},
        wal_checkpoint_blocked=blocked, advice=advice, replica=replica,
        proven=bool(patterns) and advice is None,
        finished=sorted(set(finished) - set(left) - {audit}), unfinished=sorted(left),
        unfinished_replica=any("replica" in parts for parts in left.values()),
        kept_bindings=[f"{name}: {folder}" for name, folder in kept],
        kept_path=path_kept)
