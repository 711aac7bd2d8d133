"""Chapter 2's readings: what the training run's numbers say, written from them.

The sentences are chosen by comparisons of the run's own numbers (never typed into the prose): TK-2
trained on each source of training queries (which one validation favours), BERT-cat's ``[CLS]``
vector before fine-tuning and how long its loss took to fall, and Table 2 at book scale, test year by
test year (which models beat BM25 and which significantly, TK by depth, the best model, TK-2's speed
against BERT-cat's, the tuned depths).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from lib.core.profiles import TrainingSettings
from lib.models.registry import model_spec
from lib.models.tk import EMBEDDING_LR

#: Table 2's nDCG@10 column for each way of re-ranking the significance tests cover.
DEPTH_COLUMNS = {"tuned": "nDCG@10", "all": "nDCG@10 (all)", "+BM25": "nDCG@10 (+BM25)"}
#: The mean cosine between pairs above which a vector is "nearly the same for every pair".
CONSTANT_COSINE = 0.99
#: The share of its first logged value BERT-cat's training loss must fall under to count as falling.
LOSS_FALL = 0.8


def embedding_rate(settings: TrainingSettings) -> str:
    """The Adam rate the word models' embeddings fine-tune at, and where it comes from (the decisions record)."""
    if settings.word_learning_rate is None:
        return f"the paper's {EMBEDDING_LR:g} for embeddings and contextualisation (§4.3)"
    return f"{settings.word_learning_rate:g}, the profile's one rate for every parameter (chosen on validation)"


def query_sources_skipped(settings: TrainingSettings, compare_queries: bool = True) -> str:
    """Why chapter 2 has no pseudo-queries to show or sources of training queries to compare (the reason of
    :func:`lib.chapters.prologue.skipped`)."""
    if settings.teacher_scores is not None:
        return (
            f"on the paper's path the students learn the triples and margins of the teacher-scores file "
            f"`{settings.teacher_scores}` over MS MARCO's {settings.distill_query_set} queries: no pseudo-query is "
            "cut from the corpus and no book teacher labels candidates"
        )
    if not compare_queries:
        return "the parameter `compare_queries` is off"
    return "the profile has one source of training queries (`distill_queries` or `distill_pseudo_queries` is 0)"


def query_source_reading(
    comparison: pd.DataFrame,
    sources: Sequence[str],
    test_sets: Sequence[str],
    validation_label: str,
    validation_metric: str,
    skipped_because: str = "",
) -> str:
    """TK-2 trained on each source of training queries: nDCG@10 re-ranking all candidates per test year, and
    which source validation favours (``comparison``: ``comparison_tables.variant_comparison``'s rows for
    ``sources``, "both" first; empty: the comparison was skipped, ``skipped_because``,
    :func:`query_sources_skipped`)."""
    if not len(comparison):
        return f"*Skipped here: the comparison of training queries, because {skipped_because}.*"
    by_source = comparison.set_index(["set", "training queries"])["nDCG@10 (all)"]
    reading = (
        "Re-ranking all candidates, TK-2 reaches nDCG@10 "
        + "; ".join(
            f"{fold.upper()}: " + ", ".join(f"{by_source[(fold, label)]:.3f} ({label})" for label in sources)
            for fold in test_sets
        )
        + "."
    )
    validation = comparison.groupby("training queries", sort=False)[f"validation {validation_metric}"].first()
    ahead = validation.idxmax()
    return reading + (
        f" On {validation_label} validation, the only set a choice may rest on, the best {validation_metric} is "
        + ", ".join(f"{value:.3f} ({label})" for label, value in validation.items())
        + ": validation favours "
        + ("both sources together, the book's default." if ahead == "both" else f"{ahead}, not the book's default.")
    )


