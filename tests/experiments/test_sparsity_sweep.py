"""Chapter 8's removal-target sweep and stopword baseline: the shares, the runs' names and the choice on validation."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from lib.experiments import sparsity_sweep
from lib.models.tk_sparse import REMOVAL_TARGET


def test_the_stopword_share_counts_listed_word_occurrences() -> None:
    assert sparsity_sweep.stopword_share(["The receptor of the cell", "receptor"]) == pytest.approx(3 / 6)
    assert sparsity_sweep.stopword_share([]) == 0.0


def test_the_runs_follow_the_table_and_the_default_target_is_chapter_8s_own_run() -> None:
    names = sparsity_sweep.run_names([0.1, REMOVAL_TARGET, 0.5])
    assert REMOVAL_TARGET not in (0.1, 0.5)
    assert names == ["tk2", "tk2-stopwords", "tk2-sparse-target-0.1", "tk2-sparse", "tk2-sparse-target-0.5"]


def test_the_target_is_the_sparsest_within_the_tolerance_of_tk2_on_validation_alone() -> None:
    sweep = pd.DataFrame(
        {
            "target": [0.1, 0.2, 0.3, 0.4, math.nan],
            "validation": [0.450, 0.445, 0.441, 0.40, 0.99],
            "removed (validation passages)": [0.0, 0.1, 0.3, 0.6, 0.0],
            "DL19 nDCG@10": [0.9, 0.1, 0.1, 0.9, 0.9],
        }
    )
    assert sparsity_sweep.chosen_target(sweep, reference=0.448) == 0.3  # 0.441 is within 0.01; 0.4 is not
    assert sparsity_sweep.chosen_target(sweep, reference=0.448, tolerance=0.005) == 0.2
    assert sparsity_sweep.chosen_target(sweep, reference=0.50) == 0.1  # none close: the best validation value
    tied = sweep.assign(**{"removed (validation passages)": [0.0, 0.3, 0.3, 0.6, 0.0]})
    assert sparsity_sweep.chosen_target(tied, reference=0.448) == 0.2  # the smaller target on a tie
    # the baseline's row (no target) and the test year play no part
