"""Chapter 2's ladder of pre-training depth, assembled from the trained models' results.

The TK paper's TK (§3) contextualises GloVe vectors with small Transformer layers learned from 40M
triples. At book scale the same TK stays level with BM25, so chapter 2 climbs a ladder of starting
points, each rung one more step of pre-trained knowledge, with everything else fixed (chapter 2's
protocol, Margin-MSE from the same teacher, the same validation and test queries):

1. **word vectors** — KNRM, Conv-KNRM, TK-1/2/3 on GloVe (TK's own layers learned from scratch);
2. **static pieces** — the same models on static word-piece vectors distilled from the starting BERT's
   outputs (:mod:`lib.representations.piece_vectors`);
3. **BERT's first layers** — TK whose contextualiser is the starting BERT's first 1, 2, 3 or all layers
   (:mod:`lib.models.tk_bert`);
4. **all of BERT, fine-tuned** — ColBERT and BERT-cat;
5. **the teacher** — the bi-encoder itself, zero-shot.

:func:`rung` places a registry model on its rung, :func:`ladder_table` puts every rung's models in one
table (both test years, the tuned depth and all candidates, the t-test against BM25, documents per ms on
the same run) and :func:`beats_bm25_everywhere` names the models significantly above BM25 on every test
year. The chapter's figure and reading are :mod:`lib.chapters.pretraining_ladder`'s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd

from lib.experiments.tk_choice import is_tk
from lib.models.registry import model_spec

#: The rungs in order of pre-trained knowledge, as the table and the figure name them.
RUNGS: tuple[str, ...] = (
    "word vectors",
    "static pieces",
    "BERT's first layers",
    "all of BERT, fine-tuned",
    "teacher (zero-shot)",
)


def rung(name: str) -> str:
    """The rung of registry model ``name`` (:data:`RUNGS`), from its tokenizer family and whether it is a TK."""
    spec = model_spec(name)
    if spec.zero_shot:
        return RUNGS[4]
    if spec.family == "word":
        return RUNGS[0]
    if spec.family == "pieces":
        return RUNGS[1]
    return RUNGS[2] if is_tk(name) else RUNGS[3]


def ladder_table(
    table: pd.DataFrame, significance: pd.DataFrame, models: Sequence[str], validation: Mapping[str, float]
) -> pd.DataFrame:
    """One row per test year and model of ``models`` (in rung order, then ``models``' order).

    ``table`` has chapter 2's Table 2 columns (``set``, ``model``, ``nDCG@10``, ``depth``, ``nDCG@10 (all)``,
    ``docs/ms``) and a ``BM25`` row per year; ``significance`` the t-tests against BM25
    (``set``, ``depth`` — ``"all"`` and ``"tuned"`` are read —, ``system``, ``p_bonferroni``, ``significant``);
    ``validation`` each trained model's best validation measure (NaN or missing: zero-shot).
    """
    order = sorted(models, key=lambda name: (RUNGS.index(rung(name)), list(models).index(name)))
    rows = []
    for fold in table["set"].drop_duplicates():
        by_model = table[table["set"] == fold].set_index("model")
        tests = significance[significance["set"] == fold].set_index(["depth", "system"])
        bm25 = float(by_model.loc["BM25", "nDCG@10"])
        for name in order:
            rows.append({
                "set": fold,
                "model": name,
                "label": model_spec(name).label,
                "rung": rung(name),
                "nDCG@10 (tuned)": float(by_model.loc[name, "nDCG@10"]),
                "depth": int(by_model.loc[name, "depth"]),
                "nDCG@10 (all)": float(by_model.loc[name, "nDCG@10 (all)"]),
                "Δ BM25 (all)": float(by_model.loc[name, "nDCG@10 (all)"]) - bm25,
                "p (all)": float(tests.loc[("all", name), "p_bonferroni"]),
                "significant (all)": bool(tests.loc[("all", name), "significant"]),
                "p (tuned)": float(tests.loc[("tuned", name), "p_bonferroni"]),
                "docs/ms": float(by_model.loc[name, "docs/ms"]),
                "validation": float(validation.get(name, math.nan)),
            })  # fmt: skip
    return pd.DataFrame(rows)


def beats_bm25_everywhere(ladder: pd.DataFrame) -> list[str]:
    """The models significantly above BM25 re-ranking all candidates on every test year of ``ladder``."""
    above = ladder[ladder["significant (all)"] & (ladder["Δ BM25 (all)"] > 0)]
    years = ladder["set"].nunique()
    counts = above.groupby("model")["set"].nunique()
    return [name for name in ladder["model"].drop_duplicates() if counts.get(name, 0) == years]
