"""The α-sweep figure (``lib.chapters.tilde_figures``): a panel per measure and set, references, bad frames."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from lib.chapters.tilde_figures import plot_alpha_sweep  # noqa: E402


def test_one_panel_per_measure_and_set_with_a_line_per_first_stage_and_its_reference() -> None:
    rows = [
        {"set": s, "first_stage": f, "alpha": a / 10, "measure": m, "value": a / 20}
        for s in ("dl19", "dl20")
        for f in ("BM25", "SPLADE++")
        for m in ("nDCG@10", "MAP")
        for a in range(11)
    ]
    references = {("dl19", "BM25", "nDCG@10"): 0.5}
    figure = plot_alpha_sweep(pd.DataFrame(rows), references)
    axes = figure.get_axes()
    assert len(axes) == 4 and axes[0].get_title() == "DL19: nDCG@10" and axes[3].get_title() == "DL20: MAP"
    assert len(axes[0].lines) == 3 and len(axes[1].lines) == 2  # two curves, one reference line on DL19 nDCG@10
    assert list(axes[0].lines[0].get_xdata()) == [a / 10 for a in range(11)]
    plt.close(figure)


def test_a_frame_without_the_needed_columns_is_an_error_naming_them() -> None:
    with pytest.raises(ValueError, match="'first_stage'"):
        plot_alpha_sweep(pd.DataFrame({"set": [], "alpha": [], "measure": [], "value": []}), {})
