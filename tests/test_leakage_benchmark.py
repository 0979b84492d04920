import json
import subprocess
import sys

import temporal_leakage
from support import ROOT


def test_small_leakage_run_shows_no_leak_for_this_store():
    result = temporal_leakage.run(memories=60, queries=60, seed=3)
    table = {row["approach"]: row for row in result["table"]}
    assert table["this_store"]["top5_differs_pct"] == 0.0
    assert result["this_store_bm25_score_mismatches"] == 0
    assert result["this_store_hybrid_order_differs"] == 0
    assert table["latest_only"]["top5_differs_pct"] > 0
    assert temporal_leakage.run(memories=60, queries=60, seed=3) == result  # deterministic


def test_the_benchmark_script_runs_and_saves_its_result(tmp_path):
    out = tmp_path / "leakage.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "temporal_leakage.py"),
                           "--memories", "40", "--queries", "30", "--seed", "5",
                           "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    saved = json.loads(out.read_text())
    table = {row["approach"]: row for row in saved["table"]}
    assert table["this_store"]["top5_differs_pct"] == 0.0
    assert saved["this_store_bm25_score_mismatches"] == 0
    assert saved == temporal_leakage.run(memories=40, queries=30, seed=5)
    assert "personal-memory: visibility first, then rank | 0.0%" in done.stdout
