"""Score fusion (``lib.reranking.fusion``): z-scores per query and their mean over runs."""

from __future__ import annotations

import numpy as np
import pytest

from lib.reranking.fusion import ensemble, standardised


def test_standardised_scores_have_mean_zero_and_unit_spread() -> None:
    z = standardised({"a": 1.0, "b": 2.0, "c": 6.0})
    values = np.array(list(z.values()))
    assert values.mean() == pytest.approx(0.0, abs=1e-12)
    assert values.std() == pytest.approx(1.0)
    assert z["c"] > z["b"] > z["a"]
    assert standardised({"a": 4.0, "b": 4.0}) == {"a": 0.0, "b": 0.0}


def test_ensemble_averages_z_scores_whatever_each_model_s_scale() -> None:
    small = {"q": {"a": 0.1, "b": 0.2, "c": 0.3}}
    large = {"q": {"a": 300.0, "b": 100.0, "c": 200.0}}
    combined = ensemble([small, large])
    # z of small: a -1.2247, b 0, c 1.2247; z of large: a 1.2247, b -1.2247, c 0
    assert combined["q"]["a"] == pytest.approx(0.0)
    assert combined["q"]["b"] == pytest.approx(-0.6124, abs=1e-4)
    assert combined["q"]["c"] == pytest.approx(0.6124, abs=1e-4)
    # scaling a model changes nothing
    scaled = {"q": {pid: 1000 * score for pid, score in large["q"].items()}}
    assert ensemble([small, scaled])["q"] == pytest.approx(combined["q"])


def test_ensemble_refuses_runs_over_other_candidates() -> None:
    with pytest.raises(ValueError, match="'q'"):
        ensemble([{"q": {"a": 1.0, "b": 2.0}}, {"q": {"a": 1.0, "c": 2.0}}])
    with pytest.raises(ValueError, match="other queries"):
        ensemble([{"q": {"a": 1.0}}, {"r": {"a": 1.0}}])
    with pytest.raises(ValueError, match="at least one"):
        ensemble([])
