"""Chapter 6's readings: which of the TILDE paper's findings hold at book scale, written from the measured numbers.

The sentences are chosen by comparisons of the run's own numbers (never typed into the prose): TILDE-QL
against BM25 and against BM25's candidates in random order (Table 2), the ablation's gains (Table 3),
the latency against the 1 ms target and the index size (§5.2), and how much fine-tuning changed the
passage dependence of ``log P(t|d)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from lib.chapters.tilde_tables import table2_value
from lib.training.tilde_variants import MAIN_VARIANT, VARIANTS

#: How far above the random order TILDE-QL must be to count as "above" it (nDCG@10).
RANDOM_MARGIN = 0.02
#: The query latency the TILDE paper aims at for re-ranking (ms).
LATENCY_TARGET_MS = 1.0
#: The share of tied candidates a float16 index should stay under.
TIED_TARGET = 0.05
#: Table 2's row of BM25 re-ranked by TILDEv2.
V2_SYSTEM = "BM25 + TILDEv2"


def spread_reading(spread_start: float, spread_main: float) -> str:
    """What fine-tuning did to the passage dependence (a tenth of the starting BERT's or less: removed)."""
    if spread_main < spread_start / 10:
        return (
            "Fine-tuning has all but removed the passage from the prediction: the loss falls fastest by"
            " learning how often each piece occurs in general, one distribution for every input."
        )
    return "Fine-tuning has kept the predictions dependent on the passage."


def _significantly_above_random(against_random: pd.DataFrame | None, test_set: str, ql: float, rnd: float) -> bool:
    """Whether TILDE-QL beats the random order significantly on ``test_set`` (``tilde_comparisons.versus_random``)."""
    if against_random is None or against_random.empty:
        return False
    row = against_random[(against_random["set"] == test_set.upper()) & (against_random["system"] == "BM25 + TILDE-QL")]
    return bool(len(row) and row["significant"].iloc[0] and ql > rnd)


def _table2_bullet(table2: pd.DataFrame, test_set: str, against_random: pd.DataFrame | None) -> str:
    ql, qdl = table2_value(table2, "BM25 + TILDE-QL", test_set), table2_value(table2, "BM25 + TILDE-QDL", test_set)
    bm, rnd = table2_value(table2, "BM25", test_set), table2_value(table2, "BM25 in random order", test_set)
    significant = _significantly_above_random(against_random, test_set, ql, rnd)
    if ql > bm:
        verdict = "above BM25, as in the paper"
    elif significant:
        verdict = "below BM25 but significantly above a random order of its candidates"
    elif ql > rnd + RANDOM_MARGIN:
        verdict = "below BM25, above a random order of its candidates but not significantly"
    else:
        verdict = "no better than a random order of BM25's candidates"
    text = (
        f"- **{test_set.upper()}**: BM25 + TILDE-QL reaches nDCG@10 {ql:.3f} against BM25's {bm:.3f} and "
        f"{rnd:.3f} for BM25's candidates in random order: {verdict}. TILDE-QDL (α = 0.5): {qdl:.3f}, "
        f"{'above' if qdl > ql else 'not above'} TILDE-QL (the paper: QDL slightly above QL, not significantly)."
    )
    if V2_SYSTEM in table2.index:
        v2 = table2_value(table2, V2_SYSTEM, test_set)
        significant = table2.loc[V2_SYSTEM].get((test_set.upper(), "nDCG@10 †")) is True
        if v2 > bm:
            relation = "significantly above BM25" if significant else "above BM25, not significantly"
        else:
            relation = "significantly below BM25" if significant else "not above BM25"
        text += f" TILDEv2 (no expansion) reaches {v2:.3f}: {relation}."
    return text


def _ablation_bullet(ablation: pd.DataFrame, test_set: str) -> str:
    table = ablation.set_index(["loss", "scoring"])["nDCG@10"]
    ql, ql_full, main = (VARIANTS[name].label for name in ("ql", "ql-full", MAIN_VARIANT))
    parts = []
    if (ql, "TILDE-QL") in table and (ql_full, "TILDE-QL") in table:
        cleaned_gain = table[(ql, "TILDE-QL")] - table[(ql_full, "TILDE-QL")]
        parts.append(f"cleaning the vocabulary changes L_QL's TILDE-QL by {cleaned_gain:+.3f}")
    if (ql, "TILDE-QL") in table:
        bi_gain = table[(main, "TILDE-QL")] - table[(ql, "TILDE-QL")]
        parts.append(f"BiQDL instead of L_QL changes TILDE-QL by {bi_gain:+.3f} (paper: +0.005 MRR@10)")
    significant = int(ablation["significant nDCG@10"].sum())
    parts.append(f"{significant} of the other rows differ significantly from BiQDL / TILDE-QDL")
    return f"- **Ablation, {test_set.upper()}**: " + "; ".join(parts) + "."


def reading(
    table2: pd.DataFrame,
    test_sets: Sequence[str],
    ablations: Mapping[str, pd.DataFrame],
    candidates: int,
    ql_latency_ms: float,
    sizes: pd.DataFrame,
    tied_share: float,
    against_random: pd.DataFrame | None = None,
) -> str:
    """The chapter's closing reading as Markdown bullets: Table 2 per test set, the ablation per ablation set
    (``ablations``: :func:`lib.experiments.tilde_comparisons.ablation` tables), TILDE-QL's latency for ``candidates``,
    the float16 index's ``tied_share`` of candidates, the index ``sizes``, and ``against_random``
    (:func:`lib.experiments.tilde_comparisons.versus_random`: whether TILDE-QL's gain over the random order is
    significant)."""
    bullets = [_table2_bullet(table2, test_set, against_random) for test_set in test_sets]
    bullets += [_ablation_bullet(table, test_set) for test_set, table in ablations.items()]
    within = "within" if ql_latency_ms <= LATENCY_TARGET_MS else "above"
    bullets.append(
        f"- **Latency**: TILDE-QL re-ranks {candidates:,} candidates in {ql_latency_ms:.2f} ms on one core "
        f"({within} the 1 ms target); this holds whatever the model learned, "
        "since query time is only a tokenizer and a gather."
    )
    ties = "under" if tied_share < TIED_TARGET else "above"
    bullets.append(
        f"- **float16**: the rankings come from the float16 index as stored; {100 * tied_share:.1f}% of the "
        f"candidates share their TILDE-QL score with another of the same query ({ties} 5%)."
    )
    sizes_text = "; ".join(
        f"{label}: {row['bytes per passage']:,.0f} bytes per passage, about "
        f"{row['GB, MS MARCO passage (8.8M)']:,.1f} GB for MS MARCO's 8.8M passages"
        for label, row in sizes.iterrows()
    )
    bullets.append(f"- **Index** (float16, as the papers): {sizes_text}.")
    return "\n".join(bullets)
