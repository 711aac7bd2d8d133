"""The speed-up decomposed into its steps (``lib.evaluation.speedup_steps``)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from lib.evaluation.speedup_steps import Step, chain, plot_steps, step_table, verdict

TABLE = pd.DataFrame({
    "model": ["bert-cat", "tk", "tk", "tk", "tk-pq"],
    "regime": ["whole", "whole", "stored", "stored", "stored"],
    "dtype": ["—", "—", "float16", "int8", "pq"],
    "bytes_per_passage": [0.0, 0.0, 65000.0, 33000.0, 5400.4],
    "ms_100": [1000.0, 400.0, 20.0, 16.0, 8.0],
    "ms_1000": [10000.0, 4000.0, 150.0, 120.0, 60.0],
    "measured_100": [True] * 5,
    "measured_1000": [False, True, True, True, True],
})  # fmt: skip
STEPS = [
    Step("MiniLM-6 cross-encoder run whole", "bert-cat", "whole", "—", "bert-cat"),
    Step("TK run whole", "tk", "whole", "—", "tk"),
    Step("stored, float16", "tk", "stored", "float16", "tk-float16"),
    Step("stored, int8", "tk", "stored", "int8", "tk-int8"),
    Step("product-quantised", "tk-pq", "stored", "pq", "tk-pq"),
]


def values() -> dict[str, dict[str, pd.Series]]:
    """Per year, 40 queries: the rival high, the TK lower, the stored steps the TK to noise, PQ clearly lower."""
    rng = np.random.default_rng(0)
    qids = [f"q{i}" for i in range(40)]
    base = pd.Series(rng.uniform(0.3, 0.7, 40), index=qids)
    by_run = {
        "bert-cat": base + 0.2, "tk": base, "tk-float16": base + rng.normal(0, 1e-3, 40),
        "tk-int8": base + rng.normal(0, 1e-3, 40), "tk-pq": base - 0.1 + rng.normal(0, 0.01, 40),
    }  # fmt: skip
    return {"dl19": by_run}


def test_each_step_has_its_latency_factors_bytes_and_signed_tests_against_the_step_before_and_the_rival() -> None:
    frame = step_table(TABLE, STEPS, values(), [100, 1000]).set_index("step")
    assert list(frame.index) == [step.label for step in STEPS]
    assert np.isnan(frame.loc["MiniLM-6 cross-encoder run whole", "× step before"])
    assert frame.loc["TK run whole", "× step before"] == pytest.approx(2.5)
    assert frame.loc["stored, float16", "× step before"] == pytest.approx(20.0)
    assert frame.loc["product-quantised", "× rival"] == pytest.approx(125.0)
    assert (
        frame.loc["product-quantised", "bytes / passage"] == 5400 and frame.loc["stored, int8", "ms for 1,000"] == 120
    )
    assert frame.loc["MiniLM-6 cross-encoder run whole", "DL19 vs rival"] == "—"
    assert frame.loc["TK run whole", "DL19 vs rival"].startswith("below (p 0.000*")
    assert frame.loc["stored, float16", "DL19 vs step before"].startswith("no difference (p ")
    assert frame.loc["product-quantised", "DL19 vs step before"].startswith("below (p 0.000*")
    assert frame.loc["TK run whole", "DL19 nDCG@10"] == pytest.approx(values()["dl19"]["tk"].mean())


def test_a_step_missing_from_the_table_or_no_step_beyond_the_rival_is_an_error_naming_it() -> None:
    with pytest.raises(KeyError, match="no row \\('tk', 'stored', 'pq'\\) for step 'wrong'"):
        step_table(TABLE, [STEPS[0], Step("wrong", "tk", "stored", "pq", "tk")], values(), [100])
    with pytest.raises(ValueError, match="needs a rival and at least one step"):
        step_table(TABLE, STEPS[:1], values(), [100])


def test_a_verdict_reads_the_sign_and_the_test_together_and_the_figure_has_a_bar_a_step() -> None:
    assert verdict(0.02, True) == "above" and verdict(-0.02, True) == "below" and verdict(0.3, False) == "no difference"
    figure = plot_steps(step_table(TABLE, STEPS, values(), [100, 1000]), 100, "steps")
    axis = figure.axes[0]
    assert len(axis.patches) == len(STEPS) and axis.get_xscale() == "log"
    assert (
        "125" not in "".join(text.get_text() for text in axis.texts)
        and "(2.5× the step before)" in axis.texts[1].get_text()
    )
    plt.close(figure)


def test_the_chain_runs_from_the_cross_encoder_whole_through_each_stored_dtype_to_pq() -> None:
    steps = chain("MiniLM-6 cross-encoder", "tk", "tk-pq", ["float16", "int8"], {"tk": "TK"})
    assert [step.label for step in steps] == [
        "BERT-cat (MiniLM-6 cross-encoder) run whole", "TK run whole", "TK stored, float16", "TK stored, int8",
        "TK stored, product-quantised",
    ]  # fmt: skip
    assert [(s.model, s.regime, s.dtype, s.run) for s in steps][2:] == [
        ("tk", "stored", "float16", "tk-float16"), ("tk", "stored", "int8", "tk-int8"),
        ("tk-pq", "stored", "pq", "tk-pq"),
    ]  # fmt: skip
