"""Where the book keeps its files: the repository root, the data folders and the artifacts root.

Every location can be moved with an environment variable, so a re-runner can put data and
artifacts on another disk:

``TKBOOK_DATA``       the data folder (default ``<repo>/data``): ``raw/`` holds the fetched,
                      hash-checked registry files, ``converted/`` the standard MS MARCO / TREC files.
``TKBOOK_ARTIFACTS``  the artifacts root (default ``<repo>/artifacts``), one folder per profile,
                      then one per chapter, plus ``runs/`` for every TREC run a chapter evaluates.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def data_dir() -> Path:
    """The data folder (``TKBOOK_DATA`` or ``<repo>/data``)."""
    return Path(os.environ.get("TKBOOK_DATA", REPO_ROOT / "data")).resolve()


def raw_dir() -> Path:
    """Fetched registry files, by their registry name."""
    return data_dir() / "raw"


def converted_dir() -> Path:
    """The converted standard-format files (``collection.tsv``, ``queries.<set>.tsv``, …)."""
    return data_dir() / "converted"


def artifacts_root() -> Path:
    """The artifacts root (``TKBOOK_ARTIFACTS`` or ``<repo>/artifacts``)."""
    return Path(os.environ.get("TKBOOK_ARTIFACTS", REPO_ROOT / "artifacts")).resolve()


def _checked(kind: str, name: str) -> str:
    if not _NAME.match(name):
        raise ValueError(f"invalid {kind} name {name!r}: use letters, digits, '.', '_' and '-'")
    return name


def chapter_dir(profile: str, chapter: str) -> Path:
    """``artifacts/<profile>/<chapter>/``, created on demand: a chapter's tables and figures."""
    path = artifacts_root() / _checked("profile", profile) / _checked("chapter", chapter)
    path.mkdir(parents=True, exist_ok=True)
    return path


def runs_dir(profile: str) -> Path:
    """``artifacts/<profile>/runs/``, created on demand: every ranking a chapter evaluates."""
    path = artifacts_root() / _checked("profile", profile) / "runs"
    path.mkdir(parents=True, exist_ok=True)
    return path


def run_path(profile: str, query_set: str, system: str) -> Path:
    """``artifacts/<profile>/runs/<set>__<system>.trec`` (e.g. ``dl19__bm25.trec``)."""
    return runs_dir(profile) / f"{_checked('set', query_set)}__{_checked('system', system)}.trec"


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
