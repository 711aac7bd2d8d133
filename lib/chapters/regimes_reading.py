"""Chapter 3's tables and reading of the two regimes (run whole, passages stored), from the numbers of the run.

- :func:`cost_display` — the cost table (``regimes.csv``) as a reader sees it: labels, sizes, latencies with
  "est." where a latency was estimated rather than measured;
- :func:`student_leaders` — the best *student* under each budget in each regime, the teacher's value beside it;
- :func:`tests_display` — one model against a rival under each budget, each cell with its corrected p;
- :func:`compact_table` — the compact TK indexes beside the full one: size, stored latency, effectiveness, tests;
- :func:`committed_regimes` — the cost tables ``python -m benchmarks.regimes`` committed (a GPU's, say), one frame;
  :func:`stored_slower` — where in them a stored index costs more than running the model whole;
- :func:`ladder_verdict` — chapter 2's 5× bar for each TK, run whole and with its passages stored;
- :func:`thesis_finding` — the chapter's closing bullet: the best student at a few budgets in each regime and
  whether the followed TK and BERT-cat differ significantly there;
- :func:`regimes_reading` — where the students lead in each regime, whether a TK leads once passages are stored,
  and where the order of the followed TK and BERT-cat is significant and where it is not.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from lib.chapters.speed_report import leading_ranges
from lib.evaluation import time_budget
from lib.evaluation.comparison import pairwise_tests


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


def student_leaders(
    frames: Mapping[str, pd.DataFrame], teacher: str, budgets: Sequence[float], labels: Mapping[str, str], measure: str
) -> pd.DataFrame:
    """Per budget of ``budgets``: each regime's best student(s) (every model but ``teacher``, BM25 included) and
    their value, and the teacher's value in each regime. ``frames``: regime → budget-curves frame."""
    table = pd.DataFrame({"budget (ms)": [f"{budget:g}" for budget in budgets]})
    for regime, frame in frames.items():
        best = time_budget.best_per_budget(frame[frame["model"] != teacher], measure, budgets)
        table[f"{regime}: best student(s)"] = [" = ".join(labels.get(m, m) for m in tied) for tied in best["leaders"]]
        table[f"{regime}: {measure}"] = best["best"].round(4).to_numpy()
        table[f"{regime}: teacher"] = time_budget.best_per_budget(frame, measure, budgets)[teacher].round(4).to_numpy()
    return table


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


def compact_table(
    table: pd.DataFrame,
    values: Mapping[str, Mapping[str, pd.Series]],
    names: Sequence[str],
    reference: str,
    labels: Mapping[str, str],
) -> pd.DataFrame:
    """One row per model of ``names``: its index's bytes per passage in each precision, its stored latency (cheapest
    index) at the two largest counts, and per test year its nDCG@10 re-ranking every candidate with paired tests
    against BM25 and against ``reference`` (the full TK; Bonferroni over the pairs of the year).

    ``table`` is the cost table; ``values`` maps a test year to per-query nDCG@10 series by model, ``"bm25"``
    included."""
    counts = sorted(int(column.split("_")[1]) for column in table.columns if column.startswith("ms_"))[-2:]
    tests = {
        year: pairwise_tests({name: by_model[name] for name in ["bm25", *names]}) for year, by_model in values.items()
    }
    rows = []
    for name in names:
        stored = table[(table["model"] == name) & (table["regime"] == "stored")].sort_values(f"ms_{counts[-1]}")
        row: dict[str, object] = {"model": labels.get(name, name)}
        for _, index in stored.sort_values("dtype").iterrows():
            row[f"bytes / passage ({index['dtype']})"] = int(round(index["bytes_per_passage"]))
        for count in counts:
            row[f"stored ms for {count:,}"] = round(float(stored.iloc[0][f"ms_{count}"]), 1)
        for year, by_model in values.items():
            row[f"{year.upper()} nDCG@10"] = round(float(by_model[name].mean()), 4)
            for against in ("bm25", reference):
                if against == name:
                    continue
                pair = tests[year][
                    ((tests[year]["run"] == against) & (tests[year]["against"] == name))
                    | ((tests[year]["run"] == name) & (tests[year]["against"] == against))
                ]
                star = "*" if bool(pair["significant"].iloc[0]) else ""
                row[f"{year.upper()} p vs {labels.get(against, against)}"] = (
                    f"{float(pair['p_bonferroni'].iloc[0]):.3f}{star}"
                )
        rows.append(row)
    return pd.DataFrame(rows)


