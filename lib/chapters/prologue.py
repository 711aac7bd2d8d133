"""What every chapter does first and last (ARCHITECTURE.md, "Chapters").

:func:`start_chapter` is the chapter's first code cell after its parameters: it checks the profile,
points the data loaders at the profile's data folder (:func:`lib.core.paths.use_profile_data`), seeds
torch, applies the book's plot style and the table precision, picks the device, creates the chapter's
artifacts folder and starts the clock, and prints the one line that says where the chapter runs.
:meth:`ChapterRun.finish` is its last: it writes the chapter's ``summary.json`` with the minutes it
took and gives back the "This chapter ran in N minutes" line the page ends with.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from IPython.display import Markdown
from myst_nb import glue

from lib.core import paths
from lib.core.atomic import write_json
from lib.core.device import resolve_device
from lib.core.plotting import set_style
from lib.core.profiles import Profile, get_profile


@dataclass
class ChapterRun:
    """One execution of a chapter: its name, profile, artifacts folder ``out``, device and start time."""

    name: str
    settings: Profile
    out: Path
    device: torch.device
    started: float = field(default_factory=time.perf_counter)

    def minutes(self) -> float:
        """Minutes since :func:`start_chapter`."""
        return (time.perf_counter() - self.started) / 60

    def finish(self, summary: Mapping[str, Any]) -> Markdown:
        """Write ``summary`` (with the chapter's ``minutes``) to ``out/summary.json``; the closing line.

        The minutes are also glued as ``chapter_minutes`` for the prose.
        """
        minutes = self.minutes()
        write_json(self.out / "summary.json", {**summary, "minutes": minutes})
        glue("chapter_minutes", f"{minutes:.1f}", display=False)
        return Markdown(f"This chapter ran in {minutes:.1f} minutes on `{self.device}` ({self.settings.name} profile).")


def start_chapter(name: str, profile: str, seed: int, device: str = "auto", precision: int = 3) -> ChapterRun:
    """Start chapter ``name`` (``NN_topic``) under ``profile`` (see the module doc).

    ``seed`` seeds torch's generator, ``device`` is resolved by :func:`lib.core.device.resolve_device`
    (``"auto"``: CUDA when available), ``precision`` is the decimals pandas shows. From here on the
    loaders of :mod:`lib.data` read the profile's data folder. An unknown profile is a ``ValueError``
    naming the parameter.
    """
    settings = get_profile(profile)
    paths.use_profile_data(settings.name)
    out = paths.chapter_dir(settings.name, name)
    torch.manual_seed(seed)
    set_style()
    pd.set_option("display.precision", precision)
    running_on = resolve_device(device)
    print(
        f"profile {settings.name}, device {running_on}, torch {torch.__version__},"
        f" {torch.get_num_threads()} CPU threads"
    )
    return ChapterRun(name=name, settings=settings, out=out, device=running_on)
