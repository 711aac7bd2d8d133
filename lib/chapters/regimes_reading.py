"""Chapter 3's tables and reading of the two regimes (run whole, passages stored), from the numbers of the run.

The tables computed from the run live in :mod:`lib.evaluation`: the best student per budget
(:func:`lib.evaluation.time_budget.student_leaders`), the committed cost tables, the ladder's verdict and the
compact TK table (:func:`lib.evaluation.regimes.committed_regimes`, ``ladder_verdict``, ``compact_table``). Here:

- :func:`cost_display` — the cost table (``regimes.csv``) as a reader sees it: labels, sizes, latencies with
  "est." where a latency was estimated rather than measured;
- :func:`tests_display` — one model against a rival under each budget, each cell with its corrected p;
- :func:`stored_slower` — where in the committed cost tables a stored index costs more than running the model whole;
- :func:`thesis_finding` — the chapter's closing bullet: the best student at a few budgets in each regime and
  whether the followed TK and BERT-cat differ significantly there;
- :func:`regimes_reading` — where the students lead in each regime, whether a TK leads once passages are stored,
  and where the order of the followed TK and BERT-cat is significant and where it is not;
- :func:`compact_reading` — what each compact TK index costs against the full TK, with its tests.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd

from lib.chapters.speed_report import budget_ms, leading_ranges
from lib.evaluation import time_budget
from lib.evaluation.comparison import pairwise_tests
from lib.evaluation.speedup_steps import verdict


def cost_display(table: pd.DataFrame, counts: Sequence[int], labels: Mapping[str, str]) -> pd.DataFrame:
    """The cost table with labels, bytes per passage, the index build time and one latency column per count."""

    def latency(row: pd.Series, count: int) -> str:
        return f"{row[f'ms_{count}']:,.1f}" + ("" if row.get(f"measured_{count}", True) else " (est.)")

    return pd.DataFrame(
        {
            "model": [labels.get(name, name) for name in table["model"]],
            "regime": table["regime"],
            "index": table["dtype"],
            "bytes / passage": table["bytes_per_passage"].round().astype(int),
            "index build (s)": table["index_seconds"].round(1),
            **{f"ms for {count:,}": [latency(row, count) for _, row in table.iterrows()] for count in counts},
        }
    )


def tests_display(tests: Mapping[tuple[str, str], pd.DataFrame]) -> pd.DataFrame:
    """``tests`` ((set, regime) → :func:`lib.evaluation.time_budget.paired_at_budgets` frame) as one table: a row per
    budget, a column per (set, regime), each cell ``delta (depths) p=…`` with ``*`` where significant."""

    def cell(row: pd.Series) -> str:
        star = "*" if row["significant"] else ""
        return f"{row['delta']:+.3f} ({row['model depth']} / {row['rival depth']}) p={row['p_bonferroni']:.3f}{star}"

    columns = {
        f"{query_set.upper()} {regime}": pd.Series([cell(row) for _, row in frame.iterrows()], index=frame["budget_ms"])
        for (query_set, regime), frame in tests.items()
    }
    table = pd.DataFrame(columns)
    table.index = [f"{budget:g}" for budget in table.index]
    table.index.name = "budget (ms)"
    return table.reset_index()


def stored_slower(committed: pd.DataFrame) -> str:
    """A sentence on :func:`lib.evaluation.regimes.committed_regimes`' frame: per device, the models whose cheaper
    stored index takes longer than running them whole at the largest count (reading the index costs more than the
    passage side it saves)."""
    column = [c for c in committed.columns if c.startswith("ms for ")][-1]
    found = []
    for device, rows in committed.groupby("device", sort=True):
        stored = rows[rows["regime"] == "stored"].groupby("model")[column].min()
        whole = rows[rows["regime"] == "whole"].set_index("model")[column]
        slower = [f"{model} ({stored[model]:,.1f} against {whole[model]:,.1f} ms)" for model in stored.index
                  if model in whole.index and stored[model] > whole[model]]  # fmt: skip
        found.append(
            f"On the {device}, stored indexes cost more than running the model whole at {column[7:]} candidates for "
            f"{', '.join(slower)}." if slower else f"On the {device}, every stored index is cheaper than running "
            f"its model whole at {column[7:]} candidates."
        )  # fmt: skip
    return " ".join(found)


def thesis_finding(
    students: pd.DataFrame,
    tests: Mapping[str, pd.DataFrame],
    query_set: str,
    budgets: Sequence[float],
    labels: Mapping[str, str],
) -> str:
    """The reading's bullet on the paper's thesis in both regimes, for ``query_set``: at each of ``budgets`` (those
    of ``students``' grid, a :func:`lib.evaluation.time_budget.student_leaders` table) the best student(s) of each
    regime, and ``tests`` (regime → a :func:`lib.evaluation.time_budget.paired_at_budgets` frame) at that budget."""
    by_budget = students.set_index("budget (ms)")
    parts = []
    for regime, test in tests.items():
        tested = test.set_index("budget_ms")
        cells = []
        for budget in budgets:
            key = f"{budget:g}"
            if key not in by_budget.index or budget not in tested.index:
                continue
            row = tested.loc[budget]
            verdict = (
                "no difference" if row["delta"] == 0
                else f"{labels.get(ahead := row['model'] if row['delta'] > 0 else row['rival'], ahead)} ahead, "
                + ("significantly" if row["significant"] else "not significantly")
            )  # fmt: skip
            cells.append(f"{key} ms: {by_budget.loc[key, f'{regime}: best student(s)']} ({verdict})")
        if cells:
            parts.append(f"*{regime}* — " + "; ".join(cells))
    return (
        f"- **The thesis in both regimes ({query_set.upper()} nDCG@10).** The best student under a budget, and in "
        f"brackets the chosen TK against BERT-cat there (paired t-test, Bonferroni over the budgets): "
        + ". ".join(parts)
        + "."
    )


def _student_spans(frame: pd.DataFrame, teacher: str, measure: str) -> pd.DataFrame:
    return time_budget.leading_spans(frame[frame["model"] != teacher], measure)


def regimes_reading(
    frames: Mapping[tuple[str, str], pd.DataFrame],
    tests: Mapping[tuple[str, str], pd.DataFrame],
    teacher: str,
    tks: Sequence[str],
    labels: Mapping[str, str],
    measure: str = "nDCG@10",
) -> str:
    """Markdown bullets, one per (set, regime) of ``frames``: the budget ranges over which each student leads, the
    TKs of ``tks`` among them or not, and the budgets at which ``tests``' model and rival differ significantly
    (Bonferroni over the budgets) or not."""
    bullets = []
    for (query_set, regime), frame in frames.items():
        spans = _student_spans(frame, teacher, measure)
        leaders = _takeover(spans, labels)
        leading_tks = [labels.get(name, name) for name in tks if leading_ranges(spans, name) != "never"]
        tk_text = (
            f"a TK leads ({', '.join(leading_tks)})" if leading_tks else "no TK leads at any budget among the students"
        )
        test = tests[query_set, regime]
        model, rival = (labels.get(test[column].iloc[0], test[column].iloc[0]) for column in ("model", "rival"))
        differs = test[test["delta"] != 0]
        significant = differs[differs["significant"]]
        not_significant = differs[~differs["significant"]]
        parts = [f"significantly different at {_budgets(significant)} ms"] if not significant.empty else []
        parts += [f"not significantly different at {_budgets(not_significant)} ms"] if not not_significant.empty else []
        tested = (
            f"{model} against {rival}: {', '.join(parts)}"
            if parts
            else f"{model} and {rival} rank alike at every tested budget"
        )
        bullets.append(
            f"- **{query_set.upper()}, {regime}** — {leaders}; {tk_text}. "
            f"{tested} (paired t-tests, Bonferroni over the {len(test)} budgets; the teacher, "
            f"{labels.get(teacher, teacher)}, is a reference, not a contestant)."
        )
    return "\n".join(bullets)


def _takeover(spans: pd.DataFrame, labels: Mapping[str, str]) -> str:
    """Who leads the students at the largest budgets and from which budget on, and how often the lead changes hands
    below it (the best-student table and the figure give every range)."""
    final = spans[spans["to_ms"] == math.inf]
    names = " = ".join(labels.get(name, name) for name in final["model"])
    start = float(final["from_ms"].max())
    when = "at every budget" if start <= 0 else f"from {budget_ms(start)} ms per query on"
    text = f"{names} {'is' if len(final) == 1 else 'are'} the best student {when}"
    below = spans[spans["from_ms"] < start]
    if below.empty:
        return text
    others = ", ".join(labels.get(name, name) for name in dict.fromkeys(below.sort_values("from_ms")["model"]))
    return text + f"; below that the lead changes hands {len(below)} times among {others}"


def _budgets(rows: pd.DataFrame) -> str:
    return ", ".join(f"{budget:g}" for budget in rows["budget_ms"])


def compact_reading(costs: pd.DataFrame, reference: str, rival: str) -> str:
    """A bullet per compact index of :func:`lib.evaluation.regimes.compact_costs` (``reference``: the full TK;
    ``rival``: what it is timed against, and tested against where the costs carry the test)."""
    years = [column.split()[0] for column in costs.columns if column.endswith(" delta")]

    def year(row: pd.Series, y: str) -> str:
        against_rival = f", against {rival}: {row[f'{y} vs rival']}" if f"{y} vs rival" in row.index else ""
        return (f"{y} nDCG@10 {row[f'{y} nDCG@10']:.3f}, {row[f'{y} delta']:+.3f} against {reference} "
                f"({'' if row[f'{y} differs'] else 'not '}significantly different, p = {row[f'{y} p']}), "
                f"{'' if row[f'{y} above BM25'] else 'not '}significantly above BM25{against_rival}")  # fmt: skip

    def stored(row: pd.Series) -> str:
        share = row.get("vectors share", 1.0)
        if pd.isna(share) or abs(share - 1.0) < 0.005:
            return ""
        return f", storing {share:.0%} of {reference}'s vectors"

    return "\n".join(
        f"- **{row['model']}**: {row['bytes']:,} bytes per passage ({row['dtype']}; {reference} {row['full bytes']:,} "
        f"in {row['full dtype']}, {row['full bytes'] / max(row['bytes'], 1):.1f}× as many{stored(row)}), "
        f"{row['ms']:.1f} ms for "
        f"{row['count']:,} stored candidates — {row['× rival']:.0f}× faster than {rival} run whole "
        f"({row['rival ms']:,.0f} ms); " + "; ".join(year(row, y) for y in years) + "."
        for _, row in costs.iterrows()
    )


def pq_choice(model: str, validation: Mapping[str, float], chosen: int, tolerance: float) -> pd.DataFrame:
    """The product quantiser's number of codes for ``model`` (its label) as chosen on validation
    (:func:`lib.experiments.regime_costs.pq_variant` — ``validation`` maps ``"float16"`` and each number tried to its
    validation nDCG@10): a row each, its difference from the unquantised index, whether that is within ``tolerance``
    and which was ``chosen``."""
    reference = validation["float16"]
    rows = [{"model": model, "index": "float16 (unquantised)", "validation nDCG@10": reference, "difference": 0.0,
             "within": "—", "chosen": ""}]  # fmt: skip
    for key in sorted((key for key in validation if key != "float16"), key=int):
        value = validation[key]
        rows.append({"model": model, "index": f"PQ, {key} codes", "validation nDCG@10": value,
                     "difference": value - reference,
                     "within": "yes" if value >= reference - tolerance else "no",
                     "chosen": "✓" if int(key) == chosen else ""})  # fmt: skip
    return pd.DataFrame(rows)


def fit_robustness(values: Mapping[str, Mapping[str, pd.Series]], book: str, outside: str) -> pd.DataFrame:
    """Per test year (``values``: per-query nDCG@10 by run), the PQ index with the book's codebooks (``book``: fitted
    on training passages, some of them in the test pools) beside the same index with codebooks fitted on passages
    outside every test pool (``outside``): both means, the difference and the paired t-test, read with its sign."""
    rows = []
    for year, by_run in values.items():
        test = pairwise_tests({book: by_run[book], outside: by_run[outside]}).iloc[0]
        delta = float(by_run[outside].mean() - by_run[book].mean())
        rows.append(
            {
                "set": year.upper(),
                "the book's fit": float(by_run[book].mean()),
                "fitted outside the test pools": float(by_run[outside].mean()),
                "difference": delta,
                "p": float(test["p_bonferroni"]),
                "outside vs the book's": verdict(delta, bool(test["significant"])),
            }
        )
    return pd.DataFrame(rows)


def cold_reading(frame: pd.DataFrame, count: int, bound: float = 2.0) -> str:
    """A bullet per model of each result in :func:`lib.evaluation.cold_reads.committed_cold_reads`' frame (its device,
    date and clock's precision): its warm and cold latencies at ``count`` candidates (cold with the kernel's
    read-around, with random-access reads and as the library serves an index, every candidate's rows asked for at
    once), each cold one as a multiple of warm, what it adds to warm in ms (the disk's share, which a faster query
    encoder does not hide) and whether it is within ``bound`` × warm, and its index's size projected to MS MARCO beside
    ColBERTv2's published sizes."""
    from lib.evaluation.cold_reads import COLBERTV2_MSMARCO as published
    from lib.evaluation.cold_reads import PROJECTED

    if frame.empty:
        return "*No cold-read benchmark is committed under `benchmarks/results/cold/` yet.*"
    column = f"ms for {count:,}"
    bullets = []
    for (device, date, precision, model), rows in frame.groupby(["device", "date", "precision", "model"], sort=False):
        by_state = rows.set_index("state")
        warm = float(by_state.loc["warm", column])
        colds = []
        for state, words in (
            ("cold", "cold"), ("cold-random", "cold, read at random"),
            ("cold-prefetched", "cold, served with its candidates' rows asked for at once"),
        ):  # fmt: skip
            if state in by_state.index:
                ms = float(by_state.loc[state, column])
                within = "within" if ms <= bound * warm else "beyond"
                colds.append(f"{words} {ms:,.1f} ms ({ms / warm:.1f}× warm, {ms - warm:+,.1f} ms, {within} {bound:g}×)")
        bullets.append(
            f"- **{model}** ({by_state['index'].iloc[0]}, {int(by_state['passages'].iloc[0]):,} passages; {device}, "
            f"{date}, {precision}): warm {warm:,.1f} ms, " + ", ".join(colds) + f" for {count:,} candidates; its index "
            f"at MS MARCO's size {float(by_state[PROJECTED].iloc[0]):,.1f} GiB (ColBERTv2's: {published['gib']:g} GiB "
            f"at {published['bits_per_dimension']} bits per dimension, {published['one_bit_gib']:g} GiB at 1; "
            f"ColBERT's uncompressed: {published['colbert_gib']:g} GiB)."
        )
    return "\n".join(bullets)


__all__ = [
    "cold_reading",
    "compact_reading", "cost_display", "fit_robustness", "pq_choice", "regimes_reading", "stored_slower",
    "tests_display", "thesis_finding",
]  # fmt: skip
