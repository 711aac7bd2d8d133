"""One figure style for the whole book (seaborn), and atomic figure output."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib
import seaborn as sns

from lib.core.atomic import atomic_write

#: The book's palette: seaborn's colour-blind-safe palette.
PALETTE = "colorblind"


def set_style() -> None:
    """Apply the book's figure style: white grid, notebook context, colour-blind palette."""
    sns.set_theme(style="whitegrid", context="notebook", palette=PALETTE)
    matplotlib.rcParams.update({"figure.dpi": 110, "savefig.bbox": "tight", "axes.titleweight": "bold"})


def save_figure(figure: matplotlib.figure.Figure, path: str | os.PathLike) -> Path:
    """Save ``figure`` to ``path`` (format from the suffix) atomically; returns the path."""
    path = Path(path)
    with atomic_write(path, mode="wb") as handle:
        figure.savefig(handle, format=path.suffix.lstrip(".") or "png")
    return path
