"""The LoCoMo benchmark script runs on one conversation and its numbers are sane."""

import pytest

import locomo
from support import ROOT

DATA = ROOT.parent / "shared" / "data" / "locomo" / "30.json"


@pytest.mark.skipif(not DATA.exists(), reason="the LoCoMo data lies in ../shared/data, "
                    "beside the project (never in it)")
def test_locomo_runs_on_one_conversation():
    result = locomo.run([str(DATA)])
    assert result["turns"] > 100 and result["questions_with_evidence"] > 50
    for method in ("shipped", "semantic", "bm25", "bm25_porter"):
        overall = result["methods"][method]["overall"]
        assert 0 < overall["R@5"] <= overall["R@10"] <= 1
        assert overall["Hit@5"] >= overall["R@5"]
        assert 0 < overall["MRR@10"] <= 1
    per_question = result["shipped_results_per_question"]
    assert 0 < per_question["returned"] <= 10
    assert per_question["unrelated_returned"] == 0  # never padded with noise
    no_answer = result["no_answer"]
    assert no_answer["made_up_searches"] == 40 and no_answer["best_similarity_real_questions"]


def test_evidence_ids_are_mended():
    item = {"evidence": ["D8:6; D9:17", "D:11:26", "D30:05", "D8:6"]}
    assert locomo.evidence_ids(item) == ["D8:6", "D9:17", "D11:26", "D30:5"]