def committed_regimes(folder: Path, labels: Mapping[str, str]) -> pd.DataFrame:
    """Every cost table committed under ``folder`` (``benchmarks/results/regimes/*.json``) as one frame: the file's
    device and date, then each row's model (labelled), regime, index, bytes per passage, latencies and, where the
    file measured it, the peak GPU memory torch held while the row was timed ("peak GPU MiB"). Empty (with those
    columns) when none is committed."""
    frames = []
    for path in sorted(folder.glob("*.json")):
        result = json.loads(path.read_text())
        rows = pd.DataFrame(result["rows"])
        counts = result["settings"]["counts"]
        memory = rows["peak_memory_mb"].round() if "peak_memory_mb" in rows else float("nan")
        frames.append(
            pd.DataFrame({
                "device": result["device"], "date": result["environment"]["date"][:10],
                "model": [labels.get(name, name) for name in rows["model"]], "regime": rows["regime"],
                "index": rows["dtype"], "bytes / passage": rows["bytes_per_passage"].round().astype(int),
                **{f"ms for {count:,}": rows[f"ms_{count}"].round(2) for count in counts},
                "peak GPU MiB": memory,
            })
        )  # fmt: skip
    columns = ["device", "date", "model", "regime", "index", "bytes / passage"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def stored_slower(committed: pd.DataFrame) -> str:
    """A sentence on :func:`committed_regimes`' frame: per device, the models whose cheaper stored index takes longer
    than running them whole at the largest count (reading the index costs more than the passage side it saves)."""
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


#: Chapter 2's bar: a TK is worth having beside BERT-cat when it re-ranks at least this many times as fast.
SPEED_BAR = 5.0


def ladder_verdict(table: pd.DataFrame, tks: Sequence[str], reference: str, labels: Mapping[str, str]) -> pd.DataFrame:
    """Per TK of ``tks``: its latency at 100 candidates run whole and stored (its cheaper index), how many times
    faster than ``reference`` run whole each is, and whether that reaches :data:`SPEED_BAR`."""
    count = (
        100 if "ms_100" in table.columns else max(int(c.split("_")[1]) for c in table.columns if c.startswith("ms_"))
    )
    column = f"ms_{count}"
    base = float(table[(table["model"] == reference) & (table["regime"] == "whole")][column].iloc[0])
    rows = []
    for name in tks:
        own = table[table["model"] == name]
        whole = float(own[own["regime"] == "whole"][column].iloc[0])
        stored_rows = own[own["regime"] == "stored"]
        stored = float(stored_rows[column].min()) if not stored_rows.empty else math.nan
        row = {"TK": labels.get(name, name), f"whole ms for {count}": whole, f"stored ms for {count}": stored}
        for regime, ms in (("whole", whole), ("stored", stored)):
            ratio = base / ms if ms > 0 else math.nan
            row[f"{regime}: × {labels.get(reference, reference)}"] = round(ratio, 1)
            row[f"{regime}: ≥ {SPEED_BAR:g}×"] = "yes" if ratio >= SPEED_BAR else "no"
        rows.append(row)
    return pd.DataFrame(rows)


def thesis_finding(
    students: pd.DataFrame,
    tests: Mapping[str, pd.DataFrame],
    query_set: str,
    budgets: Sequence[float],
    labels: Mapping[str, str],
) -> str:
    """The reading's bullet on the paper's thesis in both regimes, for ``query_set``: at each of ``budgets`` (those
    of ``students``' grid, a :func:`student_leaders` table) the best student(s) of each regime, and ``tests``
    (regime → a :func:`lib.evaluation.time_budget.paired_at_budgets` frame) at that budget."""
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
        leaders = [
            f"{labels.get(name, name)} {leading_ranges(spans, name)} ms" for name in dict.fromkeys(spans["model"])
        ]
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
            f"- **{query_set.upper()}, {regime}** — best student by budget: {'; '.join(leaders)}; {tk_text}. "
            f"{tested} (paired t-tests, Bonferroni over the {len(test)} budgets; the teacher, "
            f"{labels.get(teacher, teacher)}, is a reference, not a contestant)."
        )
    return "\n".join(bullets)


def _budgets(rows: pd.DataFrame) -> str:
    return ", ".join(f"{budget:g}" for budget in rows["budget_ms"])


__all__ = [
    "SPEED_BAR",
    "committed_regimes",
    "stored_slower",
    "compact_table",
    "cost_display",
    "ladder_verdict",
    "regimes_reading",
    "student_leaders",
    "tests_display",
    "thesis_finding",
]
