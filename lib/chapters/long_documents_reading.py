"""Chapter 9's tables, figures and readings (long documents: TIME and assembled documents).

- :func:`collection_table` — TIME and the assembled years side by side: documents, queries, lengths, relevance;
- :func:`plot_collections` — their length distributions, and where the assembled relevant passages sit;
- :func:`effectiveness_table` / :func:`effectiveness_reading` — a comparison against BM25 as shown and read;
- :func:`plot_positions` / :func:`position_reading` — reciprocal rank by the relevant passage's position, and the
  tested trends in words;
- :func:`plot_regions` — where TKL's best region lies, and whether it covers the relevant passage (slide 37);
- :func:`cascade_table` / :func:`cascade_reading` — IDCM's cascade against ``k`` beside MaxP (slide 40), and the
  lecture's claim tested;
- :func:`committed_speeds` — the documents per ms ``python -m benchmarks.long_documents`` committed (a GPU's).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping
from pathlib import Path

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


def pairs_reading(tests: pd.DataFrame, collection: str) -> str:
    """The pairwise tests between re-rankers (:func:`lib.evaluation.comparison.pairwise_tests`) in words."""
    significant = tests[tests["significant"]]
    if significant.empty:
        return f"On {collection}, no two re-rankers differ significantly in nDCG@10 (Bonferroni over the pairs)."
    pairs = [f"{row['run'] if row['delta'] > 0 else row['against']} above "
             f"{row['against'] if row['delta'] > 0 else row['run']} (p = {row['p_bonferroni']:.3f})"
             for row in significant.to_dict("records")]  # fmt: skip
    rest = "; no other pair differs significantly" if len(significant) < len(tests) else ""
    return f"On {collection}, in nDCG@10 (Bonferroni over the pairs): " + "; ".join(pairs) + rest + "."


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


def plot_regions(regions: pd.DataFrame) -> plt.Figure:
    """Per assembled year: the relative position of TKL's best region against that of the relevant passage, each
    document a point coloured by whether the region covers the passage."""
    frame = regions.assign(
        relevant=(regions["relevant_start"] + regions["relevant_end"]) / 2 / regions["tokens"].clip(lower=1),
        covered=regions["covers"].map({True: "covers the relevant passage", False: "elsewhere"}),
    )
    grid = sns.relplot(data=frame, x="relevant", y="region_position", hue="covered", col="year", height=3.4,
                       hue_order=["covers the relevant passage", "elsewhere"], s=30)  # fmt: skip
    grid.set_axis_labels("relevant passage at (share of the document)", "TKL's best region at")
    grid.set_titles("{col_name} (assembled)")
    return grid.figure


def coverage_reading(coverage: pd.DataFrame) -> str:
    """TKL's coverage in words (``coverage``: :func:`lib.evaluation.position_effect.coverage_table` by ``year``)."""
    parts = []
    for row in coverage.to_dict("records"):
        verdict = "more often than chance" if row["above chance"] else "not significantly more often than chance"
        parts.append(f"on {row['year']} (assembled) its best region covers the relevant passage in "
                     f"{row['covers']:.0%} of {row['documents']} documents against {row['chance']:.0%} by chance — "
                     f"{verdict} (p = {row['p_bonferroni']:.2g}, Bonferroni)")  # fmt: skip
    return "TKL points at the relevance it scores: " + "; ".join(parts) + "." if parts else ""


def plot_region_positions(positions: pd.DataFrame) -> plt.Figure:
    """Slide 37 on TIME: where TKL's top regions sit in the relevant documents (relative position), by region rank."""
    figure, ax = plt.subplots(figsize=(6.4, 3.2))
    sns.histplot(data=positions.assign(region=positions["rank"].map({1: "best", 2: "second", 3: "third"})),
                 x="position", hue="region", bins=10, binrange=(0, 1), multiple="dodge", shrink=0.8, ax=ax)  # fmt: skip
    ax.set_xlabel("region's middle (share of the document)")
    ax.set_ylabel("regions")
    figure.tight_layout()
    return figure


def cascade_table(effectiveness: pd.DataFrame, speeds: Mapping[int | None, float], maxp_speed: float) -> pd.DataFrame:
    """IDCM's cascade as shown: per ``k`` ("all" for every window) its nDCG@10 on each set (``effectiveness``'s
    columns), its documents per ms and that speed over MaxP's."""
    table = effectiveness.copy()
    table.columns = [f"{name.upper() if name != 'validation' else 'validation'} nDCG@10" for name in table.columns]
    table["documents / ms"] = [speeds[k] for k in effectiveness.index]
    table["× MaxP's speed"] = table["documents / ms"] / maxp_speed
    table.index = ["all" if k is None else str(k) for k in effectiveness.index]
    return table.rename_axis("k").reset_index()


def cascade_reading(claim: pd.DataFrame, speed_ratio: float, k: int | None) -> str:
    """The lecture's claim (slide 40) on the book's data: IDCM at ``k`` against MaxP (``claim``: a comparison with
    MaxP as the baseline, :func:`lib.evaluation.comparison.compare`) and its speed over MaxP's."""
    row = claim.loc["idcm"]
    delta, p = float(row["nDCG@10 delta"]), float(row["nDCG@10 p"])
    within = abs(delta) <= 0.01
    verdict = "significantly" if bool(row["nDCG@10 significant"]) else "not significantly"
    holds = within and speed_ratio >= 3
    missed = "" if holds else (": the gap exceeds 0.01" if not within else ": the speed-up is under 3×")
    return (f"At k = {k or 'all'} windows per document, IDCM's nDCG@10 on assembled DL19 is {delta:+.3f} from "
            f"MaxP's ({verdict} different; paired t-test, p = {p:.3f}) at {speed_ratio:.1f}× MaxP's documents per "
            f"ms. The lecture's claim — within 0.01 of the full model at several times its speed (the book's bar: "
            f"3×) — {'holds' if holds else 'does not hold'} here{missed}.")  # fmt: skip


def committed_speeds(folder: Path) -> pd.DataFrame:
    """Every committed ``benchmarks/results/long/*.json`` as one table: device, date, batch size (documents per
    batch), model, documents per ms."""
    rows = []
    for path in sorted(folder.glob("*.json")):
        result = json.loads(path.read_text())
        date = result["environment"]["date"][:10]
        rows += [{"device": result["device"], "date": date, "batch": row["batch_size"], "model": row["model"],
                  "documents / ms": row["documents_per_ms"]} for row in result["rows"]]  # fmt: skip
    return pd.DataFrame(rows, columns=["device", "date", "batch", "model", "documents / ms"])


__all__ = [
    "cascade_reading", "cascade_table", "collection_table", "committed_speeds", "coverage_reading",
    "effectiveness_reading", "effectiveness_table", "pairs_reading", "plot_collections", "plot_positions",
    "plot_region_positions", "plot_regions", "position_reading",
]  # fmt: skip
