"""Shared fixtures: the real data mirror and the converted data, made once per test session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from lib.core import paths


@pytest.fixture(scope="session")
def mirror() -> Path:
    """The offline data mirror named by ``TKBOOK_MIRROR`` (CI always sets it)."""
    value = os.environ.get("TKBOOK_MIRROR", "").strip()
    if not value:
        pytest.skip("TKBOOK_MIRROR is unset: the real-data tests need the mirror (e.g. TKBOOK_MIRROR=../shared/data)")
    path = Path(value).expanduser().resolve()
    if not (path / "registry.txt").is_file():
        pytest.fail(f"TKBOOK_MIRROR={value} holds no registry.txt: not a copy of the book's data mirror")
    return path


@pytest.fixture(scope="session")
def converted(mirror: Path) -> Path:
    """Fetch (from the mirror) and convert the real data into the default data folder; the converted dir.

    ``prepare()`` is idempotent: it reuses ``data/converted`` when ``make data`` already made it.
    """
    from lib.data import convert

    out = convert.prepare()
    assert out == paths.converted_dir()
    assert (out / "manifest.json").is_file()
    return out


@pytest.fixture(scope="session")
def raw(converted: Path) -> Path:
    """The folder of fetched, hash-checked registry files that ``converted`` was made from."""
    return paths.raw_dir()


@pytest.fixture(scope="module")
def one_torch_thread():
    """Run a test module's torch work on one thread (``pytestmark = pytest.mark.usefixtures("one_torch_thread")``)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def _data_folder_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    """``start_chapter`` and ``paths.use_profile_data`` set ``TKBOOK_CONVERTED`` for the whole process: each test
    starts without it (the book folder) and the variable is put back as it was afterwards."""
    monkeypatch.delenv(paths.CONVERTED_VARIABLE, raising=False)
