"""Purge: erasure with proof. The text leaves every byte of the database folder, history
keeps an honest stub, and long-running readers notice."""

import json
import os

import pytest

from personal_memory import MemoryStore
from personal_memory.errors import PurgeRefused
from personal_memory.notes.folders import Folder
from support import ids, keyword_ids, run_memory

SECRET = "sk-live-4f9c2e7a1bd05e88"


@pytest.fixture
def vault(tmp_path):
    root = tmp_path / "notes"
    root.mkdir()
    (root / "keys.md").write_text(f"# Keys\n\nthe api key is {SECRET} for billing\n")
    (root / "other.md").write_text("# Other\n\nbilling runs monthly\n")
    return root


@pytest.fixture
def db(tmp_path):
    (tmp_path / "db").mkdir()
    return tmp_path / "db" / "memory.db"


def every_byte(folder) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file())


def test_a_synced_secret_is_gone_from_every_byte_after_purge(vault, db):
    with MemoryStore.open(db) as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01")
        store.remember("pasted", f"temporary {SECRET}", namespace="notes",
                       known_at="2025-01-02")
        store.forget("pasted", namespace="notes", known_at="2025-01-03")
        (vault / "keys.md").write_text("# Keys\n\nthe api key lives in the vault; billing\n")
        store.sync([Folder.of(vault)], known_at="2025-01-04")
        assert SECRET.encode() in every_byte(db.parent)
        assert keyword_ids(store, "billing") == ["notes/keys.md#Keys", "notes/other.md#Other"]

        report = store.purge(namespace="notes", matching=SECRET, reason="leaked key")
        assert len(report.revision_ids) == 2 and report.occurrences == 0
        assert report.bytes_scanned > 0 and report.wal_checkpoint_blocked is False
        assert report.memory_ids == ["notes/keys.md#Keys", "pasted"]

        history = store.history("notes/keys.md#Keys", namespace="notes")
        stub = history[0]
        assert stub.content == "" and stub.title is None and stub.content_hash == "purged"
        assert stub.purged.reason == "leaked key" and stub.purged.at and stub.hidden
        assert stub.provenance is None
        assert stub.known_at == "2025-01-01T00:00:00Z"  # the times stay: an honest gap
        assert "lives in the vault" in history[1].content
        # Past answers change: at the old cutoff the purged section is a hole.
        assert ids(store.search("billing", namespace="notes", as_of="2025-01-02")) == [
            "notes/other.md#Other"]
        assert ids(store.search_reference("billing", namespace="notes",
                                          as_of="2025-01-02")) == ["notes/other.md#Other"]
        (audit,) = store.purges()
        assert audit.revision_ids == report.revision_ids and audit.revisions == 2
        assert SECRET not in str(audit)
    assert SECRET.encode() not in every_byte(db.parent)


def test_purge_is_refused_while_the_note_still_holds_the_text(vault, db):
    with MemoryStore.open(db) as store:
        store.sync([Folder.of(vault)])
        with pytest.raises(PurgeRefused, match=r"keys\.md:3 still contains the text"):
            store.purge(namespace="notes", matching=SECRET)
        with pytest.raises(PurgeRefused, match="keys.md"):
            store.purge(namespace="notes", note="notes/keys.md")
        assert keyword_ids(store, "billing") == ["notes/keys.md#Keys", "notes/other.md#Other"]


def test_a_dry_run_says_when_the_purge_would_be_refused(vault, db):
    with MemoryStore.open(db, embedder="none") as store:
        store.sync([Folder.of(vault)])
        preview = store.purge(namespace="notes", matching=SECRET, dry_run=True)
        assert preview.revision_ids and "still contains the text" in preview.refused
    p = run_memory("--db", db, "purge", "--matching", SECRET, "--dry-run")
    assert p.returncode == 0 and "The purge would be refused:" in p.stdout, p.stdout


def test_dry_run_lists_and_erases_nothing(vault, db):
    with MemoryStore.open(db) as store:
        store.sync([Folder.of(vault)])
        before = every_byte(db.parent)
        report = store.purge(namespace="notes", note="notes/keys.md", dry_run=True)
        # the note's section and its record (front matter, tags, section order)
        assert report.memory_ids == ["notes/keys.md#", "notes/keys.md#Keys"]
        assert len(report.revision_ids) == 2
        assert store.history("notes/keys.md#Keys", namespace="notes")[0].content.startswith("# Keys")
    assert SECRET.encode() in before


