"""Atomic file output: a file is either its old self or completely new, never half-written."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

import pandas as pd
import pytest

from lib.core.atomic import DiskFullError, atomic_write, write_csv, write_json, write_text


def test_atomic_write_replaces_the_file_on_success(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    path.write_text("old\n", encoding="utf-8")
    with atomic_write(path) as handle:
        handle.write("new ")
        assert path.read_text(encoding="utf-8") == "old\n"  # nothing visible before the body ends
        handle.write("content\n")
    assert path.read_text(encoding="utf-8") == "new content\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_atomic_write_keeps_the_old_file_when_the_body_raises(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    path.write_text("old\n", encoding="utf-8")
    with pytest.raises(RuntimeError, match="boom"), atomic_write(path) as handle:
        handle.write("half of the new content")
        raise RuntimeError("boom")
    assert path.read_text(encoding="utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]  # no temporary file remains


def test_atomic_write_creates_nothing_when_the_body_raises(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "out.txt"
    with pytest.raises(KeyboardInterrupt), atomic_write(path) as handle:
        handle.write("partial")
        raise KeyboardInterrupt
    assert not path.exists()
    assert list((tmp_path / "sub").iterdir()) == []


def test_atomic_write_binary_mode_and_parent_folders(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "blob.bin"
    with atomic_write(path, "wb") as handle:
        handle.write(b"\x00\x01\r\n")
    assert path.read_bytes() == b"\x00\x01\r\n"


def test_atomic_write_keeps_line_ends_and_encoding(tmp_path: Path) -> None:
    path = tmp_path / "out.tsv"
    with atomic_write(path) as handle:
        handle.write("1\tIt’s\n2\tb\n")
    assert path.read_bytes() == "1\tIt’s\n2\tb\n".encode()


def test_atomic_write_gives_the_usual_permissions(tmp_path: Path) -> None:
    umask = os.umask(0)
    os.umask(umask)
    path = write_text(tmp_path / "out.txt", "x")
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask


def test_write_text(tmp_path: Path) -> None:
    assert write_text(tmp_path / "t.txt", "hello\n") == tmp_path / "t.txt"
    assert (tmp_path / "t.txt").read_text(encoding="utf-8") == "hello\n"


def test_write_json(tmp_path: Path) -> None:
    obj = {"b": [1, 2.5], "a": {"z": None, "é": "’"}}
    path = write_json(tmp_path / "d" / "x.json", obj)
    assert path == tmp_path / "d" / "x.json"
    text = path.read_text(encoding="utf-8")
    assert json.loads(text) == obj
    assert text.endswith("}\n")
    assert text.index('"a"') < text.index('"b"')  # keys sorted
    assert "’" in text  # not escaped
    assert [p.name for p in path.parent.iterdir()] == ["x.json"]


def test_write_csv(tmp_path: Path) -> None:
    frame = pd.DataFrame({"system": ["bm25", "tk"], "nDCG@10": [0.5058, 0.65]})
    path = write_csv(tmp_path / "table.csv", frame)
    assert path.read_text(encoding="utf-8") == "system,nDCG@10\nbm25,0.5058\ntk,0.65\n"
    pd.testing.assert_frame_equal(pd.read_csv(path), frame)
    with_index = write_csv(tmp_path / "indexed.csv", frame.set_index("system"), index=True)
    assert with_index.read_text(encoding="utf-8").splitlines()[0] == "system,nDCG@10"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["indexed.csv", "table.csv"]


def _fail_with_enospc(*_args, **_kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_keeps_the_previous_file_and_names_the_file_and_the_space(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "checkpoint.pt"
    path.write_bytes(b"the previous, complete checkpoint")
    monkeypatch.setattr("lib.core.atomic.os.fsync", _fail_with_enospc)
    with pytest.raises(DiskFullError) as caught, atomic_write(path, "wb") as handle:
        handle.write(b"x" * 5000)
    error = caught.value
    assert error.errno == errno.ENOSPC and isinstance(error, OSError)
    assert str(error).startswith(f"[Errno {errno.ENOSPC}] {path}: No space left on device to write it")
    assert "at least 5,001 bytes" in str(error) and "the previous file is intact" in str(error)
    assert error.needed == 5001 and error.free is not None and error.free >= 0
    assert path.read_bytes() == b"the previous, complete checkpoint"
    assert [p.name for p in tmp_path.iterdir()] == ["checkpoint.pt"]  # no temporary file left


def test_a_full_disk_during_a_text_write_names_its_exact_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "sub" / "settings.json"
    monkeypatch.setattr("lib.core.atomic.os.fsync", _fail_with_enospc)
    with pytest.raises(
        DiskFullError, match=r"settings\.json: No space left on device .* at least 12 bytes .* no file was written"
    ):
        write_text(path, "twelve bytes")
    assert not path.exists() and list(path.parent.iterdir()) == []


def test_other_os_errors_pass_through_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*_args, **_kwargs):
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr("lib.core.atomic.os.fsync", fail)
    with pytest.raises(OSError) as caught:
        write_text(tmp_path / "x.txt", "x")
    assert caught.value.errno == errno.EIO and not isinstance(caught.value, DiskFullError)
