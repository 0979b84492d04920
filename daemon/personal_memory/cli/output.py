"""How the ``memory`` command prints the API's records for a person. (``--json`` prints
their ``to_dict()``.) Pure functions: a record in, text out."""

from __future__ import annotations

import os

from .. import render
from ..records import (Changes, ClockRepair, ClockStatus, EmbeddingRun, NoteView, PurgeReport,
                       Replication, Restored, RevisionRecord, SearchResults, Stats, Status,
                       SyncReport, WriteResult)


short, name, when, moment = render.short, render.name, render.when, render.moment


def results(found: SearchResults) -> str:
    if not found:
        return "No results."  # the reason follows on its own line
    lines = []
    for i, r in enumerate(found, 1):
        title = f" — {name(r.title)}" if r.title else ""
        bm25 = f"bm25 #{r.bm25_rank} {r.bm25:.4g}" if r.bm25 is not None else "bm25 -"
        rank = f"#{r.cosine_rank} " if r.cosine_rank is not None else ""
        cos = f"cosine {rank}{r.cosine:.3f}" if r.cosine is not None else "cosine -"
        if r.dated:
            cos += f", +{r.dated:.1f} for the period named"
        if r.linked:
            cos += f", +{r.linked:.3f} from notes linking here"
        lines.append(f"{i:>2}. {name(r.memory_id)}{title}")
        if r.heading_path:
            lines.append(f"    in {' › '.join(r.heading_path)}")
        lines.append(f"    {short(r.content)}")
        valid = when(r.valid_from) + (f" to {when(r.valid_to)}" if r.valid_to else " on")
        src = f" · source {render.name(r.source)}" if r.source else ""
        lines.append(f"    score {r.score:.5f} ({bm25}, {cos}) · known {when(r.known_at)}"
                     f" · valid {valid}{src}")
    return "\n".join(lines)


def note(view: NoteView) -> str:
    if view.deleted:
        return render.gone(view)
    shown = f" as of {moment(view.as_of)}" if view.as_of else ""
    then = f" (then {name(view.path_then)})" if view.path_then else ""
    lines = [f"{name(view.note)} — {name(view.title)}{shown}{then} "
             f"(changed {when(view.changed_at)})"]
    for key in ("aliases", "tags"):
        if getattr(view, key):
            lines.append(f"{key:<8} {', '.join(getattr(view, key))}")
    for m in view.moves:
        lines.append(f"moved    from {name(m.old_note)} to {name(m.new_note)} "
                     f"at {when(m.known_at)}")
    lines.append("sections")
    for sec in view.sections:
        lines.append(f"  lines {sec.line_start}-{sec.line_end}  {name(sec.memory_id)}  "
                     f"(#{sec.revision_id}, known {when(sec.known_at)})")
    lines.append("")
    if view.embeds:  # numbered, so that each embed shows under its line
        lines.append(render.numbered(1, view.text, view.embeds))
    else:
        lines.append(view.text)
    return "\n".join(lines)


_MARK = {"added": "+", "revised": "~", "retracted": "-"}


def changes(found: Changes) -> str:
    start = when(None) if found.since is None else moment(found.since)  # as exact as "to"
    span = f"from {start} to {moment(found.until)}"
    c = found.counts
    if found.query is None:
        if not found.notes:
            return f"Nothing changed {span}."
        notes = f"{c.notes} note" + ("" if c.notes == 1 else "s")
        moved = f", {c.notes_moved} moved" if c.notes_moved else ""
        others = (f"; {c.memories} other memor{'y' if c.memories == 1 else 'ies'}"
                  if c.memories else "")
        lines = [f"Changes {span}: {notes} ({c.notes_added} new, "
                 f"{c.notes_deleted} deleted{moved}){others}; sections {c.added} "
                 f"added, {c.revised} revised, {c.retracted} retracted"]
        for n in found.notes:
            title = f" — {name(n.title)}" if n.title else ""
            what = f"moved from {name(n.moved_from)}" if n.moved_from else n.change
            lines.append(f"{name(n.note or n.sections[0].memory_id)}{title} ({what}"
                         + (f", last change {when(n.latest)}" if n.latest else "") + ")")
            lines += [f"  ~ {change}" for change in render.record_changes(n.record_changes)]
            for sec in n.sections:
                at = f" ({when(sec.known_at)})" if sec.known_at else ""
                why = f" [{sec.why}]" if sec.why else ""
                lines.append(f"  {_MARK[sec.change]} {name(sec.memory_id)}{at}{why}")
                if sec.diff:
                    lines.append(f"      {short(sec.diff, 400)}")
        if found.more:
            lines.append(f"... and {found.more} more (--limit)")
        return "\n".join(lines)
    counted = {k: v for k, v in c.to_dict().items() if v}
    head = (f"{found.query!r} {span}: " + ", ".join(f"{v} {k}" for k, v in counted.items())
            if counted else f"{found.query!r} {span}: no results either time.")
    lines = [head]
    for r in found.results:
        ranks = f"#{r.rank_before or '-'} -> #{r.rank_after or '-'}"
        what = r.change + (f", {r.why}" if r.why else "") + (
            ", text changed" if r.text_changed and r.change != "changed" else "")
        came = f" (moved from {name(r.moved_from)})" if r.moved_from else ""
        lines.append(f"  {what:<22} {ranks:<12} {name(r.memory_id)}{came}")
        if r.diff:
            lines.append(f"      {short(r.diff, 400)}")
    if found.unchanged:
        lines.append(f"  unchanged: {', '.join(found.unchanged)}")
    return "\n".join(lines)