def test_a_section_id_typed_decomposed_is_the_note_s_as_history_reads_it(tmp_path, db):
    """A note's path is stored NFC; its section's ID pasted decomposed (macOS) names the
    same section to purge, as it does to history."""
    import unicodedata
    root = tmp_path / "v"
    root.mkdir()
    (root / "Résumé.md").write_text("# Résumé\n\n## Skills\n\ncooking\n")
    with MemoryStore.open(db, embedder="none") as store:
        store.sync([Folder.of(root)])
        typed = unicodedata.normalize("NFD", "v/Résumé.md#Résumé#Skills")
        assert store.history(typed, namespace="notes")
        report = store.purge(namespace="notes", memory_id=typed, dry_run=True)
        assert report.memory_ids == ["v/Résumé.md#Résumé#Skills"]


def test_a_long_running_reader_notices_a_purge(vault, db):
    with MemoryStore.open(db) as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01")
        (vault / "keys.md").write_text("# Keys\n\nrotated\n")
        store.sync([Folder.of(vault)], known_at="2025-01-02")
        # numpy's exact cosine on both paths (sqlite-vec's float32 differs within 1e-6)
        with MemoryStore.open(db, read_only=True, vector_backend="python") as reader:
            reader.warm()
            assert "notes/keys.md#Keys" in ids(reader.search("billing", namespace="notes",
                                                          as_of="2025-01-01"))
            store.purge(namespace="notes", matching=SECRET)
            for q in ("billing", "api key", "monthly"):
                fast = reader.search(q, namespace="notes", as_of="2025-01-01")
                assert [r.to_dict() for r in fast] == [
                    r.to_dict() for r in reader.search_reference(q, namespace="notes",
                                                                 as_of="2025-01-01")]
                assert SECRET not in str([r.to_dict() for r in fast])
            assert ids(reader.search("billing", namespace="notes", as_of="2025-01-01")) == [
                "notes/other.md#Other"]


def test_revisions_stay_append_only_outside_a_purge(db):
    import apsw
    with MemoryStore.open(db) as store:
        store.remember("a", "alpha", namespace="notes")
    conn = apsw.Connection(str(db))
    with pytest.raises(apsw.ConstraintError, match="append-only"):
        conn.execute("UPDATE revisions SET content = 'x'")
    conn.execute("INSERT INTO meta VALUES ('purge_in_progress', '1')")
    with pytest.raises(apsw.ConstraintError, match="only blank the text"):
        conn.execute("UPDATE revisions SET known_at = 1")  # its times never change
    conn.close()


def test_cli_purge_asks_then_proves(tmp_path, vault, db):
    assert run_memory("--db", db, "sync", vault).returncode == 0
    (vault / "keys.md").write_text("# Keys\n\nrotated\n")
    assert run_memory("--db", db, "sync", vault).returncode == 0
    p = run_memory("--db", db, "purge", "--matching", SECRET, "--dry-run")
    assert p.returncode == 0 and "Would purge 1 revision of 1 memory" in p.stdout
    p = run_memory("--db", db, "purge", "--matching", SECRET)  # no terminal, no --yes
    assert p.returncode == 2 and "--yes" in p.stderr
    p = run_memory("--db", db, "purge", "--matching", SECRET, "--yes")
    assert p.returncode == 0, p.stderr
    assert "Proof: 0 occurrences in" in p.stdout and "memory.db" in p.stdout
    assert SECRET.encode() not in every_byte(db.parent)
    assert run_memory("--db", db, "purge", "--id", "x", "--note", "y").returncode == 2


def test_purge_is_never_offered_over_mcp(db):
    from personal_memory.mcp_server.server import build_server
    from personal_memory.settings import resolve
    import asyncio
    from mcp import Client
    with MemoryStore.open(db) as store:
        store.remember("a", "alpha", namespace="notes")

    async def names():
        async with Client(build_server(resolve(db=str(db), enable_writes=True, environ={})),
                          mode="legacy") as c:
            return {t.name for t in (await c.list_tools()).tools}
    assert not any("purge" in n for n in asyncio.run(names()))
    assert os.path.exists(db)


