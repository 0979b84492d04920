"""Upgrading a database written by the previous note model (numbered paragraph chunks,
schema 3): the first sync re-identifies every note once, and no answer at a cutoff before
the upgrade changes. The fixture was written by that version (see its make.py); its
ranking fused a hashed vector that this version replaced, so its answers are compared by
what they share with this version's: the visible revisions and their BM25."""

import json
import logging
import shutil
from pathlib import Path

from personal_memory import MemoryStore
from personal_memory.notes.folders import Folder
from support import ids

FIXTURE = Path(__file__).parent / "fixtures" / "legacy-v3"
OLD_KEYS = ("revision_id", "namespace", "memory_id", "known_at", "valid_from", "valid_to",
            "deleted", "hides_revision", "title", "content", "source", "provenance",
            "content_hash")


def old_shape(records) -> list[dict]:
    return [{k: d[k] for k in OLD_KEYS + ("score", "bm25", "bm25_rank", "cosine",
                                          "cosine_rank") if k in d}
            for d in (r.to_dict() for r in records)]


def answers_now(store, expected):
    searches = [{"as_of": s["as_of"], "query": s["query"],
                 "results": old_shape(store.search(s["query"], namespace="notes",
                                                   as_of=s["as_of"], limit=100))}
                for s in expected["searches"]]
    histories = {m: old_shape(store.history(m, namespace="notes", as_of="2024-12-31"))
                 for m in expected["histories"]}
    return searches, histories


def test_the_old_model_is_reidentified_once_and_past_answers_stay(tmp_path, caplog):
    shutil.copy(FIXTURE / "memory.db", tmp_path / "memory.db")
    shutil.copytree(FIXTURE / "vault", tmp_path / "vault")
    db, vault = tmp_path / "memory.db", tmp_path / "vault"
    expected = json.loads((FIXTURE / "answers.json").read_text())
    old_histories = {m: [{k: h[k] for k in OLD_KEYS} for h in hist]
                     for m, hist in expected["histories"].items()}
    # Read by this version before any upgrade (a reader cannot migrate).
    with MemoryStore.open(db, read_only=True, vector_backend="python") as ro:
        assert ro.health().schema_version == 3
        want = answers_now(ro, expected)
        assert want[1] == old_histories
        for old, new in zip(expected["searches"], want[0]):
            # every keyword match the old version returned, with the same revision and BM25
            found = keyword_part(new["results"])
            for key, row in keyword_part(old_shape_dicts(old)).items():
                assert found.get(key) == row, (old["query"], old["as_of"], key)
        assert ro.status().daemon.notes_to_reidentify == 2
    with caplog.at_level(logging.INFO, logger="personal_memory.sync"):
        with MemoryStore.open(db, vector_backend="python") as rw:
            report = rw.sync([Folder.of(vault, "notes")])
            assert report.files_reidentified == 2 and report.chunks_tombstoned == 2
            assert rw.status().daemon.notes_to_reidentify == 0
            again = rw.sync([Folder.of(vault, "notes")])
            assert again.files_imported == 0 and not again.changed  # once only
            assert answers_now(rw, expected) == want
            for s in expected["searches"]:
                assert old_shape(rw.search_reference(s["query"], namespace="notes",
                                                     as_of=s["as_of"])) == \
                    old_shape(rw.search(s["query"], namespace="notes", as_of=s["as_of"]))
            # Now the new identities answer.
            assert ids(rw.search("aphids", namespace="notes")) == [
                "notes/garden.md#Garden#Pests"]
            assert rw.get("notes/garden.md#1", namespace="notes") is None
            # A note read at a cutoff before the upgrade comes from the old chunks.
            old = rw.read("notes/garden.md", namespace="notes", as_of="2024-02-16")
            assert old.model == "numbered chunks" and "Aphids on the basil" in old.text
            gone = rw.read("notes/trips/lisbon.md", namespace="notes", as_of="2024-12-31")
            assert gone.deleted and gone.known_at == "2024-03-20T00:00:00Z"
            new = rw.read("notes/garden.md", namespace="notes")
            assert new.model == "sections"
            assert new.text == (vault / "garden.md").read_text()
    lines = [r.getMessage() for r in caplog.records if "re-identifying" in r.getMessage()]
    assert len(lines) == 1 and "2 notes" in lines[0]


def old_shape_dicts(search: dict) -> list[dict]:
    return [{k: d[k] for k in OLD_KEYS + ("score", "bm25", "bm25_rank", "cosine",
                                          "cosine_rank")} for d in search["results"]]


def keyword_part(results: list[dict]) -> dict[str, dict]:
    """The results with a keyword match: revision fields, BM25 and its rank."""
    return {d["memory_id"]: {k: d[k] for k in OLD_KEYS + ("bm25", "bm25_rank")}
            for d in results if d["bm25"] is not None}
