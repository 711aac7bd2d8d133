"""Time-budget evaluation: depth at a budget, per-depth curves from one scoring pass, leaders and crossovers."""

from __future__ import annotations

import math

import matplotlib
import pandas as pd
import pytest
import torch

from lib.chapters.time_budget_figure import plot_budget_curves, plot_regimes
from lib.evaluation.measures import evaluate
from lib.evaluation.time_budget import (
    best_per_budget,
    breakpoints,
    budget_curves,
    budget_grid,
    crossover,
    depth_at_budget,
    depth_curve,
    first_stage_curve,
    leaders,
    leading_spans,
    paired_at_budgets,
    student_leaders,
)
from lib.reranking.scoring import rerank, score_candidates
from tests.training import test_pairwise as test_training
from tests.training.test_pairwise import BagModel, HashTokenizer

matplotlib.use("Agg")

#: The shared slice of the real data: DL19 queries and judgments with their BM25 top-20 and v1 passages.
dl19 = test_training.dl19

# --- depth at a budget --------------------------------------------------------------------------------


def test_zero_budget_is_depth_zero() -> None:
    assert depth_at_budget(0.0, docs_per_ms=250.0, max_depth=100) == 0


def test_huge_budget_is_the_maximum_depth() -> None:
    assert depth_at_budget(1e12, docs_per_ms=0.001, max_depth=100) == 100
    assert depth_at_budget(1e12, docs_per_ms=1e6, max_depth=0) == 0


def test_depth_is_the_floor_of_budget_times_speed() -> None:
    assert depth_at_budget(10.0, docs_per_ms=0.45, max_depth=100) == 4
    assert depth_at_budget(9.99, docs_per_ms=1.0, max_depth=100) == 9
    # exactly at a breakpoint k / r, despite 3 * (1 / 3) != 1 in floating point
    for k in range(1, 60):
        assert depth_at_budget(k / 0.3, docs_per_ms=0.3, max_depth=1000) == k


