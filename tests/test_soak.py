"""The soak test, 30 seconds of it: real daemon and MCP server processes, editors' save
patterns, renames and kill -9, compared at the end with a fresh sync of the folder."""

import soak


def test_a_30_second_soak_matches_the_oracle(tmp_path):
    result = soak.run(30, seed=3, notes=200, kill_every=13, workdir=tmp_path, embedder="none")
    assert result["operations"] > 100 and result["daemon_kills"] >= 1
    assert result["reader_searches"] > 100 and result["reader_errors"] == 0, result
    assert result["differences"] == 0, result["difference_samples"]
    assert result["integrity"] == "ok"
