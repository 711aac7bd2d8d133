"""What every chapter does first and last (ARCHITECTURE.md, "Chapters").

:func:`start_chapter` is the chapter's first code cell after its parameters, and the one place the parameters cell's
``profile`` and ``seed`` enter the library: it checks the profile, applies the parameters cell's overrides to the
chapter's own section of it once, points the data loaders at the profile's data folder
(:func:`lib.core.paths.use_profile_data`), seeds torch, applies the book's plot style and the table precision, picks
the device, creates the chapter's artifacts folder and starts the clock, and prints the one line that says where the
chapter runs, then, where they apply, that the data is the paper-shaped miniature
(:func:`lib.data.miniature.is_miniature`) and the profile's named substitutions
(:attr:`lib.core.profiles.Profile.substitutions`). It returns a :class:`ChapterRun`, the
:class:`lib.core.run_context.RunContext` the chapter hands the library. :meth:`ChapterRun.finish` is its last: it
writes the chapter's ``summary.json`` with the minutes it took and gives back the "This chapter ran in N minutes" line
the page ends with.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import torch
from IPython.display import Markdown
from myst_nb import glue

from lib.core import paths
from lib.core.atomic import write_json
from lib.core.device import resolve_device
from lib.core.plotting import set_style
from lib.core.profiles import get_profile, with_overrides
from lib.core.run_context import RunContext
from lib.data.miniature import is_miniature


@dataclass(frozen=True)
class ChapterRun(RunContext):
    """One execution of a chapter: its :class:`~lib.core.run_context.RunContext`, its settings and start time.

    ``settings``: the chapter's own section of its profile (``TrainingSettings`` for chapter 2, ``SpeedSettings``
    for 3, …) with the parameters cell's overrides applied; ``profile`` holds that same section. ``None`` for a
    chapter without a section.
    """

    settings: Any = None
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
        return Markdown(f"This chapter ran in {minutes:.1f} minutes on `{self.device}` ({self.profile.name} profile).")


def skipped(part: str, reason: str) -> Markdown:
    """The note a chapter shows in place of ``part`` when its profile or data skip it, saying ``reason``: nothing is
    skipped silently (``tests/paper_mini/test_chapters.py`` checks it for the ``paper-mini`` book)."""
    return Markdown(f"*Skipped here: {part}, because {reason}.*")


def start_chapter(
    name: str,
    profile_name: str,
    seed: int,
    device: str = "auto",
    section: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    precision: int = 3,
) -> ChapterRun:
    """Start chapter ``name`` (``NN_topic``) under the profile called ``profile_name`` (see the module doc).

    ``section``: the profile's section that is the chapter's own settings (:data:`lib.core.profiles.SECTIONS`;
    ``None``: none); ``overrides``: the parameters cell's values of its knobs, by field name
    (:func:`lib.core.profiles.with_overrides`; ``None`` keeps the profile's value). ``seed`` seeds torch's
    generator, ``device`` is resolved by :func:`lib.core.device.resolve_device` (``"auto"``: CUDA when available),
    ``precision`` is the decimals pandas shows. From here on the loaders of :mod:`lib.data` read the profile's data
    folder. An unknown profile is a ``ValueError`` naming the parameter, and so is an override without a section.
    """
    profile = get_profile(profile_name)
    if section is not None:
        profile = with_overrides(profile, section, overrides or {})
    elif overrides:
        raise ValueError(f"parameter 'overrides' {sorted(overrides)} needs a 'section' to apply to")
    data = paths.use_profile_data(profile.name)
    out = paths.chapter_dir(profile.name, name)
    torch.manual_seed(seed)
    set_style()
    pd.set_option("display.precision", precision)
    running_on = resolve_device(device)
    print(
        f"profile {profile.name}, device {running_on}, torch {torch.__version__}, {torch.get_num_threads()} CPU threads"
    )
    if is_miniature(data):
        shown = paths.shown(data)
        print(f"data: the paper-shaped miniature in {shown}: it proves the code path, not the paper's numbers")
    for substitution in profile.substitutions:
        print(f"substitution: {substitution}")
    settings = None if section is None else getattr(profile, section)
    return ChapterRun(name, profile, seed, running_on, out, settings=settings)
