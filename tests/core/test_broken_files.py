"""Files that fail well (``lib.core.broken_files``): a broken file is named, with what it is and how to rebuild it."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from lib.core.broken_files import BROKEN_SUFFIX, BrokenFileError, read_checked, read_or_set_aside


def _torch_load(path: Path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=True)


def _truncated_torch_file(path: Path) -> bytes:
    torch.save({"weight": torch.arange(1000.0)}, path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    return data


def test_read_checked_names_the_file_what_it_is_and_the_command(tmp_path: Path) -> None:
    path = tmp_path / "best.pt"
    _truncated_torch_file(path)
    with pytest.raises(BrokenFileError) as caught:
        read_checked(path, _torch_load, "the trained tk2", "make chapter CH=02_training PROFILE=book ARGS=--force")
    message = str(caught.value)
    assert message.startswith(f"{path}: the trained tk2 is truncated or corrupt")
    assert "make chapter CH=02_training PROFILE=book ARGS=--force" in message
    assert caught.value.path == path and isinstance(caught.value.__cause__, Exception)


def test_read_checked_reads_a_good_file_and_passes_a_missing_one_through(tmp_path: Path) -> None:
    path = tmp_path / "good.pt"
    torch.save({"weight": torch.ones(2)}, path)
    assert torch.equal(read_checked(path, _torch_load, "weights", "make x")["weight"], torch.ones(2))
    with pytest.raises(FileNotFoundError):
        read_checked(tmp_path / "absent.pt", _torch_load, "weights", "make x")


@pytest.mark.parametrize("kind", ["torch", "npy", "npz", "json"])
def test_read_or_set_aside_moves_a_broken_file_aside_with_a_warning(tmp_path: Path, kind: str) -> None:
    path = tmp_path / f"cache.{kind}"
    if kind == "torch":
        _truncated_torch_file(path)
        read = _torch_load
    elif kind == "npy":
        np.save(path, np.arange(500.0))
        path.write_bytes(path.read_bytes()[:200])
        read = np.load
    elif kind == "npz":
        np.savez(path.with_suffix(""), keys=np.arange(500), vectors=np.ones((500, 4)))
        path.write_bytes(path.with_suffix(".npz").read_bytes()[:300])

        def read(file: Path) -> np.ndarray:
            with np.load(file) as data:
                return data["vectors"]
    else:
        path.write_text('{"a": [1, 2', encoding="utf-8")

        def read(file: Path) -> dict:
            import json

            return json.loads(file.read_text(encoding="utf-8"))

    broken = path.read_bytes()
    with pytest.warns(UserWarning, match=rf"cache\.{kind}: a cache is truncated or corrupt .* moved aside"):
        assert read_or_set_aside(path, read, "a cache") is None
    assert not path.exists()
    assert path.with_name(path.name + BROKEN_SUFFIX).read_bytes() == broken


def test_read_or_set_aside_without_moving_and_for_missing_files(tmp_path: Path) -> None:
    path = tmp_path / "cache.npy"
    assert read_or_set_aside(path, np.load, "a cache") is None  # missing: nothing to warn about
    path.write_bytes(b"\x93NUMPY garbage")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_or_set_aside(path, np.load, "a cache", move=False) is None
    assert path.is_file()  # another process moves it
    np.save(path, np.arange(3))
    assert read_or_set_aside(path, np.load, "a cache").tolist() == [0, 1, 2]
