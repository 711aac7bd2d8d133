"""Chapter 7's TREC runs (``lib.chapters.trec_runs``): what each run is, the verdicts."""

from __future__ import annotations

import pandas as pd

from lib.chapters.trec_runs import run_descriptions, verdicts
from lib.experiments.tuw19_runs import GLOVE_RUN, RUN_TAGS


def test_verdicts_follow_the_numbers() -> None:
    table = pd.DataFrame(
        [{"set": "dl19", "run": run, "nDCG@10": value} for run, value in (("p1", 0.50), ("p2", 0.49), ("p3", 0.52))]
    )
    tests = pd.DataFrame(
        [
            {"set": "dl19", "run": "p1", "against": "p2", "p_bonferroni": 0.8, "significant": False},
            {"set": "dl19", "run": "p1", "against": "p3", "p_bonferroni": 0.4, "significant": False},
        ]
    )
    lines = verdicts(table, tests, {"dl19": {"p": 0.6}})
    assert lines[0].startswith("**GloVe ≈ fastText: holds.**")
    assert lines[1].startswith("**The ensemble helps a little: holds.**") and "+0.020 on DL19" in lines[1]
    assert lines[2].startswith("**No clear query type separates best from worst: holds.**")
    table.loc[2, "nDCG@10"] = 0.4998  # a change below 0.0005 shows no sign
    assert "-0.000" not in verdicts(table, tests, {"dl19": {"p": 0.6}})[1]
    tests.loc[0, ["p_bonferroni", "significant"]] = [0.01, True]
    table.loc[2, "nDCG@10"] = 0.45
    lines = verdicts(table, tests, {"dl19": {"p": 0.001}})
    assert "does not hold" in lines[0] and "does not hold" in lines[1] and "does not hold" in lines[2]


def test_the_glove_claim_compares_p2_with_the_glove_run_when_p1_is_another_tk() -> None:
    table = pd.DataFrame(
        [
            {"set": "dl19", "run": run, "nDCG@10": value}
            for run, value in (("p1", 0.60), (GLOVE_RUN, 0.48), ("p2", 0.47), ("p3", 0.61))
        ]
    )
    tests = pd.DataFrame(
        [
            {"set": "dl19", "run": "p1", "against": "p2", "p_bonferroni": 0.001, "significant": True},
            {"set": "dl19", "run": "p1", "against": "p3", "p_bonferroni": 0.9, "significant": False},
            {"set": "dl19", "run": "p2", "against": GLOVE_RUN, "p_bonferroni": 0.9, "significant": False},
        ]
    )
    lines = verdicts(table, tests, {"dl19": {"p": 0.6}}, glove_run=GLOVE_RUN)
    assert lines[0].startswith("**GloVe ≈ fastText: holds.**") and "0.480 vs 0.470" in lines[0]
    assert f"of {GLOVE_RUN} against p2" in lines[0]
    assert "does not hold" in verdicts(table, tests, {"dl19": {"p": 0.6}})[0]  # p1 against p2 differs


def test_run_descriptions_name_the_tk_of_p1_and_p3() -> None:
    described = run_descriptions("TK-2 (pieces)")
    assert set(described) == set(RUN_TAGS)
    assert "TK-2 (pieces)" in described["p1"] and "TK-2 (pieces)" in described["p3"]
    assert "fastText" in described["p2"] and "pieces" not in described["p2"]
