"""Chapter 9's tables, figures and readings (long documents: TIME and assembled documents).

- :func:`collection_table` — TIME and the assembled years side by side: documents, queries, lengths, relevance;
- :func:`mixture_table` — the query's own passages in relevant and non-relevant assembled documents (the filler
  mixture that keeps relevance from being given away by topic);
- :func:`plot_collections` — their length distributions, and where the assembled relevant passages sit (pieces);
- :func:`transfer_table` / :func:`split_words` / :func:`transfer_reading` — what a passage-trained model meets in
  TIME's articles: pieces per word, words split into many pieces (and which), the share of articles beyond each cap;
- :func:`effectiveness_table` / :func:`effectiveness_reading` — a comparison against BM25 as shown and read;
- :func:`sweep_table` / :func:`plot_sweep` / :func:`sweep_reading` — the controlled position sweep: each model's
  reciprocal rank against the relevant passage's offset in pieces, tested against offset 0, in words;
  :func:`windows_reading` — whether MaxP loses a relevant passage its windows split;
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
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from lib.core.types import JudgedSet
from lib.data.assembled_documents import END, AssembledSet
from lib.models.long_bert import MAXP_SIZE, MAXP_STRIDE


def collection_table(
    time: JudgedSet,
    documents: Mapping[str, str],
    assembled: Mapping[str, AssembledSet],
    offsets: Mapping[str, list[int]],
    reach: int,
) -> pd.DataFrame:
    """One row per collection: documents, queries, judged-relevant documents, mean and median words, the share over
    512 words, and (assembled; ``offsets``: year → where each relevant passage starts, in word pieces) the median
    offset of relevance and the share of relevant passages starting beyond ``reach`` pieces (FirstP's)."""

    def row(name: str, texts: list[str], queries: int, relevant: int, starts: list[int]) -> dict:
        words = [len(text.split()) for text in texts]
        return {"collection": name, "documents": len(words), "queries": queries, "relevant documents": relevant,
                "mean words": statistics.mean(words), "median words": statistics.median(words),
                "share > 512 words": sum(w > 512 for w in words) / len(words),
                "median offset of relevance (pieces)": statistics.median(starts) if starts else float("nan"),
                f"relevance beyond {reach:,} pieces": (sum(start >= reach for start in starts) / len(starts)
                                                       if starts else float("nan"))}  # fmt: skip

    rows = [row("TIME", list(documents.values()), len(time.queries), sum(map(len, time.qrels.values())), [])]
    for name, collection in assembled.items():
        rows.append(row(f"{name.upper()} (assembled)", list(collection.documents.values()), len(collection.qrels),
                        len(offsets[name]), offsets[name]))  # fmt: skip
    return pd.DataFrame(rows)


def mixture_table(shares: Mapping[str, Mapping[str, Mapping[str, float]]]) -> pd.DataFrame:
    """One row per assembled set and kind of document (``shares``: set → :func:`lib.data.assembled_documents.
    own_shares`): documents, the query's own passages per document and their share of its passages."""
    rows = [{"assembled set": name, "documents": kind, "count": int(values["documents"]),
             "own passages per document": values["own passages"], "own share of its passages": values["own share"]}
            for name, by_kind in shares.items() for kind, values in by_kind.items()]  # fmt: skip
    return pd.DataFrame(rows)


def plot_collections(documents: Mapping[str, str], assembled: Mapping[str, AssembledSet],
                     offsets: Mapping[str, list[int]]) -> plt.Figure:  # fmt: skip
    """Left: the documents' lengths in words (TIME and each assembled year); right: where the assembled documents'
    relevant passages start, in word pieces (``offsets``: year → offsets)."""
    lengths = [{"collection": "TIME", "words": len(text.split())} for text in documents.values()]
    positions = []
    for name, collection in assembled.items():
        label = f"{name.upper()} (assembled)"
        lengths += [{"collection": label, "words": len(text.split())} for text in collection.documents.values()]
        positions += [{"collection": label, "offset": offset} for offset in offsets[name]]
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    sns.histplot(pd.DataFrame(lengths), x="words", hue="collection", stat="density", common_norm=False,
                 element="step", log_scale=True, ax=left)  # fmt: skip
    left.set_title("Document length")
    sns.histplot(pd.DataFrame(positions), x="offset", hue="collection", bins=12, multiple="dodge", shrink=0.8, ax=right)
    right.set_title("Where the relevant passage starts (assembled)")
    right.set_xlabel("offset in word pieces")
    figure.tight_layout()
    return figure


def _word_pieces(texts: list[str], tokenizer: Any) -> dict[str, int]:
    """Each distinct word of ``texts`` (split on white space) and its number of word pieces."""
    words = sorted({word for text in texts for word in text.split()})
    return dict(zip(words, map(len, tokenizer.pieces(words)), strict=True)) if words else {}


def transfer_table(collections: Mapping[str, list[str]], tokenizer: Any, caps: list[int]) -> pd.DataFrame:
    """Per collection (name → texts): word pieces per word, the share of its words split into three pieces or more,
    the mean pieces per text and the share of texts beyond each of ``caps`` pieces (``tokenizer``: BERT's)."""
    rows = []
    for name, texts in collections.items():
        pieces = [len(ids) for ids in tokenizer.pieces(texts)]
        sizes = _word_pieces(texts, tokenizer)
        words = [sizes[word] for text in texts for word in text.split()]
        row = {"collection": name, "texts": len(texts), "pieces per word": sum(words) / max(len(words), 1),
               "words in 3+ pieces": sum(size >= 3 for size in words) / max(len(words), 1),
               "mean pieces": statistics.mean(pieces)}  # fmt: skip
        row.update({f"share > {cap:,} pieces": sum(n > cap for n in pieces) / len(pieces) for cap in caps})
        rows.append(row)
    return pd.DataFrame(rows)


def split_words(texts: list[str], tokenizer: Any, top: int = 8) -> list[str]:
    """The ``top`` most frequent words of ``texts`` that ``tokenizer`` splits into three pieces or more, each with its
    pieces (``"KHRUSHCHEV (k, ##hr, ##ush, ##chev)"``)."""
    sizes = _word_pieces(texts, tokenizer)
    counts = pd.Series([word for text in texts for word in text.split() if sizes[word] >= 3]).value_counts()
    return [f"{word} ({', '.join(tokenizer.decode(tokenizer.pieces([word])[0]))})" for word in counts.index[:top]]


def transfer_reading(table: pd.DataFrame, caps: list[int], examples: list[str]) -> str:
    """:func:`transfer_table`'s first row (the articles) against its second (the passages models learned on), and
    :func:`split_words`' ``examples``."""
    articles, passages = table.iloc[0], table.iloc[1]
    beyond = ", ".join(f"{articles[f'share > {cap:,} pieces']:.0%} beyond {cap:,}" for cap in caps)
    return (f"A TIME article runs to {articles['mean pieces']:,.0f} word pieces on average against "
            f"{passages['mean pieces']:,.0f} for a passage, and {beyond} pieces. Its words split into "
            f"{articles['pieces per word']:.2f} pieces each against {passages['pieces per word']:.2f} in the passages, "
            f"{articles['words in 3+ pieces']:.1%} of them into three or more against "
            f"{passages['words in 3+ pieces']:.1%}; the most frequent of those: {'; '.join(examples)}.")  # fmt: skip


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


def _target_label(target: int) -> str:
    return "end" if target == END else f"{target:,}"


def sweep_table(tests: pd.DataFrame) -> pd.DataFrame:
    """The sweep as shown: per year and model, the mean reciprocal rank at each target offset ("end": beyond what
    any model reads), ``*`` where significantly below offset 0 and ``+`` where significantly above."""
    frame = tests.assign(
        cell=[f"{value:.2f}{'*' if reading == 'below' else '+' if reading == 'above' else ''}"
              for value, reading in zip(tests["reciprocal rank"], tests["reading"], strict=True)],
        offset=[_target_label(target) for target in tests["target"]],
    )  # fmt: skip
    order = [_target_label(target) for target in sorted(set(tests["target"]), key=lambda t: (t == END, t))]
    table = frame.pivot_table(index=["year", "model"], columns="offset", values="cell", aggfunc="first", sort=False)
    return table[order].reset_index()


def plot_sweep(tests: pd.DataFrame, first_pieces: int, max_pieces: int) -> plt.Figure:
    """Per year (a panel): each model's mean reciprocal rank against the relevant passage's mean offset (pieces),
    FirstP's reach and every model's cap marked; the end is drawn past the cap."""
    years = list(dict.fromkeys(tests["year"]))
    figure, axes = plt.subplots(1, len(years), figsize=(5.2 * len(years), 3.8), sharey=True, squeeze=False)
    for ax, year in zip(axes[0], years, strict=True):
        frame = tests[tests["year"] == year]
        for model, rows in frame.groupby("model", sort=False):
            ax.plot(rows["mean offset"], rows["reciprocal rank"], marker="o", label=model)
        ax.axvline(first_pieces, color="grey", linestyle="--", linewidth=1)
        ax.axvline(max_pieces, color="grey", linestyle=":", linewidth=1)
        ax.text(first_pieces, 1.02, " FirstP reads up to here", fontsize=8, color="grey")
        ax.text(max_pieces, 1.02, " every model's cap", fontsize=8, color="grey")
        ax.set_title(f"{year} (assembled)", pad=16)
        ax.set_xlabel("relevant passage starts at (word pieces)")
        ax.set_ylabel("reciprocal rank among non-relevant documents")
        ax.set_ylim(0, 1.1)
    axes[0][-1].legend(fontsize=8, loc="lower left")
    figure.tight_layout()
    return figure


def sweep_reading(tests: pd.DataFrame) -> str:
    """The sweep in words: per year and model, the offsets (before the end) at which it ranks the document
    significantly below its offset-0 rank, and whether it falls at the end — the positive control."""
    sentences = []
    for year, frame in tests.groupby("year", sort=False):
        parts = []
        for model, rows in frame.groupby("model", sort=False):
            inside = rows[(rows["target"] != END) & (rows["target"] != 0)]
            below = [f"{target:,}" for target in inside.loc[inside["reading"] == "below", "target"]]
            end = rows[rows["target"] == END]
            end_reading = "falls at the end" if (end["reading"] == "below").all() else "does not fall at the end"
            where = f"falls from offset 0 at {', '.join(below)} pieces" if below else "holds at every offset"
            parts.append(f"{model} {where} and {end_reading}")
        sentences.append(f"On {year} (assembled): " + "; ".join(parts) + ".")
    return (" ".join(sentences) + " (Each offset against offset 0 within the same queries, paired t-tests, "
            "Bonferroni over every test of the year.)")  # fmt: skip


def windows_reading(table: pd.DataFrame, alpha: float = 0.05) -> str:
    """:func:`lib.evaluation.position_effect.window_split_table` per year (a ``year`` column) in words."""
    parts = []
    for year, rows in table.groupby("year", sort=False):
        by = rows.set_index("relevant passage")
        whole, split = by.loc["whole in one window"], by.loc["split by a boundary"]
        p = float(whole["p (Mann–Whitney)"])
        verdict = "a significant difference" if p < alpha else "no significant difference"
        parts.append(f"on {year} (assembled) MaxP's reciprocal rank is {split['reciprocal rank']:.2f} where its "
                     f"windows split the relevant passage ({int(split['documents'])} documents) against "
                     f"{whole['reciprocal rank']:.2f} where one window holds it whole ({int(whole['documents'])}): "
                     f"{verdict} (Mann–Whitney, p = {p:.3f})")  # fmt: skip
    return "Inside the document and past its start, " + "; ".join(parts) + "." if parts else ""


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


def cascade_reading(claim: pd.DataFrame, speed_ratio: float, k: int | None, tolerance: float = 0.01,
                    speed_bar: float = 3.0) -> str:  # fmt: skip
    """The lecture's claim (slide 40) on the book's data: IDCM at ``k`` against MaxP (``claim``: a comparison with
    MaxP as the baseline, :func:`lib.evaluation.comparison.compare`) and its speed over MaxP's. The claim holds when
    IDCM is at most ``tolerance`` nDCG@10 below MaxP (above it is no miss) at ``speed_bar`` times its speed or more;
    otherwise the reading says by how much each part misses."""
    row = claim.loc["idcm"]
    delta, p = float(row["nDCG@10 delta"]), float(row["nDCG@10 p"])
    verdict = "significantly" if bool(row["nDCG@10 significant"]) else "not significantly"
    misses = []
    if delta < -tolerance:
        misses.append(f"its nDCG@10 is {-delta - tolerance:.3f} further below MaxP's than {tolerance}")
    if speed_ratio < speed_bar:
        misses.append(f"its speed-up is {speed_ratio:.1f}×, short of {speed_bar:.0f}×")
    missed = f": {' and '.join(misses)}" if misses else ""
    return (f"At k = {k or 'all'} windows per document, IDCM's nDCG@10 on assembled DL19 is {delta:+.3f} from "
            f"MaxP's ({verdict} different; paired t-test, p = {p:.3f}) at {speed_ratio:.1f}× MaxP's documents per "
            f"ms. The lecture's claim — within {tolerance} of the full model at several times its speed (the book's "
            f"bar: {speed_bar:.0f}×) — {'does not hold' if misses else 'holds'} here{missed}.")  # fmt: skip


def committed_speeds(folder: Path) -> pd.DataFrame:
    """Every committed ``benchmarks/results/long/*.json`` as one table: device, date, batch size (documents per
    batch), model, MaxP's window and stride (``settings``; a file without them was timed with
    :class:`lib.models.long_bert.MaxP`'s defaults, :data:`~lib.models.long_bert.MAXP_SIZE` every
    :data:`~lib.models.long_bert.MAXP_STRIDE`), documents per ms."""
    rows = []
    for path in sorted(folder.glob("*.json")):
        result = json.loads(path.read_text())
        date = result["environment"]["date"][:10]
        settings = result.get("settings", {"window": MAXP_SIZE, "stride": MAXP_STRIDE})
        windows = f"{settings['window']} every {settings['stride']}"
        rows += [{"device": result["device"], "date": date, "batch": row["batch_size"], "model": row["model"],
                  "MaxP windows": windows, "documents / ms": row["documents_per_ms"]}
                 for row in result["rows"]]  # fmt: skip
    return pd.DataFrame(rows, columns=["device", "date", "batch", "model", "MaxP windows", "documents / ms"])


__all__ = [
    "cascade_reading", "cascade_table", "collection_table", "committed_speeds", "coverage_reading",
    "effectiveness_reading", "effectiveness_table", "mixture_table", "pairs_reading", "plot_collections",
    "plot_region_positions", "plot_regions", "plot_sweep", "split_words", "sweep_reading", "sweep_table",
    "transfer_reading", "transfer_table", "windows_reading",
]  # fmt: skip