def history(revisions: list[RevisionRecord]) -> str:
    return render.history(revisions, source=True)


def write(done: WriteResult) -> str:
    r = done.revision
    if not done.created and (r.deleted or r.purged):
        why = f"purged at {r.purged.at}" if r.purged else f"tombstone #{r.revision_id}"
        text = f"Unchanged: {r.memory_id} is hidden then already ({why})."
    elif not done.created:
        text = (f"Unchanged: {r.memory_id} already has this revision "
                f"(#{r.revision_id}, known {when(r.known_at)}).")
    else:
        verb = "Forgot" if r.deleted else "Remembered"
        text = f"{verb} {r.memory_id} as revision #{r.revision_id} (known {when(r.known_at)})."
    if not done.current and done.newer is not None:
        text += (f"\nNot current: revision #{done.newer.revision_id} of {r.memory_id} is known "
                 f"later ({when(done.newer.known_at)}), so answers from then on still see it.")
    return text


def clock_repair(d: ClockRepair) -> str:
    ahead = (f", {render.duration(d.clock_behind_seconds)} ahead of this clock"
             if d.clock_behind_seconds else "")
    if d.repair_id is None:
        return ("Nothing to repair: every note's last write is its newest revision "
                f"(newest stamp {d.newest_before or '-'}{ahead}).")
    notes = ", ".join(d.notes[:20]) + (f" and {len(d.notes) - 20} more"
                                       if len(d.notes) > 20 else "")
    return (f"Clock repair #{d.repair_id} by {d.repaired_by} at {d.repaired_at}: appended "
            f"{len(d.revision_ids)} revisions at stored stamps up to {d.stamp} (the newest"
            f"{ahead}), so that at every cutoff each note is what its writes so far "
            f"recorded: {notes}.")


def clock(c: ClockStatus) -> list[str]:
    """The status lines of the clock: only what needs saying."""
    lines = []
    if c.behind_seconds > 0:
        lines.append(f"clock         {render.duration(c.behind_seconds)} behind the newest "
                     f"revision ({c.newest_known_at}): writes are stamped after it, and "
                     "'now' reads as that time until the clock catches up")
    if c.memories_to_repair:
        some = ", ".join(c.notes_to_repair[:3]) + (", ..." if len(c.notes_to_repair) > 3
                                                   else "")
        lines.append(f"clock         {c.memories_to_repair} memories lost their last write to "
                     f"an older revision stamped later ({some}): run 'memory repair-clock'")
    return lines