def test_a_secret_in_a_heading_and_a_file_name_is_purged_from_every_place(tmp_path, db):
    token = "KZQPASS-7788"
    vault = tmp_path / "n"
    vault.mkdir()
    (vault / "plain.md").write_text(f"# Keys\n\n## Token {token}\n\nuse it with care\n")
    (vault / f"{token}-file.md").write_text("# File\n\nsomething\n")
    (vault / "links.md").write_text(f"# Links\n\nsee [[{token}-file]]\n")
    with MemoryStore.open(db, embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-01-01")
        # Edited away: the heading renamed, the file renamed, the link changed.
        (vault / "plain.md").write_text("# Keys\n\n## Token\n\nuse it with care\n")
        os.rename(vault / f"{token}-file.md", vault / "renamed-file.md")
        (vault / "links.md").write_text("# Links\n\nsee [[renamed-file]]\n")
        store.sync([Folder.of(vault)], known_at="2025-01-02")
        assert token.encode() in every_byte(db.parent)
        report = store.purge(namespace="notes", matching=token, reason="leak")
        assert report.occurrences == 0, report.advice
        assert report.advice is None
        for r in store.export():
            assert token not in json.dumps(r.to_dict(), ensure_ascii=False)
        assert token not in str([p.to_dict() for p in store.purges()])
        assert token not in str(store.status().to_dict())
        # What was not secret is still there, and the live notes read as before.
        assert "use it with care" in store.read("n/plain.md", namespace="notes").text
        assert store.read("n/renamed-file.md", namespace="notes").text.startswith("# File")
        assert store.purge(namespace="notes", matching=token, dry_run=True).revision_ids == []
    assert token.encode() not in every_byte(db.parent)
    assert token.lower().encode() not in every_byte(db.parent)


def test_purge_of_a_note_erases_its_path_and_proves_it(tmp_path, db):
    vault = tmp_path / "n"
    vault.mkdir()
    secret_name = "Project Zeta-4711 plans.md"
    (vault / secret_name).write_text("# Plans\n\nthe zeta plans\n")
    (vault / "other.md").write_text("# Other\n\nunrelated\n")
    with MemoryStore.open(db, embedder="none") as store:
        store.sync([Folder.of(vault)])
        with pytest.raises(PurgeRefused, match="still exists"):
            store.purge(namespace="notes", note=f"n/{secret_name}")
        (vault / secret_name).unlink()
        store.sync([Folder.of(vault)])
        report = store.purge(namespace="notes", note=f"n/{secret_name}")
        assert report.occurrences == 0 and len(report.revision_ids) >= 2
        assert report.selector == "note (its path is not recorded)"
    assert b"Zeta-4711" not in every_byte(db.parent)


def test_a_note_purged_before_a_time_keeps_its_path_and_proves_its_text_gone(tmp_path, db):
    """--note with --known-before (the documented example): the revisions known since
    hold the note's path (its deletion, at least), so the path stays and the purged
    revisions keep their IDs; the earlier text is proven gone, the later one stays."""
    vault = tmp_path / "v2"
    vault.mkdir()
    (vault / "Keys.md").write_text(f"# Keys\n\nkey one {SECRET}\n")
    (vault / "other.md").write_text("# Other\n\nunrelated\n")
    with MemoryStore.open(db, embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-05-01")
        (vault / "Keys.md").write_text("# Keys\n\nkey two stays\n")
        store.sync([Folder.of(vault)], known_at="2025-07-01")
        (vault / "Keys.md").unlink()
        store.sync([Folder.of(vault)], known_at="2025-08-01")
        report = store.purge(namespace="notes", note="v2/Keys.md", known_before="2025-06-01")
        assert report.proven and report.occurrences == 0 and report.advice is None
        assert report.kept_path and report.unfinished == []
        history = store.history("v2/Keys.md#Keys", namespace="notes")
        assert [r.purged is not None for r in history][:1] == [True]
    data = every_byte(db.parent)
    assert SECRET.encode() not in data and b"key two stays" in data and b"Keys.md" in data
    # a note still there, purged before a time: what it reads now (its record, a section
    # unchanged since) is kept, and nothing is refused for it
    (vault / "Live.md").write_text("# Live\n\n## Old\n\nold pin 4471-heron\n\n## Same\n\n"
                                   "unchanged text\n")
    with MemoryStore.open(db, embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-09-01")
        (vault / "Live.md").write_text("# Live\n\n## Old\n\nnew pin\n\n## Same\n\n"
                                       "unchanged text\n")
        store.sync([Folder.of(vault)], known_at="2025-10-01")
        report = store.purge(namespace="notes", note="v2/Live.md", known_before="2025-09-15")
        assert report.proven and len(report.revision_ids) == 1, report
        view = store.read("v2/Live.md", namespace="notes")
        assert not view.deleted and "unchanged text" in view.text and "new pin" in view.text
    assert b"4471-heron" not in every_byte(db.parent)
    # purged whole later, its path goes from the stubs of the first purge too
    (vault / "Live.md").unlink()
    with MemoryStore.open(db, embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-10-15")
        report = store.purge(namespace="notes", note="v2/Live.md")
        assert report.proven and report.advice is None, report
    assert b"Live.md" not in every_byte(db.parent)
    # a note deleted before the time is purged whole, its path too
    (vault / "Gone.md").write_text("# Gone\n\ngone pin 5582-egret\n")
    with MemoryStore.open(db, embedder="none") as store:
        store.sync([Folder.of(vault)], known_at="2025-11-01")
        (vault / "Gone.md").unlink()
        store.sync([Folder.of(vault)], known_at="2025-11-02")
        report = store.purge(namespace="notes", note="v2/Gone.md", known_before="2025-12-01")
        assert report.proven and not report.kept_path, report
    assert b"Gone.md" not in every_byte(db.parent) and b"5582-egret" not in every_byte(
        db.parent)
    p = run_memory("--db", db, "doctor")
    assert p.returncode == 0 and "purges         none unfinished" in p.stdout, p.stdout


def test_a_word_of_the_vault_folder_path_keeps_the_binding_and_the_refusal(tmp_path, db):
    vault = tmp_path / "acmecorp-files" / "vault"
    vault.mkdir(parents=True)
    (vault / "A.md").write_text("# A\n\nthe acmecorp contract\n")
    (vault / "B.md").write_text("# B\n\nthe door code 4471-wren\n")
    assert run_memory("--db", db, "sync", vault).returncode == 0
    (vault / "A.md").write_text("# A\n\nthe contract\n")
    assert run_memory("--db", db, "sync", vault).returncode == 0
    p = run_memory("--db", db, "purge", "--matching", "acmecorp", "--yes")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Proof: 0 occurrences" in p.stdout and "Kept: the folder binding" in p.stdout
    assert str(vault) in p.stdout
    # the binding stays: a text a note still holds is still refused, and kept
    p = run_memory("--db", db, "purge", "--matching", "4471-wren", "--yes")
    assert p.returncode == 2 and "B.md:3 still contains the text" in p.stderr, p.stdout
    found = run_memory("--db", db, "search", "4471-wren", "--json")
    assert "vault/B.md#B" in found.stdout
    (vault / "B.md").write_text("# B\n\nthe door code 4471-wren, and a new line\n")
    p = run_memory("--db", db, "sync", vault)
    assert p.returncode == 0 and "collection" not in p.stderr, p.stderr


def test_a_word_of_the_collection_name_is_refused_not_a_whole_vault_erased(tmp_path, db):
    vault = tmp_path / "acmecorp"
    vault.mkdir()
    (vault / "A.md").write_text("# A\n\nplain words\n")
    assert run_memory("--db", db, "sync", vault).returncode == 0
    p = run_memory("--db", db, "purge", "--matching", "acmecorp", "--yes")
    assert p.returncode == 2 and "is named with this text" in p.stderr, p.stdout + p.stderr
    assert "plain words" in run_memory("--db", db, "read", "acmecorp/A.md").stdout


@pytest.mark.parametrize("written,asked", [
    ("SK-LIVE-ABCDEF", "sk-live-abcdef"),
    ("Herr Mu\u0308ller", "Müller"),  # NFD in the note, NFC asked
    ("\uff53\uff4b\uff0d\uff4c\uff49\uff56\uff45\uff0d\uff58\uff59", "sk-live-xy"),
    ("pass\u00adword-9931", "password-9931"),  # a soft hyphen a reader does not see
])
def test_purge_finds_every_form_a_search_finds(tmp_path, db, written, asked):
    vault = tmp_path / "n"
    vault.mkdir()
    (vault / "A.md").write_text(f"# A\n\nthe value {written} here\n")
    (vault / "B.md").write_text("# B\n\nunrelated\n")
    assert run_memory("--db", db, "sync", vault).returncode == 0
    hits = run_memory("--db", db, "search", asked, "--json")
    assert "n/A.md#A" in hits.stdout, hits.stdout + hits.stderr
    p = run_memory("--db", db, "purge", "--matching", asked, "--yes")
    assert p.returncode == 2 and "A.md:3 still contains the text" in p.stderr, p.stdout
    (vault / "A.md").write_text("# A\n\nthe value is gone\n")
    assert run_memory("--db", db, "sync", vault).returncode == 0
    p = run_memory("--db", db, "purge", "--matching", asked, "--yes")
    assert p.returncode == 0 and "Purged 1 revision of 1 memory" in p.stdout, p.stdout + p.stderr
    assert "Proof: 0 occurrences" in p.stdout
    data = every_byte(db.parent)
    assert written.encode() not in data and asked.encode() not in data
    assert "n/A.md#A" in run_memory("--db", db, "search", "gone", "--json").stdout


KILLED_AFTER_ITS_TRANSACTION = """
import os, sys
from personal_memory.store import purging
purging.Purging.rewrite_file = lambda self: os._exit(9)  # killed before the rewrite
from personal_memory.cli.app import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_purge_killed_after_its_transaction_is_named_until_finished(tmp_path, vault, db):
    import subprocess
    import sys
    from support import user_env
    assert run_memory("--db", db, "sync", vault).returncode == 0
    (vault / "keys.md").write_text("# Keys\n\nrotated\n")
    assert run_memory("--db", db, "sync", vault).returncode == 0
    killed = subprocess.run([sys.executable, "-c", KILLED_AFTER_ITS_TRANSACTION, "--db",
                             str(db), "purge", "--matching", SECRET, "--yes"],
                            env=user_env(), capture_output=True, text=True)
    assert killed.returncode == 9, killed.stderr
    assert SECRET.encode() in every_byte(db.parent)  # the rewrite never ran
    doctor = run_memory("--db", db, "doctor")
    assert doctor.returncode != 0 and "All good" not in doctor.stdout, doctor.stdout
    assert "purge 1 of" in doctor.stdout and "'memory purge --resume'" in doctor.stdout
    status = run_memory("--db", db, "status")
    assert "purge 1 of" in status.stdout and "'memory purge --resume'" in status.stdout
    done = run_memory("--db", db, "purge", "--resume", "--matching", SECRET, "--yes")
    assert done.returncode == 2  # --resume stands alone
    done = run_memory("--db", db, "purge", "--matching", SECRET, "--yes")
    assert done.returncode == 0 and "Finished purge 1" in done.stdout, done.stdout
    assert SECRET.encode() not in every_byte(db.parent)
    doctor = run_memory("--db", db, "doctor")
    assert "All good" in doctor.stdout and "purge 1" not in doctor.stdout, doctor.stdout
    assert "unfinished" not in run_memory("--db", db, "status").stdout


def test_a_purge_whose_rewrite_fills_the_disk_says_it_is_recorded(tmp_path):
    from support import small_disk
    with small_disk(tmp_path / "small", "8m") as small:
        vault, db = tmp_path / "vault", small / "m.db"
        vault.mkdir()
        # A database of about 2 MB, too large to be rewritten in the room left below: a
        # few long notes rather than many short ones, since the model reads only the first
        # 2,000 characters of each (MAX_PASSAGE_CHARS). With the model on (the hostile
        # pass) the first sync embeds 21 passages; 201 short notes took minutes.
        for i in range(20):
            (vault / f"n{i}.md").write_text(f"# N{i}\n\n" + f"words of note {i} " * 4000 + "\n")
        (vault / "keys.md").write_text(f"# Keys\n\nthe key {SECRET}\n")
        assert run_memory("--db", db, "sync", vault, timeout=600).returncode == 0
        (vault / "keys.md").unlink()
        assert run_memory("--db", db, "sync", vault, timeout=600).returncode == 0
        free = os.statvfs(small)
        # room for the purge's transaction (measured), not for the rewrite of the file
        (small / "filler").write_bytes(b"x" * (free.f_bavail * free.f_frsize - 1_000_000))
        p = run_memory("--db", db, "purge", "--matching", SECRET, "--yes")
        assert p.returncode == 2, p.stdout + p.stderr
        assert "nothing was written" not in p.stderr, p.stderr
        assert "is recorded" in p.stderr and "unfinished" in p.stderr
        assert "'memory purge --resume'" in p.stderr and "free space" in p.stderr
        (small / "filler").unlink()
        p = run_memory("--db", db, "purge", "--resume")
        assert p.returncode == 0 and "Finished purge 1" in p.stdout, p.stdout + p.stderr
        assert SECRET.encode() not in every_byte(small)


def test_a_text_in_another_namespace_is_named_when_nothing_here_matches(db):
    """Erasing a leaked key: "Nothing to purge" in 'notes' alone, exit 0, reassured
    someone whose key was remembered in another namespace; it names where it is."""
    with MemoryStore.open(db, embedder="none") as store:
        store.remember("sym", f"the staging key {SECRET}", namespace="personal")
        report = store.purge(namespace="notes", matching=SECRET, dry_run=True)
        assert report.revision_ids == [] and report.elsewhere == ["personal"]
        assert store.purge(namespace="personal", matching=SECRET,
                           dry_run=True).elsewhere == []
    p = run_memory("--db", db, "purge", "--matching", SECRET, "--yes")
    assert p.returncode == 0 and "namespace 'personal' holds some (give --namespace)" \
        in p.stdout, p.stdout
