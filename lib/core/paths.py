"""Where the book keeps its files: the repository root, the data folders and the artifacts root.

Every location can be moved with an environment variable, so a re-runner can put data and
artifacts on another disk:

``TKBOOK_DATA``       the data folder (default ``<repo>/data``): ``raw/`` holds the fetched,
                      hash-checked registry files, ``converted/`` the book subset in the standard
                      MS MARCO / TREC files (``make data``), ``msmarco/`` full MS MARCO in the same
                      formats (``python -m lib.data.msmarco``).
``TKBOOK_ARTIFACTS``  the artifacts root (default ``<repo>/artifacts``), one folder per profile,
                      then one per chapter, plus ``runs/`` for every TREC run a chapter evaluates.
``TKBOOK_BUILD``      where the executed chapters go (default ``<repo>/_build``), one folder per profile
                      (:func:`lib.book.build.executed_dir`): a test builds a chapter beside the book.

**Which standard-format folder the loaders read** (:mod:`lib.data`) follows the profile, by one
mechanism: each profile names its folder (:attr:`lib.core.profiles.Profile.data_folder`:
``converted`` for ``smoke`` and ``book``, ``msmarco`` for ``paper``); a chapter's first cell,
:func:`lib.chapters.prologue.start_chapter`, calls :func:`use_profile_data`, which sets
``TKBOOK_CONVERTED`` (:data:`CONVERTED_VARIABLE`) to that folder's name for the chapter's process and
the processes it starts; :func:`converted_dir` without a profile reads that folder (``converted``
when the variable is unset, e.g. in tests and ``python -m`` tools). Code that must name one
profile's folder whatever the process reads (the book build's data fingerprint, the converter and
the MS MARCO export writing their folders) passes the profile: ``converted_dir("paper")``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from lib.core.profiles import get_profile

REPO_ROOT = Path(__file__).resolve().parents[2]

#: The environment variable naming the folder, under the data folder, that the loaders read.
CONVERTED_VARIABLE = "TKBOOK_CONVERTED"

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def build_dir(root: Path = REPO_ROOT) -> Path:
    """The folder of the executed chapters (``TKBOOK_BUILD`` or ``<root>/_build``)."""
    return Path(os.environ.get("TKBOOK_BUILD", root / "_build")).resolve()


def data_dir() -> Path:
    """The data folder (``TKBOOK_DATA`` or ``<repo>/data``)."""
    return Path(os.environ.get("TKBOOK_DATA", REPO_ROOT / "data")).resolve()


def raw_dir() -> Path:
    """Fetched registry files, by their registry name."""
    return data_dir() / "raw"


def converted_dir(profile_name: str | None = None) -> Path:
    """A folder of standard-format files (``collection.tsv``, ``queries.<set>.tsv``, …) under the data folder.

    ``profile_name``: that profile's folder (``<data>/<Profile.data_folder>``); ``None``: the folder this
    process reads, ``<data>/$TKBOOK_CONVERTED``, or the ``book`` profile's ``<data>/converted`` when
    the variable is unset (module doc). The variable must be a plain folder name.
    """
    if profile_name is not None:
        name = get_profile(profile_name).data_folder
    else:
        name = os.environ.get(CONVERTED_VARIABLE) or get_profile("book").data_folder
    return data_dir() / _checked("data folder", name)


def use_profile_data(profile_name: str) -> Path:
    """Make this process, and every process it starts, read the data folder of profile ``profile_name``; returns it.

    Sets ``TKBOOK_CONVERTED`` (:data:`CONVERTED_VARIABLE`) to the profile's
    :attr:`~lib.core.profiles.Profile.data_folder`; what :func:`converted_dir` returns from then on.
    """
    os.environ[CONVERTED_VARIABLE] = get_profile(profile_name).data_folder
    return converted_dir()


def artifacts_root() -> Path:
    """The artifacts root (``TKBOOK_ARTIFACTS`` or ``<repo>/artifacts``)."""
    return Path(os.environ.get("TKBOOK_ARTIFACTS", REPO_ROOT / "artifacts")).resolve()


def _checked(kind: str, name: str) -> str:
    if not _NAME.match(name):
        raise ValueError(f"invalid {kind} name {name!r}: use letters, digits, '.', '_' and '-'")
    return name


def chapter_dir(profile_name: str, chapter: str) -> Path:
    """``artifacts/<profile>/<chapter>/``, created on demand: a chapter's tables and figures."""
    path = artifacts_root() / _checked("profile", profile_name) / _checked("chapter", chapter)
    path.mkdir(parents=True, exist_ok=True)
    return path


def runs_dir(profile_name: str) -> Path:
    """``artifacts/<profile>/runs/``, created on demand: every ranking a chapter evaluates."""
    path = artifacts_root() / _checked("profile", profile_name) / "runs"
    path.mkdir(parents=True, exist_ok=True)
    return path


def run_path(profile_name: str, query_set: str, system: str) -> Path:
    """``artifacts/<profile>/runs/<set>__<system>.trec`` (e.g. ``dl19__bm25.trec``)."""
    return runs_dir(profile_name) / f"{_checked('set', query_set)}__{_checked('system', system)}.trec"


def shown(path: str | os.PathLike) -> str:
    """``path`` as a page may show it, without the building machine's folders.

    Under the artifacts root: ``artifacts/<rest>``; under the data folder: ``data/<rest>``; under the
    repository: the path relative to it; anywhere else: the file name only.
    """
    resolved = Path(path).resolve()
    for prefix, base in (("artifacts", artifacts_root()), ("data", data_dir()), ("", REPO_ROOT)):
        if resolved.is_relative_to(base):
            rest = resolved.relative_to(base).as_posix()
            return f"{prefix}/{rest}" if prefix else rest
    return resolved.name
