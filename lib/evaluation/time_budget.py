"""Time-budget-aware evaluation (TK paper §5.2, Figure 2; lecture 8, slides 25–26).

A search engine gives its re-ranker ``T`` milliseconds per query. A model that scores ``r`` documents
per millisecond re-ranks the first stage's top ``depth(T) = min(D, ⌊T·r⌋)`` candidates in that time
(``D``: the deepest candidate it has a score for) and leaves the rest in first-stage order; its
effectiveness under budget ``T`` is its effectiveness at re-ranking depth ``depth(T)``. As the paper
does, every model scores all candidates once and every depth is evaluated from that one scoring pass
(:func:`lib.evaluation.depths.depth_sweep`): ``depth_curve`` is the mean of each measure per depth, and
``budget_curves`` maps budgets to depths through each model's measured speed.

Each curve is a step function of ``T`` that changes only at the budgets ``k / r`` (``k = 1 … D``), so
evaluating at those breakpoints (:func:`breakpoints`) gives every curve, every "best model per budget"
and every crossover exactly, not on a sampled grid.

A model whose passages are stored at index time (:mod:`lib.evaluation.regimes`) pays a fixed cost per query
before its first candidate — encoding the query — so its cost is affine, ``f + k / r``: every function here
takes an optional ``fixed_ms`` per model (0 by default, the paper's proportional cost), and ``depth(T)`` is
``min(D, ⌊(T − f)·r⌋)`` from ``T = f`` on, 0 before.

:func:`student_leaders` reads a distillation's budget curves in each regime: the best *student* (every model but
the teacher) under each budget, the teacher's value beside it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from lib.core.types import Qrels, Run
from lib.evaluation.comparison import pairwise_tests
from lib.evaluation.depths import depth_sweep
from lib.reranking.scoring import scored_depth

#: Tolerance of ``⌊T·r⌋`` against floating-point error at the breakpoints ``T = k / r``.
_FLOOR_TOLERANCE = 1e-9


def depth_at_budget(budget_ms: float, docs_per_ms: float, max_depth: int, fixed_ms: float = 0.0) -> int:
    """The re-ranking depth a model reaches in ``budget_ms``: ``min(max_depth, ⌊(budget_ms − f) · docs_per_ms⌋)``,
    0 while the budget does not cover the fixed cost ``f = fixed_ms`` per query.

    A budget of 0 gives depth 0 (the first stage's ranking). Negative or non-finite inputs are a
    ``ValueError`` naming the parameter.
    """
    if not math.isfinite(fixed_ms) or fixed_ms < 0:
        raise ValueError(f"parameter 'fixed_ms' must be a finite number >= 0, got {fixed_ms}")
    if not math.isfinite(budget_ms) or budget_ms < 0:
        raise ValueError(f"parameter 'budget_ms' must be a finite number >= 0, got {budget_ms}")
    if not math.isfinite(docs_per_ms) or docs_per_ms <= 0:
        raise ValueError(f"parameter 'docs_per_ms' must be a finite number > 0, got {docs_per_ms}")
    if max_depth < 0:
        raise ValueError(f"parameter 'max_depth' must be >= 0, got {max_depth}")
    if budget_ms < fixed_ms:
        return 0
    return min(int(max_depth), math.floor((budget_ms - fixed_ms) * docs_per_ms + _FLOOR_TOLERANCE))


def depth_curve(first_stage: Run, scores: Run, qrels: Qrels, measures: Sequence[str] | None = None) -> pd.DataFrame:
    """Mean effectiveness at every re-ranking depth 0 … D from one scoring pass, indexed by ``depth``.

    ``D`` is the deepest depth at which every query's candidates are scored
    (:func:`lib.reranking.scoring.scored_depth`); depth 0 is the first stage.
    """
    depths = range(0, scored_depth(first_stage, scores) + 1)
    frame = depth_sweep(first_stage, scores, qrels, depths, measures)
    if frame.empty:
        raise ValueError("no query of the first stage is judged in the qrels: no curve to draw")
    return frame.drop(columns="qid").groupby("depth").mean()


def breakpoints(
    speeds: Mapping[str, float], max_depths: Mapping[str, int], fixed_ms: Mapping[str, float] | None = None
) -> np.ndarray:
    """Every budget (ms) at which some model's depth changes — ``f + k / r`` for ``k = 1 … D`` (``f``: the model's
    ``fixed_ms``, 0 if not given) — with 0, sorted."""
    budgets = {0.0}
    for model, rate in speeds.items():
        if not math.isfinite(rate) or rate <= 0:
            raise ValueError(f"speed of model {model!r} must be a finite number > 0, got {rate}")
        fixed = (fixed_ms or {}).get(model, 0.0)
        budgets.update(fixed + k / rate for k in range(1, int(max_depths[model]) + 1))
    return np.array(sorted(budgets))


def first_stage_curve(curve: pd.DataFrame) -> pd.DataFrame:
    """The first stage as a "model" of :func:`budget_curves` that never re-ranks: depth 0 of any depth curve."""
    return curve.loc[[0]]


def budget_curves(
    curves: Mapping[str, pd.DataFrame],
    speeds: Mapping[str, float],
    budgets: Iterable[float],
    fixed_ms: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """Effectiveness under each budget: a long frame ``model, budget_ms, depth, <measure…>``.

    ``curves`` are :func:`depth_curve` frames per model, ``speeds`` the models' documents per ms, ``fixed_ms`` their
    fixed costs per query (0 if not given). A curve that holds depth 0 only (:func:`first_stage_curve`) needs no
    speed: it stays at depth 0.
    """
    budgets = list(budgets)
    frames = []
    for model, curve in curves.items():
        max_depth = int(curve.index.max())
        if max_depth > 0 and model not in speeds:
            raise ValueError(f"no speed given for model {model!r}")
        fixed = (fixed_ms or {}).get(model, 0.0)
        depths = [depth_at_budget(budget, speeds.get(model, 1.0), max_depth, fixed) for budget in budgets]
        frame = curve.loc[depths].reset_index()
        frame.insert(0, "budget_ms", budgets)
        frame.insert(0, "model", model)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def leaders(frame: pd.DataFrame, measure: str, min_depth: int = 2, tolerance: float = 1e-12) -> pd.DataFrame:
    """At each budget of a :func:`budget_curves` frame, the best value and every model that reaches it.

    Columns ``budget_ms, best, leaders`` (a tuple of model names, in the frame's order, tied within
    ``tolerance``). When the first stage (a never-re-ranking model, :func:`first_stage_curve`) is
    among the best, a re-ranker that re-ranks fewer than ``min_depth`` candidates there is not listed
    beside it: with 0 or 1 re-ranked candidates it has changed nothing and merely *is* the first stage.
    """
    order = list(dict.fromkeys(frame["model"]))
    first_stages = {model for model, depths in frame.groupby("model")["depth"] if depths.max() == 0}
    rows = []
    for budget, group in frame.groupby("budget_ms", sort=True):
        values = group.set_index("model")
        best = float(values[measure].max())
        tied = [model for model in order if model in values.index and values.loc[model, measure] >= best - tolerance]
        if first_stages & set(tied):
            tied = [model for model in tied if model in first_stages or values.loc[model, "depth"] >= min_depth]
        rows.append({"budget_ms": float(budget), "best": best, "leaders": tuple(tied)})
    return pd.DataFrame(rows)


def budget_grid(largest_ms: float) -> list[float]:
    """Budgets 1, 2, 5 × 10^k ms from 1 ms up to twice ``largest_ms`` (a budget table's rows: the breakpoints give
    every curve exactly, a table reads it at round budgets)."""
    top = max(float(largest_ms), 1.0)
    return [m * 10.0**e for e in range(0, int(math.log10(top)) + 2) for m in (1, 2, 5) if m * 10.0**e <= top * 2]


def best_per_budget(frame: pd.DataFrame, measure: str, budgets: Sequence[float]) -> pd.DataFrame:
    """The best model(s) under each of ``budgets``: ``budget_ms, best, leaders, <model…>`` (each model's value).

    Each budget is evaluated at the last breakpoint of ``frame`` not above it (curves are step functions),
    so ``frame`` must hold the breakpoints (:func:`breakpoints`).
    """
    known = np.array(sorted(frame["budget_ms"].unique()))
    wide = frame.pivot(index="budget_ms", columns="model", values=measure)[list(dict.fromkeys(frame["model"]))]
    table = leaders(frame, measure).set_index("budget_ms")
    rows = []
    for budget in budgets:
        if budget < 0:
            raise ValueError(f"budgets must be >= 0, got {budget}")
        at = float(known[np.searchsorted(known, budget, side="right") - 1])
        rows.append({"budget_ms": float(budget), **table.loc[at].to_dict(), **wide.loc[at].to_dict()})
    return pd.DataFrame(rows)


def crossover(frame: pd.DataFrame, measure: str, model: str, rival: str) -> float | None:
    """The smallest budget from which ``rival`` stays strictly better than ``model`` under every larger budget.

    ``None`` if ``rival`` is not better under the largest budget of ``frame`` (it never overtakes for good).
    The paper's "TK is the best choice up to X ms" is the crossover of TK with the model that overtakes it.
    """
    wide = frame.pivot(index="budget_ms", columns="model", values=measure).sort_index()
    for name in (model, rival):
        if name not in wide.columns:
            raise ValueError(f"model {name!r} is not in the frame (models: {list(wide.columns)})")
    ahead = (wide[rival] > wide[model] + 1e-12).to_numpy()
    if not ahead[-1]:
        return None
    behind = np.flatnonzero(~ahead)
    start = 0 if behind.size == 0 else behind[-1] + 1
    return float(wide.index[start])


def leading_spans(frame: pd.DataFrame, measure: str) -> pd.DataFrame:
    """The budget ranges over which each model is (among) the best: ``model, from_ms, to_ms, best``.

    A span starts at a breakpoint where the model leads and ends at the first breakpoint where it no
    longer does (``to_ms`` is ``inf`` when it leads up to the largest budget of ``frame``); ``best``
    is the model's best value within the span. Ties count as leading, so spans of tied models overlap.
    """
    table = leaders(frame, measure)
    budgets = table["budget_ms"].to_list()
    rows = []
    for model in dict.fromkeys(frame["model"]):
        leading = [model in tied for tied in table["leaders"]] + [False]
        start = None
        for index, leads in enumerate(leading):
            if leads and start is None:
                start = index
            elif not leads and start is not None:
                rows.append(
                    {
                        "model": model,
                        "from_ms": budgets[start],
                        "to_ms": budgets[index] if index < len(budgets) else math.inf,
                        "best": float(table["best"].iloc[start:index].max()),
                    }
                )
                start = None
    return pd.DataFrame(rows, columns=["model", "from_ms", "to_ms", "best"])


def per_query_at_depth(first_stage: Run, scores: Run, qrels: Qrels, depth: int, measure: str) -> pd.Series:
    """Each judged query's ``measure`` when the top ``depth`` candidates are re-ranked by ``scores``, by qid."""
    frame = depth_sweep(first_stage, scores, qrels, [depth], [measure])
    return frame.set_index("qid")[measure]


def paired_at_budgets(
    first_stage: Run,
    scores: Mapping[str, Run],
    costs: Mapping[str, tuple[float, float]],
    qrels: Qrels,
    budgets: Sequence[float],
    measure: str,
) -> pd.DataFrame:
    """Two models compared under each of ``budgets`` by a paired two-tailed t-test over the judged queries.

    ``scores`` and ``costs`` name the same two models (the first is ``model``, the second ``rival``); a cost is
    ``(fixed_ms, docs_per_ms)``. Each model re-ranks the depth its cost reaches under the budget
    (:func:`depth_at_budget`); the p-values are Bonferroni-corrected over the budgets. One row per budget:
    ``budget_ms, model, rival, model depth, rival depth, model, rival`` (the means), ``delta`` (model − rival),
    ``p``, ``p_bonferroni``, ``significant``, ``queries``.
    """
    if len(scores) != 2 or set(scores) != set(costs):
        raise ValueError(f"paired_at_budgets compares two models with a cost each, got {list(scores)} / {list(costs)}")
    model, rival = scores
    max_depths = {name: scored_depth(first_stage, run) for name, run in scores.items()}
    rows = []
    for budget in budgets:
        depths = {
            name: depth_at_budget(budget, costs[name][1], max_depths[name], costs[name][0]) for name in (model, rival)
        }
        values = {name: per_query_at_depth(first_stage, scores[name], qrels, depths[name], measure) for name in depths}
        test = pairwise_tests(values).iloc[0]  # one pair: its p is the uncorrected p
        rows.append({
            "budget_ms": float(budget), "model": model, "rival": rival, "model depth": depths[model],
            "rival depth": depths[rival], "model mean": float(test["mean"]), "rival mean": float(test["mean against"]),
            "delta": float(test["delta"]), "p": float(test["p"]), "queries": int(test["queries"]),
        })  # fmt: skip
    table = pd.DataFrame(rows)
    table["p_bonferroni"] = (table["p"] * max(len(table), 1)).clip(upper=1.0)
    table["significant"] = table["p_bonferroni"] < 0.05
    return table


def student_leaders(
    frames: Mapping[str, pd.DataFrame], teacher: str, budgets: Sequence[float], labels: Mapping[str, str], measure: str
) -> pd.DataFrame:
    """Per budget of ``budgets``: each regime's best student(s) (every model but ``teacher``, BM25 included) and
    their value, and the teacher's value in each regime. ``frames``: regime → budget-curves frame."""
    table = pd.DataFrame({"budget (ms)": [f"{budget:g}" for budget in budgets]})
    for regime, frame in frames.items():
        best = best_per_budget(frame[frame["model"] != teacher], measure, budgets)
        table[f"{regime}: best student(s)"] = [" = ".join(labels.get(m, m) for m in tied) for tied in best["leaders"]]
        table[f"{regime}: {measure}"] = best["best"].round(4).to_numpy()
        table[f"{regime}: teacher"] = best_per_budget(frame, measure, budgets)[teacher].round(4).to_numpy()
    return table
