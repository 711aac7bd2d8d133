"""Chapter 9's tables, figures and readings (long documents: TIME and assembled documents).

- :func:`collection_table` — TIME and the assembled years side by side: documents, queries, lengths, relevance;
- :func:`plot_collections` — their length distributions, and where the assembled relevant passages sit;
- :func:`effectiveness_table` / :func:`effectiveness_reading` — a comparison against BM25 as shown and read;
- :func:`plot_positions` / :func:`position_reading` — reciprocal rank by the relevant passage's position, and the
  tested trends in words.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from lib.core.types import JudgedSet
from lib.data.assembled_documents import AssembledSet
from lib.evaluation.position_effect import by_position


def collection_table(
    time: JudgedSet, documents: Mapping[str, str], assembled: Mapping[str, AssembledSet]
) -> pd.DataFrame:
    """One row per collection: documents, queries, judged-relevant documents, mean and median words, the share over
    512 words, and (assembled) the mean relative position of the relevant passage."""

    def row(name: str, texts: list[str], queries: int, relevant: int, positions: list[float]) -> dict:
        words = [len(text.split()) for text in texts]
        return {"collection": name, "documents": len(words), "queries": queries, "relevant documents": relevant,
                "mean words": statistics.mean(words), "median words": statistics.median(words),
                "share > 512 words": sum(w > 512 for w in words) / len(words),
                "mean position of relevance": statistics.mean(positions) if positions else float("nan")}  # fmt: skip

    rows = [row("TIME", list(documents.values()), len(time.queries), sum(map(len, time.qrels.values())), [])]
    for name, collection in assembled.items():
        layouts = collection.layouts.values()
        positions = [layout.relative_position for layout in layouts if layout.relevant_at is not None]
        rows.append(row(f"{name.upper()} (assembled)", list(collection.documents.values()), len(collection.qrels),
                        len(positions), positions))  # fmt: skip
    return pd.DataFrame(rows)


def plot_collections(documents: Mapping[str, str], assembled: Mapping[str, AssembledSet]) -> plt.Figure:
    """Left: the documents' lengths in words (TIME and each assembled year); right: where the assembled documents'
    relevant passages sit (0: first passage, 1: last)."""
    lengths = [{"collection": "TIME", "words": len(text.split())} for text in documents.values()]
    positions = []
    for name, collection in assembled.items():
        label = f"{name.upper()} (assembled)"
        lengths += [{"collection": label, "words": len(text.split())} for text in collection.documents.values()]
        positions += [{"collection": label, "position": layout.relative_position}
                      for layout in collection.layouts.values() if layout.relevant_at is not None]  # fmt: skip
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    sns.histplot(pd.DataFrame(lengths), x="words", hue="collection", stat="density", common_norm=False,
                 element="step", log_scale=True, ax=left)  # fmt: skip
    left.set_title("Document length")
    sns.histplot(pd.DataFrame(positions), x="position", hue="collection", bins=10, binrange=(0, 1),
                 element="step", ax=right)  # fmt: skip
    right.set_title("Where the relevant passage sits (assembled)")
    right.set_xlabel("relative position in the document (0: first passage)")
    figure.tight_layout()
    return figure


def effectiveness_table(compared: pd.DataFrame, labels: Mapping[str, str]) -> pd.DataFrame:
    """:func:`lib.evaluation.comparison.compare`'s frame against a baseline as shown: per model its measures and,
    for each, the corrected p against the baseline with ``*`` where significant ("—" for the baseline)."""
    measures = [column for column in compared.columns if f"{column} p_bonferroni" in compared.columns]
    rows = []
    for name in compared.index:
        row = {"model": labels.get(name, name)}
        for measure in measures:
            row[measure] = float(compared.loc[name, measure])
            p = compared.loc[name, f"{measure} p_bonferroni"]
            significant = bool(compared.loc[name, f"{measure} significant"])
            row[f"p {measure}"] = "—" if pd.isna(p) else f"{p:.3f}{'*' if significant else ''}"
        rows.append(row)
    return pd.DataFrame(rows)


def effectiveness_reading(table: pd.DataFrame, collection: str) -> str:
    """Which model has the highest nDCG@10 on ``collection`` and, for every model, whether it differs significantly
    from the baseline (the table's first row)."""
    baseline = table.iloc[0]["model"]
    best = table.loc[table["nDCG@10"].idxmax()]
    verdicts = []
    for row in table.iloc[1:].to_dict("records"):
        higher = row["nDCG@10"] > table.iloc[0]["nDCG@10"]
        if row["p nDCG@10"].endswith("*"):
            verdicts.append(f"{row['model']} is significantly {'above' if higher else 'below'} {baseline}")
        else:
            verdicts.append(f"{row['model']} does not differ significantly from {baseline}")
    return (f"On {collection}, {best['model']} has the highest nDCG@10 ({best['nDCG@10']:.3f}). "
            f"{'; '.join(verdicts)} (paired t-tests on nDCG@10, Bonferroni-corrected).")  # fmt: skip


def plot_positions(ranks: Mapping[str, Mapping[str, pd.DataFrame]], bins: int) -> plt.Figure:
    """Per assembled year (a panel): each model's mean reciprocal rank of a relevant document against the bin of its
    relevant passage's position."""
    figure, axes = plt.subplots(1, len(ranks), figsize=(5 * len(ranks), 3.6), sharey=True, squeeze=False)
    for ax, (name, by_model) in zip(axes[0], ranks.items(), strict=True):
        table = by_position(by_model, bins).drop(columns="documents")
        table.plot(ax=ax, marker="o")
        ax.set_title(f"{name.upper()} (assembled)")
        ax.set_xlabel("relevant passage at (share of the document)")
        ax.set_ylabel("reciprocal rank among non-relevant documents")
    figure.tight_layout()
    return figure


def position_reading(trends: pd.DataFrame) -> str:
    """The tested trends in words: per year, the models whose reciprocal rank falls significantly as relevance moves
    later, and those with no significant trend."""
    sentences = []
    for year, rows in trends.groupby("year", sort=False):
        falls = rows.loc[rows["trend"] == "falls", "model"].tolist()
        flat = rows.loc[rows["trend"] == "no significant trend", "model"].tolist()
        rises = rows.loc[rows["trend"] == "rises", "model"].tolist()
        if falls:
            verb = "ranks" if len(falls) == 1 else "rank"
            parts = [f"On {year} (assembled), the later the relevant passage, the lower {', '.join(falls)} {verb} "
                     "its document"]  # fmt: skip
        else:
            parts = [f"On {year} (assembled), no model ranks a document significantly lower when its relevance sits "
                     "later"]  # fmt: skip
        if flat and falls:
            parts.append(f"{', '.join(flat)} show{'s' if len(flat) == 1 else ''} no significant trend")
        if rises:
            parts.append(f"{', '.join(rises)} rank{'s' if len(rises) == 1 else ''} later relevance higher")
        sentences.append("; ".join(parts) + ".")
    return " ".join(sentences)


__all__ = [
    "collection_table", "effectiveness_reading", "effectiveness_table", "plot_collections", "plot_positions",
    "position_reading",
]  # fmt: skip
