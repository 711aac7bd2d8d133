"""Chapter 8's verdicts on the lecture's claims (``lib.chapters.slide_claims``): orders read from paired tests."""

from __future__ import annotations

import pandas as pd
import pytest

from lib.chapters import slide_claims
from lib.evaluation.comparison import compare_per_query

QIDS = [f"q{i}" for i in range(8)]
REFERENCE = [0.6, 0.7, 0.5, 0.8, 0.6, 0.7, 0.65, 0.55]


def _frame(**systems: list[float]) -> pd.DataFrame:
    values = {"reference": REFERENCE, **systems}
    return compare_per_query(
        {name: pd.DataFrame({"nDCG@10": column}, index=QIDS) for name, column in values.items()}, baseline="reference"
    )


LOW = [value - 0.3 + 0.01 * i for i, value in enumerate(REFERENCE)]  # below on every query
HIGH = [value + 0.2 + 0.01 * i for i, value in enumerate(REFERENCE)]  # above on every query
SAME = [value + (0.01 if i % 2 else -0.01) for i, value in enumerate(REFERENCE)]  # no systematic difference


def test_the_order_is_read_from_the_sign_only_where_the_test_is_significant() -> None:
    frames = {"dl19": _frame(model=LOW), "dl20": _frame(model=HIGH), "dl21": _frame(model=SAME)}
    orders = slide_claims.year_orders(frames, "model")
    assert [order.order for order in orders] == ["below", "above", "not different"]
    assert orders[0].reference == pytest.approx(sum(REFERENCE) / len(REFERENCE))
    assert orders[0].mean < orders[0].reference and orders[0].p < 0.05
    assert orders[2].p > 0.05


@pytest.mark.parametrize(
    ("columns", "expected", "verdict"),
    [
        ((LOW, LOW), "below", "holds"),
        ((LOW, SAME), "below", "holds on DL19 only"),
        ((SAME, SAME), "below", "is not shown"),
        ((LOW, HIGH), "below", "does not hold: significantly above on DL20"),
        ((SAME, SAME), "same", "holds as far as the test years can tell"),
        ((SAME, LOW), "same", "does not hold: significantly below on DL20"),
        ((HIGH, HIGH), "above", "holds"),
    ],
)
def test_a_claim_holds_only_where_every_year_shows_its_order(columns, expected, verdict) -> None:
    frames = {"dl19": _frame(model=columns[0]), "dl20": _frame(model=columns[1])}
    assert slide_claims.verdict(slide_claims.year_orders(frames, "model"), expected).startswith(verdict)


def test_the_claim_sentence_gives_every_years_numbers_and_the_verdict() -> None:
    frames = {"dl19": _frame(model=LOW), "dl20": _frame(model=SAME)}
    sentence = slide_claims.claim_sentence(
        "27", "TK is a bit less effective than BERT-cat", "TK-2", "BERT-cat",
        slide_claims.year_orders(frames, "model"), "below",
    )  # fmt: skip
    assert sentence.startswith("**Slide 27: TK is a bit less effective than BERT-cat.**")
    assert "DL19" in sentence and "significantly below" in sentence and "not significantly different" in sentence
    assert sentence.endswith("The claim holds on DL19 only (elsewhere the difference is not significant).")


def test_a_comparison_without_a_baseline_or_without_the_model_is_refused() -> None:
    with pytest.raises(ValueError, match="dl19: the comparison has no baseline"):
        slide_claims.year_orders(
            {"dl19": compare_per_query({"a": pd.DataFrame({"nDCG@10": [0.1, 0.2]}, index=["x", "y"])})}, "a"
        )
    with pytest.raises(KeyError, match="'colbert' is not among"):
        slide_claims.year_orders({"dl19": _frame(model=LOW)}, "colbert")


@pytest.mark.parametrize(
    ("removed", "claimed"),
    [
        (0.0, "is not shown: it removes 0% of the words, less than the slide's 20%"),
        (0.3, "holds as far as the test years can tell"),
        (0.55, "holds as far as the test years can tell: no year's difference is significant, at 55% of the words"),
        (1.0, "does not hold: it removes 100% of the words, so every passage scores alike"),
    ],
)
def test_slide_32_needs_words_removed_as_well_as_no_loss(removed: float, claimed: str) -> None:
    orders = slide_claims.year_orders({"dl19": _frame(model=SAME)}, "model")
    sentence = slide_claims.removal_sentence("TK-Sparse", "TK-2", orders, removed)
    assert f"The claim {claimed}" in sentence and f"TK-Sparse removes {removed:.0%}" in sentence


def test_slide_32_with_a_loss_does_not_hold() -> None:
    orders = slide_claims.year_orders({"dl19": _frame(model=LOW)}, "model")
    sentence = slide_claims.removal_sentence("TK-Sparse", "TK-2", orders, 0.3)
    assert sentence.endswith("The claim does not hold: significantly below on DL19.")