def cls_vector_reading(by_depth: pd.DataFrame, used_depth: int, bert_cat_loss: pd.Series) -> str:
    """Whether BERT-cat's ``[CLS]`` vector tells pairs apart before fine-tuning, and when its loss fell.

    ``by_depth``: the mean cosine between pairs' vectors after each number of layers (column "[CLS] vector");
    ``used_depth``: the layers BERT-cat keeps; ``bert_cat_loss``: its training loss by step.
    """
    constant = by_depth.index[by_depth["[CLS] vector"] > CONSTANT_COSINE].tolist()
    cls_before = by_depth.loc[used_depth, "[CLS] vector"]
    fallen = bert_cat_loss[bert_cat_loss < LOSS_FALL * bert_cat_loss.iloc[0]]
    last_step = int(bert_cat_loss.index[-1])
    reading = (
        f"After MiniLM's first {max(constant)} layers the `[CLS]` vector is nearly the same for every pair "
        "(mean cosine above 0.99); "
        if constant
        else ""
    )
    reading += (
        f"after the {used_depth} layer{'s' if used_depth > 1 else ''} BERT-cat keeps, the mean cosine is "
        f"{cls_before:.4f}: "
    )
    if cls_before > CONSTANT_COSINE:
        reading += (
            "the new linear layer has nothing to rank by until fine-tuning has moved information into the vector. "
        )
    else:
        reading += "the vector already tells pairs apart when fine-tuning starts. "
    if len(fallen):
        return reading + (
            f"BERT-cat's training loss stayed above 80% of its first logged value until step {fallen.index[0]} "
            f"of {last_step}."
        )
    return (
        reading + f"BERT-cat's training loss never fell below 80% of its first logged value in its {last_step} steps."
    )


def above_bm25(table: pd.DataFrame, significance: pd.DataFrame, models: Sequence[str], fold: str, depth: str) -> str:
    """Which of ``models`` score above BM25 on ``fold``'s nDCG@10 at ``depth`` ("tuned", "all", "+BM25"), and
    which significantly (``table``: Table 2's rows; ``significance``: ``significance_against_bm25``'s)."""
    column = DEPTH_COLUMNS[depth]
    rows = table[table["set"] == fold].set_index("model")
    tests = significance[(significance["set"] == fold) & (significance["depth"] == depth)].set_index("system")
    beating = [m for m in models if rows.loc[m, column] > rows.loc["BM25", "nDCG@10"]]
    significant = [model_spec(m).label for m in beating if tests.loc[m, "significant"]]
    return (
        f"{len(beating)} of {len(models)} models score above BM25"
        + (f" ({', '.join(model_spec(m).label for m in beating)})" if beating else "")
        + (f", significantly after correction: {', '.join(significant)}" if significant else ", none significantly")
    )


def year_reading(table: pd.DataFrame, significance: pd.DataFrame, models: Sequence[str], fold: str) -> str:
    """One test year of Table 2 in words: BM25's nDCG@10, the models above it at every way of re-ranking, TK by
    depth of contextualisation, the best model, TK-2's speed against BERT-cat's and the tuned depths."""
    rows = table[table["set"] == fold].set_index("model")
    lines = [f"**{fold.upper()}** (BM25 nDCG@10 {rows.loc['BM25', 'nDCG@10']:.3f}):"]
    lines.append(f"re-ranking all candidates, {above_bm25(table, significance, models, fold, 'all')};")
    lines.append(f"at the tuned depths, {above_bm25(table, significance, models, fold, 'tuned')};")
    lines.append(f"interpolated with BM25, {above_bm25(table, significance, models, fold, '+BM25')}.")
    if {"tk1", "tk2", "tk3"} <= set(models):
        layers = ", ".join(f"{model_spec(m).label} {rows.loc[m, 'nDCG@10 (all)']:.3f}" for m in ("tk1", "tk2", "tk3"))
        lines.append(f"TK by depth of contextualisation (all candidates): {layers}.")
    best = rows.loc[list(models), "nDCG@10 (all)"].idxmax()
    lines.append(
        f"The best model re-ranking all candidates is {model_spec(best).label} "
        f"(nDCG@10 {rows.loc[best, 'nDCG@10 (all)']:.3f})."
    )
    if "tk2" in models and "bert-cat" in models:
        ratio = rows.loc["tk2", "docs/ms"] / rows.loc["bert-cat", "docs/ms"]
        faster, slower = ("TK-2", "BERT-cat") if ratio >= 1 else ("BERT-cat", "TK-2")
        lines.append(f"{faster} scores {max(ratio, 1 / ratio):.1f}× as many documents per millisecond as {slower}.")
    tuned = ", ".join(f"{model_spec(m).label} {int(rows.loc[m, 'depth'])}" for m in models)
    lines.append(f"Tuned depths: {tuned}.")
    return " ".join(lines)


def table2_reading(
    table: pd.DataFrame, significance: pd.DataFrame, models: Sequence[str], test_sets: Sequence[str]
) -> str:
    """Table 2 at book scale in words, a paragraph per test year (:func:`year_reading`)."""
    return "\n\n".join(year_reading(table, significance, models, fold) for fold in test_sets)
