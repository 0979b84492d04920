"""The benchmark scripts of the model's speed run end to end on tiny inputs (their real
figures come from real vaults: README and docs/operations.md), so they cannot rot."""

import json
import subprocess
import sys

from support import ROOT

BENCH = ROOT / "benchmarks"


def test_the_embedding_benchmark_measures_every_bucket_and_setting(tmp_path):
    out = tmp_path / "embedding.json"
    done = subprocess.run([sys.executable, str(BENCH / "embedding.py"), "--per-bucket", "1",
                           "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["source"] == "generated" and len(result["runs"]) == 4
    for groups in result["runs"].values():
        assert set(groups) == {"1-64 tokens", "65-128 tokens", "129-256 tokens",
                               "257-512 tokens"}
        assert all(g["passages"] == 1 and g["tokens_per_s"] > 0 for g in groups.values())


def test_the_vault_benchmark_times_a_first_sync_and_an_embedding_sample(tmp_path):
    vault = tmp_path / "help"
    for lang, word in (("en", "lighthouse"), ("fr", "phare")):
        (vault / lang).mkdir(parents=True)
        for i in range(3):
            (vault / lang / f"n{i}.md").write_text(f"# Note {i}\n\nthe {word} {i}\n\n"
                                                   f"## More\n\nsecond part {i}\n")
    out = tmp_path / "sync.json"
    out.write_text(json.dumps({"kept": True}))
    done = subprocess.run([sys.executable, str(BENCH / "sync.py"), "--only", "vault",
                           "--vault", str(vault), "--sample-seconds", "2", "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["kept"] is True  # --only keeps the other parts
    english, everything = (result["vault_first_sync"][k] for k in ("english",
                                                                   "all_languages"))
    assert english["files"] == 3 and english["embedded"] == english["sections"] > 0
    assert 0 < english["searchable_by_words_s"] <= english["fully_embedded_s"]
    assert everything["files"] == 6 and everything["sections"] == 2 * english["sections"]
    assert everything["sample_embedded"] + everything["remaining"] == everything["sections"]