@pytest.mark.parametrize(
    ("budget", "speed", "depth", "name"),
    [(-1.0, 1.0, 10, "budget_ms"), (math.nan, 1.0, 10, "budget_ms"), (1.0, 0.0, 10, "docs_per_ms"),
     (1.0, math.inf, 10, "docs_per_ms"), (1.0, 1.0, -1, "max_depth")],
)  # fmt: skip
def test_bad_budget_inputs_name_the_parameter(budget: float, speed: float, depth: int, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        depth_at_budget(budget, speed, depth)


# --- per-depth evaluation from one scoring pass ----------------------------------------------------------


def test_the_per_depth_curve_equals_rescoring_at_each_depth(dl19: dict) -> None:
    torch.manual_seed(0)
    model = BagModel(dropout=0.0)
    arguments = (model, HashTokenizer(), dl19["queries"], dl19["texts"], dl19["run"])
    once = score_candidates(*arguments, depth=None)
    curve = depth_curve(dl19["run"], once, dl19["qrels"], ["nDCG@10", "MRR@10", "R@10"])
    assert list(curve.index) == list(range(0, 21))
    for depth in (0, 1, 3, 10, 20):
        rescored = score_candidates(*arguments, depth=depth)  # the model run again on the top-depth only
        expected = evaluate(rerank(dl19["run"], rescored, depth), dl19["qrels"], ["nDCG@10", "MRR@10", "R@10"])
        for measure, value in expected.items():
            assert curve.loc[depth, measure] == pytest.approx(value, abs=1e-12), (depth, measure)
    assert curve.loc[0].to_dict() == pytest.approx(evaluate(dl19["run"], dl19["qrels"], list(curve.columns)))


# --- budget curves on hand-made depth curves ---------------------------------------------------------------

#: Two hand-made depth curves: a fast model that gains little and a slow one that gains a lot.
FAST = pd.DataFrame({"nDCG@10": [0.5, 0.52, 0.55, 0.56, 0.56]}, index=pd.Index(range(5), name="depth"))
SLOW = pd.DataFrame({"nDCG@10": [0.5, 0.6, 0.7, 0.75, 0.8]}, index=pd.Index(range(5), name="depth"))
SPEEDS = {"fast": 1.0, "slow": 0.1}  # documents per ms: depth 4 after 4 ms and after 40 ms


@pytest.fixture
def frame() -> pd.DataFrame:
    curves = {"fast": FAST, "slow": SLOW, "bm25": first_stage_curve(FAST)}
    return budget_curves(curves, SPEEDS, breakpoints(SPEEDS, {"fast": 4, "slow": 4}))


def test_breakpoints_are_every_k_over_r() -> None:
    assert list(breakpoints(SPEEDS, {"fast": 4, "slow": 4})) == pytest.approx([0, 1, 2, 3, 4, 10, 20, 30, 40])
    with pytest.raises(ValueError, match="'fast'"):
        breakpoints({"fast": 0.0}, {"fast": 3})


def test_a_fixed_cost_per_query_delays_every_depth() -> None:
    """Stored passages: the query is encoded first (f ms), then r documents per ms."""
    assert depth_at_budget(2.9, 10.0, 100, fixed_ms=3.0) == 0
    assert depth_at_budget(3.0, 10.0, 100, fixed_ms=3.0) == 0
    assert depth_at_budget(3.35, 10.0, 100, fixed_ms=3.0) == 3
    assert depth_at_budget(100.0, 10.0, 100, fixed_ms=3.0) == 100
    with pytest.raises(ValueError, match="'fixed_ms'"):
        depth_at_budget(1.0, 1.0, 10, fixed_ms=-1.0)
    assert list(breakpoints({"stored": 1.0}, {"stored": 2}, {"stored": 5.0})) == pytest.approx([0, 6, 7])
    curves = budget_curves({"stored": SLOW}, {"stored": 1.0}, [0.0, 5.5, 6.0, 8.0], fixed_ms={"stored": 5.0})
    assert curves["depth"].to_list() == [0, 0, 1, 3]


def test_budget_curves_map_budgets_to_depths(frame: pd.DataFrame) -> None:
    slow = frame[frame["model"] == "slow"].set_index("budget_ms")
    assert slow.loc[0.0, "depth"] == 0 and slow.loc[0.0, "nDCG@10"] == 0.5
    assert slow.loc[4.0, "depth"] == 0  # 4 ms * 0.1 docs/ms
    assert slow.loc[20.0, "depth"] == 2 and slow.loc[20.0, "nDCG@10"] == 0.7
    assert slow.loc[40.0, "depth"] == 4
    assert (frame[frame["model"] == "bm25"]["depth"] == 0).all()
    with pytest.raises(ValueError, match="no speed given for model 'slow'"):
        budget_curves({"slow": SLOW}, {}, [0.0, 1.0])


def test_leaders_and_best_per_budget(frame: pd.DataFrame) -> None:
    table = leaders(frame, "nDCG@10").set_index("budget_ms")
    assert table.loc[0.0, "leaders"] == ("bm25",)  # nobody re-ranks: the re-rankers merely are the first stage
    assert table.loc[1.0, "leaders"] == ("fast",)  # this hand-made curve gains at depth 1 (a real one cannot)
    assert table.loc[2.0, "leaders"] == ("fast",)
    assert table.loc[20.0, "leaders"] == ("slow",)
    best = best_per_budget(frame, "nDCG@10", [0.5, 3.5, 15.0, 1000.0])
    assert [row for row in best["leaders"]] == [("bm25",), ("fast",), ("slow",), ("slow",)]
    assert best["best"].tolist() == pytest.approx([0.5, 0.56, 0.6, 0.8])  # 3.5 ms: fast at depth 3
    assert best.loc[1, "slow"] == 0.5 and best.loc[1, "fast"] == 0.56


def test_crossover_and_leading_spans(frame: pd.DataFrame) -> None:
    # slow (0.6 at 10 ms) overtakes fast (0.56 from 4 ms on) at 10 ms and stays ahead
    assert crossover(frame, "nDCG@10", "fast", "slow") == pytest.approx(10.0)
    assert crossover(frame, "nDCG@10", "slow", "fast") is None
    spans = leading_spans(frame, "nDCG@10")
    as_tuples = [(row.model, row.from_ms, row.to_ms, round(row.best, 6)) for row in spans.itertuples()]
    # the first stage leads until fast re-ranks at 1 ms; fast leads until slow overtakes it at 10 ms for good
    assert as_tuples == [("fast", 1.0, 10.0, 0.56), ("slow", 10.0, math.inf, 0.8), ("bm25", 0.0, 1.0, 0.5)]
    with pytest.raises(ValueError, match="'nope'"):
        crossover(frame, "nDCG@10", "fast", "nope")


def test_a_model_that_reranks_one_candidate_is_not_listed_beside_the_first_stage() -> None:
    flat_start = pd.DataFrame({"nDCG@10": [0.5, 0.5, 0.5, 0.7]}, index=pd.Index(range(4), name="depth"))
    curves = {"model": flat_start, "bm25": first_stage_curve(flat_start)}
    frame = budget_curves(curves, {"model": 1.0}, breakpoints({"model": 1.0}, {"model": 3}))
    table = leaders(frame, "nDCG@10").set_index("budget_ms")
    assert table.loc[1.0, "leaders"] == ("bm25",)  # depth 1: nothing changed
    assert table.loc[2.0, "leaders"] == ("model", "bm25")  # depth 2: a real re-ranking that ties
    assert table.loc[3.0, "leaders"] == ("model",)
    assert leaders(frame, "nDCG@10", min_depth=1).set_index("budget_ms").loc[1.0, "leaders"] == ("model", "bm25")


def test_figure_has_one_panel_per_measure(frame: pd.DataFrame) -> None:
    figure = plot_budget_curves(frame, ["nDCG@10"], {"nDCG@10": 0.5}, labels={"slow": "Slow model"})
    (ax,) = figure.axes
    assert ax.get_xscale() == "log"
    assert "Slow model" in [text.get_text() for text in ax.get_legend().get_texts()]
    with pytest.raises(ValueError, match="positive budget"):
        plot_budget_curves(frame[frame["budget_ms"] == 0], ["nDCG@10"], {"nDCG@10": 0.5})


def test_the_figure_marks_the_depth_validation_chose_beside_the_hindsight_best(frame: pd.DataFrame) -> None:
    figure = plot_budget_curves(frame, ["nDCG@10"], {"nDCG@10": 0.5}, chosen_depths={"slow": 1})
    (ax,) = figure.axes
    diamonds = [line for line in ax.get_lines() if line.get_marker() == "D"]
    slow = frame[(frame["model"] == "slow") & (frame["depth"] >= 1)].iloc[0]
    assert len(diamonds) == 1 and diamonds[0].get_xydata().tolist() == [[slow["budget_ms"], slow["nDCG@10"]]]
    legend = [text.get_text() for text in ax.get_legend().get_texts()]
    assert legend[-2:] == ["best on this test year (hindsight)", "depth chosen on validation"]
    plain = plot_budget_curves(frame, ["nDCG@10"], {"nDCG@10": 0.5})
    assert not [line for line in plain.axes[0].get_lines() if line.get_marker() == "D"]


def test_regimes_figure_has_one_panel_per_regime_and_draws_the_teacher_dashed(frame: pd.DataFrame) -> None:
    labels = {"slow": "Slow model", "fast": "Fast (teacher)", "bm25": "BM25"}
    figure = plot_regimes({"whole": frame, "stored": frame}, "nDCG@10", 0.5, labels, teacher="fast")
    whole, stored = figure.axes
    assert [whole.get_title(), stored.get_title()] == ["whole", "stored"]
    teacher_lines = [line for line in stored.get_lines() if line.get_label() == "Fast (teacher)"]
    assert teacher_lines and all(line.get_linestyle() == "--" for line in teacher_lines)
    assert "Slow model" in [text.get_text() for text in stored.get_legend().get_texts()]


def test_paired_at_budgets_tests_each_model_at_the_depth_its_cost_reaches() -> None:
    """Three queries whose relevant passage BM25 ranks last: a model that puts it first helps only once it
    re-ranks all three candidates; the tests are paired over the queries and corrected over the budgets."""
    first_stage = {q: {f"{q}a": 3.0, f"{q}b": 2.0, f"{q}c": 1.0} for q in ("q1", "q2", "q3")}
    qrels = {q: {f"{q}c": 1} for q in first_stage}
    good = {q: {f"{q}a": 0.0, f"{q}b": 0.1, f"{q}c": 1.0} for q in first_stage}
    good["q3"]["q3b"] = 2.0  # ranks q3's relevant passage second
    same_as_bm25 = {q: dict(candidates) for q, candidates in first_stage.items()}
    table = paired_at_budgets(
        first_stage, {"good": good, "bm25-like": same_as_bm25}, {"good": (2.0, 1.0), "bm25-like": (0.0, 10.0)},
        qrels, [1.0, 5.0], "MRR@10",
    )  # fmt: skip
    assert table["model depth"].to_list() == [0, 3] and table["rival depth"].to_list() == [3, 3]
    first, second = table.to_dict(orient="records")
    assert first["delta"] == 0 and first["p"] == 1.0  # under 1 ms the fixed cost leaves BM25's order
    assert (
        second["model mean"] == pytest.approx(2.5 / 3)
        and second["rival mean"] == pytest.approx(1 / 3)
        and second["queries"] == 3
    )
    assert (table["p_bonferroni"] == (table["p"] * 2).clip(upper=1)).all()
    with pytest.raises(ValueError, match="two models"):
        paired_at_budgets(first_stage, {"good": good}, {"good": (0.0, 1.0)}, qrels, [1.0], "MRR@10")


def test_the_best_student_leaves_the_teacher_out_and_shows_its_value() -> None:
    speeds = {"tk": 1.0, "bert": 0.1, "teacher": 0.1}
    curves = {
        "tk": pd.DataFrame({"nDCG@10": [0.5, 0.6, 0.65]}, index=pd.Index(range(3), name="depth")),
        "bert": pd.DataFrame({"nDCG@10": [0.5, 0.7, 0.8]}, index=pd.Index(range(3), name="depth")),
        "teacher": pd.DataFrame({"nDCG@10": [0.5, 0.75, 0.9]}, index=pd.Index(range(3), name="depth")),
    }
    curves["bm25"] = first_stage_curve(curves["tk"])
    whole = budget_curves(curves, speeds, breakpoints(speeds, dict.fromkeys(speeds, 2)))
    table = student_leaders({"whole": whole}, "teacher", [1.0, 20.0], {"tk": "TK", "bert": "BERT-cat"}, "nDCG@10")
    assert table["whole: best student(s)"].to_list() == ["TK", "BERT-cat"]
    assert table["whole: nDCG@10"].to_list() == [0.6, 0.8]
    assert table["whole: teacher"].to_list() == [0.5, 0.9]  # better than every student: still not listed


def test_the_budget_grid_runs_one_two_five_from_one_ms_to_twice_the_largest() -> None:
    assert budget_grid(30.0) == [1.0, 2.0, 5.0, 10.0, 20.0, 50.0]
    assert budget_grid(0.3) == [1.0, 2.0], "never below 1 ms"
