import json

import temporal_leakage
from conftest import ROOT


def test_small_leakage_run_shows_no_leak_for_this_store():
    result = temporal_leakage.run(memories=60, queries=60, seed=3)
    table = {row["approach"]: row for row in result["table"]}
    assert table["this_store"]["top5_differs_pct"] == 0.0
    assert result["this_store_bm25_score_mismatches"] == 0
    assert result["this_store_hybrid_order_differs"] == 0
    assert table["latest_only"]["top5_differs_pct"] > 0
    assert temporal_leakage.run(memories=60, queries=60, seed=3) == result  # deterministic


def test_saved_results_show_zero_for_this_store():
    saved = json.loads((ROOT / "benchmarks" / "results" / "temporal_leakage.json").read_text())
    table = {row["approach"]: row for row in saved["table"]}
    assert table["this_store"]["top5_differs_pct"] == 0.0
    assert saved["this_store_bm25_score_mismatches"] == 0
