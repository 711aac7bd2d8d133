"""Where and how one run of the book's code runs: :class:`RunContext` (ARCHITECTURE.md, "Chapters").

A chapter gets one from :func:`lib.chapters.prologue.start_chapter` (its :class:`~lib.chapters.prologue.ChapterRun`
is a ``RunContext``); a command-line entry point or a test builds one from a profile name with
:func:`run_context`. The library takes the context, or its parts, instead of loose profile names and
seeds: ``profile`` is always a :class:`~lib.core.profiles.Profile`, never its name.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import torch

from lib.core import paths
from lib.core.device import resolve_device
from lib.core.profiles import Profile, get_profile


@dataclass(frozen=True)
class RunContext:
    """One run: the chapter (``NN_topic``) it belongs to, its profile, seed, device and artifacts folder ``out``.

    ``out`` is ``artifacts/<profile>/<chapter>/`` (:func:`lib.core.paths.chapter_dir`).
    """

    chapter: str
    profile: Profile
    seed: int
    device: torch.device
    out: Path

    def with_seed(self, seed: int) -> RunContext:
        """This context with another seed (a run with another init, or an earlier chapter's seed)."""
        return dataclasses.replace(self, seed=seed)

    def run_path(self, query_set: str, system: str) -> Path:
        """The profile's run file of ``system`` on ``query_set`` (:func:`lib.core.paths.run_path`)."""
        return paths.run_path(self.profile.name, query_set, system)


def run_context(chapter: str, profile_name: str, seed: int, device: str | torch.device = "auto") -> RunContext:
    """The context of chapter ``chapter`` under the profile called ``profile_name`` (its folder created on demand).

    An unknown profile is a ``ValueError`` naming the parameter (:func:`lib.core.profiles.get_profile`);
    ``device`` is resolved by :func:`lib.core.device.resolve_device`.
    """
    profile = get_profile(profile_name)
    return RunContext(chapter, profile, seed, resolve_device(device), paths.chapter_dir(profile.name, chapter))
