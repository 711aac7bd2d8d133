"""Chapter 6's readings (``lib.chapters.tilde_reading``): the sentence follows the measured numbers."""

from __future__ import annotations

import pandas as pd
import pytest

from lib.chapters.tilde_reading import reading, spread_reading
from lib.chapters.tilde_tables import index_size
from lib.training.tilde_variants import VARIANTS

SIZES = index_size({"TILDE": 61_150.0, "TILDEv2": 190.0}, 4_000)


def _table2(ql: float, qdl: float, bm25: float, random: float) -> pd.DataFrame:
    rows = {"BM25 + TILDE-QL": ql, "BM25 + TILDE-QDL": qdl, "BM25": bm25, "BM25 in random order": random}
    table = pd.DataFrame({("DL19", "nDCG@10"): rows})
    table.columns = pd.MultiIndex.from_tuples(table.columns)
    return table


@pytest.mark.parametrize(
    ("ql", "verdict"),
    [
        (0.6, "above BM25, as in the paper"),
        (0.45, "below BM25, above a random order of its candidates but not significantly"),
        (0.41, "no better than a random order of BM25's candidates"),
    ],
)
def test_the_table2_verdict_compares_ql_with_bm25_and_the_random_order(ql: float, verdict: str) -> None:
    text = reading(_table2(ql, 0.3, 0.5, 0.4), ["dl19"], {}, 1000, 0.5, SIZES, 0.01)
    assert f"nDCG@10 {ql:.3f} against BM25's 0.500 and 0.400" in text and verdict in text
    assert "0.300, not above TILDE-QL" in text


def test_latency_index_and_ablation_bullets() -> None:
    labels = {name: VARIANTS[name].label for name in ("biqdl", "ql", "ql-full")}
    ablation = pd.DataFrame(
        {
            "loss": [labels["biqdl"], labels["ql"], labels["ql-full"]],
            "scoring": ["TILDE-QL"] * 3,
            "nDCG@10": [0.5, 0.4, 0.45],
            "significant nDCG@10": [False, True, False],
        }
    )
    text = reading(_table2(0.6, 0.7, 0.5, 0.4), ["dl19"], {"dl19": ablation}, 1000, 1.5, SIZES, 0.2)
    assert "cleaning the vocabulary changes L_QL's TILDE-QL by -0.050" in text
    assert "BiQDL instead of L_QL changes TILDE-QL by +0.100" in text
    assert "1 of the other rows differ significantly" in text
    assert "1,000 candidates in 1.50 ms on one core (above the 1 ms target)" in text
    assert "TILDE: 61,150 bytes per passage, about 540.7 GB" in text and "TILDEv2: 190 bytes per passage" in text
    assert "20.0% of the candidates share their TILDE-QL score" in text and "(above 5%)" in text
    assert len(text.splitlines()) == 5


def test_the_tilde_v2_sentence_says_whether_it_beats_bm25() -> None:
    table = _table2(0.6, 0.7, 0.5, 0.4)
    table.loc["BM25 + TILDEv2", ("DL19", "nDCG@10")] = 0.58
    table[("DL19", "nDCG@10 †")] = [None, None, None, None, True]
    assert "TILDEv2 (no expansion) reaches 0.580: significantly above BM25." in reading(
        table, ["dl19"], {}, 1000, 0.5, SIZES, 0.0
    )
    table[("DL19", "nDCG@10 †")] = [None] * 5
    assert "above BM25, not significantly" in reading(table, ["dl19"], {}, 1000, 0.5, SIZES, 0.0)


def test_spread_reading_says_removed_below_a_tenth() -> None:
    assert spread_reading(1.0, 0.05).startswith("Fine-tuning has all but removed the passage")
    assert spread_reading(1.0, 0.5) == "Fine-tuning has kept the predictions dependent on the passage."


def test_a_significant_gain_over_the_random_order_is_named_as_such() -> None:
    tests = pd.DataFrame([{"set": "DL19", "system": "BM25 + TILDE-QL", "significant": True}])
    text = reading(_table2(0.45, 0.3, 0.5, 0.4), ["dl19"], {}, 1000, 0.5, SIZES, 0.01, tests)
    assert "below BM25 but significantly above a random order of its candidates" in text
    worse = reading(_table2(0.35, 0.3, 0.5, 0.4), ["dl19"], {}, 1000, 0.5, SIZES, 0.01, tests)
    assert "no better than a random order" in worse  # a significant *loss* is not a gain