def purge(d: PurgeReport) -> str:
    n, m = len(d.revision_ids), len(d.memory_ids)
    earlier = (f"{len(d.unfinished)} earlier purge{'s' if len(d.unfinished) > 1 else ''} "
               f"unfinished (audit {', '.join(map(str, d.unfinished))})")
    if not n and (d.dry_run or d.purged_at is None):
        nothing = ("Nothing to finish: no purge is unfinished." if d.resume_only else
                   f"Nothing to purge: no revision in {d.namespace!r} matches {d.selector}"
                   + (f"; namespace {render.either(d.elsewhere)} holds some (give "
                      f"--namespace)." if d.elsewhere else "."))
        if not d.unfinished:
            return nothing
        return f"{nothing}\n{earlier}: a purge (or 'memory purge --resume') finishes it."
    if n:
        head = (f"{'Would purge' if d.dry_run else 'Purged'} {render.counted(n, 'revision')} "
                f"of {render.counted(m, 'memory', 'memories')} ({d.selector}):")
        lines = [head] + [f"  {mid}" for mid in d.memory_ids[:50]]
        if len(d.memory_ids) > 50:
            lines.append(f"  … and {len(d.memory_ids) - 50} more")
    else:
        lines = ["No new revision selected; finishing the unfinished purges."]
    if d.dry_run:
        if d.refused:
            lines.append(f"The purge would be refused: {d.refused}.")
        if d.unfinished:
            lines.append(f"{earlier}: this purge finishes it too.")
        return "\n".join(lines)
    where = ", ".join(os.path.relpath(p, os.path.dirname(d.files_scanned[0]))
                      for p in d.files_scanned) if d.files_scanned else "no files"
    if d.advice:
        lines.append(f"FAILED: {d.occurrences} occurrences in {d.bytes_scanned:,} bytes "
                     f"({where}). Why: {d.advice}.")
    elif d.proven:
        lines.append(f"Proof: 0 occurrences in {d.bytes_scanned:,} bytes ({where}).")
    else:
        lines.append(f"Rewritten and WAL emptied ({where}); no text was given to scan for "
                     "(--matching TEXT proves a text gone).")
    if d.finished:
        lines.append(f"Finished purge{'s' if len(d.finished) > 1 else ''} "
                     f"{', '.join(map(str, d.finished))} of the audit.")
    if d.unfinished:
        lines.append(f"Unfinished: purge{'s' if len(d.unfinished) > 1 else ''} "
                     f"{', '.join(map(str, d.unfinished))} of the audit; "
                     f"'{d.resume_command}' finishes "
                     f"{'them' if len(d.unfinished) > 1 else 'it'}.")
    if d.kept_path:
        lines.append("Kept: the note's path and the purged revisions' IDs, which its "
                     "revisions from the cutoff on hold too; purge the note without "
                     "--known-before to erase the path.")
    for binding in d.kept_bindings:
        lines.append(f"Kept: the folder binding of collection {binding} holds the text; it "
                     "says where the notes are read from (not note content), so the proof "
                     "leaves its bytes out.")
    for path, count in d.other_files_with_copies.items():
        lines.append(f"Warning: {path} (beside the database) holds "
                     f"{render.counted(count, 'copy', 'copies')}.")
    r = d.replica
    if r is not None:
        gone = ", ".join(r.generations_deleted) or "none"
        lines.append(f"Replica {r.destination}: older files deleted ({gone}), fresh "
                     f"snapshot {r.new_generation}.")
        if not r.verified:
            lines.append(f"Replica NOT verified: "
                         f"{r.unverified or f'{r.occurrences} occurrences'}.")
        elif r.scanned:
            lines.append(f"Replica proof: {r.occurrences} occurrences in {r.bytes_scanned:,} "
                         "bytes (the replica restored, and its files with their LTX pages "
                         "decompressed).")
        else:
            lines.append("Replica rewritten from the purged file; no text was given to "
                         "scan it for (--matching TEXT proves a text gone).")
    if d.replica_warning:
        lines.append(f"Warning: {d.replica_warning}.")
    lines.append("Copies made before now (memory backup files, file-system snapshots, "
                 "other backups) still hold the text: delete or re-make them.")
    return "\n".join(lines)


def replication(r: Replication) -> str:
    if r.state == "absent":
        return "replication   not set up ('memory replicate setup DEST')"
    if r.state == "replica":
        return (f"replica       reading {r.destination}, known up to "
                f"{r.position or 'nothing yet'}")
    lines = [f"replication   {r.state}" + (f": {r.problem}" if r.problem else ""),
             f"replica       {r.destination or '-'}",
             f"running       {'yes' if r.running else 'no'}"]
    if r.position:
        lines += [f"position      {r.position} (transaction {r.generation}, "
                  f"{r.generations} LTX files in the replica)",
                  f"lag           {r.lag_seconds:.1f} s behind the last write (lagging "
                  f"when over {r.max_lag_seconds:.0f} s)"]
    return "\n".join(lines)


def restored(r: Restored) -> str:
    found = (f"{r.revisions} revisions, newest known {when(r.newest_known_at)}, schema "
             f"v{r.schema_version}, integrity {r.integrity}")
    at = f" as of {r.at}" if r.at else ""
    if r.ok:
        return f"Restored {r.source}{at} to {r.path}: {found}."
    if r.problem:
        return f"The copy of {r.source}{at} FAILED its checks: {r.problem}; nothing was written."
    return f"The copy of {r.source}{at} FAILED its checks ({found}); nothing was written."


def stats(d: Stats) -> str:
    ns = ", ".join(f"{k} ({v})" for k, v in d.namespaces.items()) or "-"
    scope = f" in {d.namespace}" if d.namespace else ""
    c, v = d.counts, d.vectors
    return (f"revisions     {c.revisions}{scope}\n"
            f"memories      {c.memories} (ever held, deleted ones included)\n"
            f"notes         {c.notes} (every path ever held, deleted and moved-away ones "
            "included)\n"
            f"tombstones    {c.tombstones}\n"
            f"namespaces    {ns}\n"
            f"search        {v.semantic}\n"
            + (f"pending       {v.pending_vectors} memories without a vector\n"
               if v.embedder else "") +
            f"database      {d.path} ({d.bytes / 1024:.1f} KiB)")


