"""Chapter 8's verdicts on the lecture's tested claims: a claim is an expected order between a model and a reference.

Lecture 8 states orders between models: BERT-cat far above BM25 (slide 11), ColBERT and PreTTR about as effective as
BERT-cat and TK a bit below it (slide 27), a stopword list removed before TK lowering its effectiveness (slide 31),
TK-Sparse removing words without a loss (slide 32). The book reads each as an expected order on every test year and
checks it against a paired test (:func:`lib.evaluation.comparison.compare`'s frame, the reference its baseline):

- :func:`year_orders` — per test year, the model's and the reference's mean, the corrected p and the order the test
  supports: ``"above"`` / ``"below"`` (significant, read from the sign) or ``"not different"``;
- :func:`verdict` — whether the expected order (``"above"``, ``"below"`` or ``"same"``) holds on every year, on some,
  is not shown (right sign, never significant) or does not hold;
- :func:`claim_sentence` — the claim, the numbers of every year and the verdict in one sentence;
  :func:`removal_sentence` — slide 32's claim, which also needs the gate to remove a share of the words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import pandas as pd

Expected = Literal["above", "below", "same"]


@dataclass(frozen=True)
class YearOrder:
    """One test year's paired test of a model against the reference."""

    year: str
    mean: float
    reference: float
    p: float
    order: str  # "above" | "below" | "not different"


def year_orders(frames: Mapping[str, pd.DataFrame], name: str, measure: str = "nDCG@10") -> list[YearOrder]:
    """Per test year (``frames``: year → :func:`lib.evaluation.comparison.compare`'s frame with a baseline), the
    model ``name`` against the baseline on ``measure`` over the queries they share: its order is "above" or
    "below" only where the corrected test is significant, read from the sign of the mean difference."""
    orders = []
    for year, frame in frames.items():
        baseline, correction = frame.attrs.get("baseline"), frame.attrs.get("correction")
        if baseline is None:
            raise ValueError(f"{year}: the comparison has no baseline, so it holds no test")
        if name not in frame.index:
            raise KeyError(f"{year}: {name!r} is not among the compared systems {list(frame.index)}")
        delta = float(frame.loc[name, f"{measure} delta"])
        significant = bool(frame.loc[name, f"{measure} significant"])
        orders.append(
            YearOrder(
                year=year,
                mean=float(frame.loc[name, f"{measure} tested mean"]),
                reference=float(frame.loc[baseline, f"{measure} tested mean"]),
                p=float(frame.loc[name, f"{measure} p_{correction}"]),
                order=("above" if delta > 0 else "below") if significant else "not different",
            )
        )
    return orders


def verdict(orders: Sequence[YearOrder], expected: Expected) -> str:
    """Whether the ``expected`` order holds over the years of ``orders``: "holds" on every year; "holds on <years>
    only" where the others are not significant; "is not shown" where no year is significant (for "above" / "below":
    the sign alone proves nothing); "does not hold" where a year shows another order."""
    if expected == "same":
        differ = [o for o in orders if o.order != "not different"]
        if not differ:
            return "holds as far as the test years can tell: no year's difference is significant"
        return "does not hold: " + ", ".join(f"significantly {o.order} on {o.year.upper()}" for o in differ)
    opposite = [o for o in orders if o.order not in (expected, "not different")]
    if opposite:
        return "does not hold: " + ", ".join(f"significantly {o.order} on {o.year.upper()}" for o in opposite)
    shown = [o.year.upper() for o in orders if o.order == expected]
    if len(shown) == len(orders):
        return "holds"
    if shown:
        return f"holds on {' and '.join(shown)} only (elsewhere the difference is not significant)"
    return "is not shown: no year's difference is significant"


def _years(orders: Sequence[YearOrder]) -> str:
    """Every year's numbers: the model's mean against the reference's, the share of it, the test's order and p."""
    return "; ".join(
        f"{o.year.upper()} {o.mean:.3f} against {o.reference:.3f} ({o.mean / o.reference:.0%} of it, "
        f"{'not significantly different' if o.order == 'not different' else 'significantly ' + o.order}, "
        f"p = {o.p:.3f})"
        for o in orders
    )


def claim_sentence(
    slide: str, claim: str, label: str, reference: str, orders: Sequence[YearOrder], expected: Expected
) -> str:
    """``Slide <slide>: <claim>.`` followed by every year's numbers (the model's ``label``, the ``reference``'s
    label, the share of it, the corrected p) and the :func:`verdict`."""
    claimed = verdict(orders, expected)
    return (
        f"**Slide {slide}: {claim}.** Here {label} against {reference}, nDCG@10: {_years(orders)}. The claim {claimed}."
    )


def removal_sentence(
    label: str, reference: str, orders: Sequence[YearOrder], removed: float, band: tuple[float, float] = (0.2, 0.4)
) -> str:
    """Slide 32's claim — a gate removes ``band`` (20–40 %) of the passage words without losing effectiveness — for a
    gated model (``label``) that removes the share ``removed`` of the words, against the ``reference`` that removes
    none: it holds only where the model removes at least the band's lower end and no year shows a significant
    difference (:func:`verdict` with "same"); a model that removes less shows nothing, one that removes (nearly)
    everything scores every passage alike."""
    low, high = band
    if removed < low:
        claimed = f"is not shown: it removes {removed:.0%} of the words, less than the slide's {low:.0%}"
    elif removed >= 0.99:
        claimed = f"does not hold: it removes {removed:.0%} of the words, so every passage scores alike"
    else:
        claimed = verdict(orders, "same")
        if removed > high:
            claimed += f", at {removed:.0%} of the words removed, more than the slide's {high:.0%}"
    return (
        f"**Slide 32: a learned gate removes {low:.0%}–{high:.0%} of the words without losing effectiveness.** Here "
        f"{label} removes {removed:.0%} of the validation passages' words; against {reference}, nDCG@10: "
        f"{_years(orders)}. The claim {claimed}."
    )


__all__ = ["Expected", "YearOrder", "claim_sentence", "removal_sentence", "verdict", "year_orders"]
