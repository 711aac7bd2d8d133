"""Chapter 6's result tables as shown: Table 2 and the ablation (TILDE paper Table 3) with † marks, index size (§3.2).

- :func:`training_data_table` and :func:`loss_curves` — what the models learn from, and how.
- :func:`marked_table2` and :func:`marked_ablation` — :func:`lib.experiments.tilde_comparisons.effectiveness_table`
  and :func:`lib.experiments.tilde_comparisons.ablation` as shown: the values with a † where significant;
  :func:`table2_value` reads one mean of Table 2.
- :func:`index_size` — bytes per passage (TILDE's and TILDEv2's) and what they make for a whole collection.

The tests behind the marks are in :mod:`lib.experiments.tilde_comparisons`, the α sweep (Figure 2) and storage
precision in :mod:`lib.experiments.tilde_scorings`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd

from lib.training.tilde import TildeTrainingData, TildeTrainingResult
from lib.training.tilde_variants import VARIANTS

#: MS MARCO passage v1's size: what the index would hold for the full collection.
MS_MARCO_PASSAGES = 8_841_823


def index_size(bytes_per_passage: Mapping[str, float], passages: int) -> pd.DataFrame:
    """Per model (``{label: bytes per passage}``): bytes per passage, and gigabytes for the book's indexed
    ``passages`` and for all of MS MARCO passage (8.8M)."""
    if passages < 0 or any(value < 0 for value in bytes_per_passage.values()):
        raise ValueError("the passage count and bytes per passage must not be negative")
    return pd.DataFrame(
        [
            {
                "model": label,
                "bytes per passage": value,
                "GB, the book's index": passages * value / 1e9,
                "GB, MS MARCO passage (8.8M)": MS_MARCO_PASSAGES * value / 1e9,
            }
            for label, value in bytes_per_passage.items()
        ]
    ).set_index("model")


def training_data_table(data: TildeTrainingData, steps: int, batch_size: int) -> pd.DataFrame:
    """Per source of training examples (``data.sources``): its examples, and the epochs that ``steps``
    batches of ``batch_size`` examples make over all of them (the pairs and the reconstruction passages)."""
    examples = len(data.pairs) + len(data.reconstruction)
    rows = [{"source": source, "examples": count} for source, count in data.sources.items()]
    rows.append({"source": "all", "examples": examples})
    table = pd.DataFrame(rows).set_index("source")
    table["epochs"] = [math.nan] * (len(rows) - 1) + [steps * batch_size / max(1, examples)]
    return table


def loss_curves(trained: Mapping[str, TildeTrainingResult]) -> pd.DataFrame:
    """Every variant's loss per step, long format: ``variant`` (its label), ``step`` (from 1), ``loss``."""
    return pd.DataFrame(
        [
            {"variant": VARIANTS[name].label, "step": step + 1, "loss": loss}
            for name, result in trained.items()
            for step, loss in enumerate(result.losses)
        ]
    )


def mark(value: float, significant: object) -> str:
    """``value`` with three decimals, and " †" when ``significant`` is ``True``."""
    return f"{value:.3f}" + (" †" if significant is True else "")


def marked_table2(table: pd.DataFrame, test_sets: Sequence[str], measures: Sequence[str]) -> pd.DataFrame:
    """:func:`lib.experiments.tilde_comparisons.effectiveness_table` as shown: each measure's mean with a † where
    significant."""
    return pd.DataFrame(
        {
            (test_set.upper(), measure): [
                mark(
                    table.loc[name, (test_set.upper(), measure)],
                    table.loc[name].get((test_set.upper(), f"{measure} †")),
                )
                for name in table.index
            ]
            for test_set in test_sets
            for measure in measures
        },
        index=table.index,
    )


def table2_value(table: pd.DataFrame, system: str, test_set: str, measure: str = "nDCG@10") -> float:
    """One mean of :func:`lib.experiments.tilde_comparisons.effectiveness_table`."""
    return float(table.loc[system, (test_set.upper(), measure)])


def marked_ablation(table: pd.DataFrame, measures: Sequence[str]) -> pd.DataFrame:
    """:func:`lib.experiments.tilde_comparisons.ablation` as shown: loss, scoring, each measure with a † where
    significant, and the p-values."""
    marked = {m: [mark(v, s) for v, s in zip(table[m], table[f"significant {m}"], strict=True)] for m in measures}
    return table.assign(**marked)[["loss", "scoring", *measures, *[f"p {m}" for m in measures]]]


__all__ = [
    "MS_MARCO_PASSAGES", "index_size", "loss_curves", "mark", "marked_ablation", "marked_table2", "table2_value",
    "training_data_table",
]  # fmt: skip