def _or_never(iso: str | None) -> str:
    return when(iso) if iso else "never"


def status(d: Status) -> str:
    s, c, v = d.daemon, d.counts, d.vectors
    replica = d.replication is not None and d.replication.state == "replica"
    state = render.daemon_state(s.daemon_running, replica)
    lines = [f"daemon        {state} "
             f"({s.daemon_state}"
             + (f", pid {s.daemon_pid}, heartbeat {when(s.daemon_heartbeat_at)}"
                if s.daemon_pid else "") + ")",
             f"folders       {render.folders(s, replica)}",
             f"last sync     {_or_never(s.last_sync_started_at)} "
             f"({s.last_sync_status or '-'})",
             f"last success  {_or_never(s.last_successful_sync_at)}",
             f"files         {s.files_indexed} indexed"
             + (f", {s.notes_to_reidentify} to re-identify for note model "
                f"{s.note_model_version} (the next sync does it)"
                if s.notes_to_reidentify else ""),
             f"revisions     {c.revisions}: every version, over all time, of "
             f"{render.counted(c.memories, 'memory', 'memories')} (sections and facts) and "
             f"of {render.counted(c.notes, 'note')} (titles and tags); "
             f"{render.counted(c.tombstones, 'is a deletion', 'are deletions')}",
             f"search        {v.semantic}"]
    if v.embedder:
        run = "the current run" if v.rate_current else "the last run"
        rate = (f", {v.embedding_per_second:.1f} per second in {run}"
                if v.embedding_per_second else "")
        waiting = (f", about {render.duration(v.eta_seconds)} to go" if v.eta_seconds
                   else "" if s.daemon_running else
                   " (the daemon is not running: start it, or run 'memory reembed')")
        lines.append(f"vectors       {v.pending_vectors} memories waiting for one{rate}"
                     + waiting if v.pending_vectors
                     else f"vectors       all embedded{rate}")
        if v.embedding_threads:
            lines.append(f"model         {v.embedding_threads}")
    problems = {(p.collection, p.path) for p in s.problems}
    said = {p.reason for p in s.problems}  # a refusal is the collection's problem too
    lines += [f"problem       {name(p.collection)}/{name(p.path)}: {name(p.reason)} (since "
              f"{when(p.since)}" + ("; its last good version stays searchable)" if p.stale
                                    else ")")
              for p in s.problems]
    lines += [f"warning       {name(p.collection)}/{name(p.path)}: {name(p.reason)} (since "
              f"{when(p.since)})" for p in s.warnings]
    lines += [f"error         {name(e.path)}: {name(e.reason)}" for e in s.last_sync_errors
              if not any(e.path == path for _, path in problems) and e.reason not in said]
    lines += [f"purge         {p.left}" for p in d.purges_unfinished]
    if d.clock is not None:
        lines += clock(d.clock)
    if d.replication is not None:
        lines.append(replication(d.replication).split("\n")[0])
    return "\n".join(lines)


def sync(report: SyncReport, embedded: EmbeddingRun | None, note: str | None) -> str:
    text = report.summary()
    text += "".join(f"\n  skipped {x.path}: {x.reason}" for x in report.skipped)
    text += "".join(f"\n  warning {x.path}: {x.reason}" for x in report.warnings)
    if embedded is not None:
        text += "\n" + embedding(embedded)
    if note:
        text += "\n" + note
    return text


def embedding(d: EmbeddingRun) -> str:
    rate = f" at {d.per_second:.1f}/s" if d.per_second else ""
    reused = f" ({d.reused} reused from identical passages)" if d.reused else ""
    left = f"; {d.remaining} still pending" if d.remaining else ""
    dropped = f"Dropped {d.dropped} vectors of other models. " if d.dropped else ""
    memories = f"{d.embedded} memor{'y' if d.embedded == 1 else 'ies'}"
    return f"{dropped}Embedded {memories}{rate}{reused}{left}."


def checks(rows: list[dict]) -> str:
    failed = any(c["status"] == "fail" for c in rows)
    warned = sum(1 for c in rows if c["status"] == "warn")
    verdict = ("Problems found." if failed else
               f"No problems; {warned} warning{'s' if warned > 1 else ''} above." if warned
               else "All good.")
    return ("\n".join(f"[{c['status']:>4}] {c['name']:<14} {c['detail']}" for c in rows)
            + "\n\n" + verdict)
