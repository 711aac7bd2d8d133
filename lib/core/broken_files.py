"""Files that fail well: a truncated or corrupt artifact is named, with what it is and how to rebuild it.

The book writes every artifact atomically (:mod:`lib.core.atomic`), so a build never leaves a half-written file
behind; a file can still break afterwards (a full disk while copying, a killed ``cp``, a disk error). Reading one
must not end in a library's bare traceback (torch's unpickling error, numpy's ``BadZipFile``) that names no file.
Two ways out, by what the file is:

- :func:`read_checked`: a file that only an earlier step can rebuild (a trained model read by a later chapter)
  raises :class:`BrokenFileError`: the file, what it is, why it cannot be read, and the command that rebuilds it;
- :func:`read_or_set_aside`: a file the caller can rebuild itself (a training checkpoint, a cache, a stored index)
  is moved aside to ``<name>.broken`` — kept for a post-mortem, never deleted — with a warning naming both, and
  the caller rebuilds it.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

#: What the readers of the book's files raise on a truncated or corrupt file: torch's ``load`` (``RuntimeError``
#: "PytorchStreamReader failed …", ``EOFError``, ``UnpicklingError``), numpy's (``ValueError``, ``BadZipFile``,
#: ``EOFError``, a missing array's ``KeyError``), JSON's and text decoders' (``ValueError``), short reads (``OSError``).
BROKEN_FILE_ERRORS: tuple[type[BaseException], ...] = (
    EOFError,
    OSError,
    ValueError,
    KeyError,
    RuntimeError,
    pickle.UnpicklingError,
    zipfile.BadZipFile,
)

#: The suffix a broken file is moved aside with.
BROKEN_SUFFIX = ".broken"


class BrokenFileError(RuntimeError):
    """A file that exists but cannot be read: its path, what it is, why, and the command that rebuilds it."""

    def __init__(self, path: Path, what: str, reason: BaseException | str, rebuild: str) -> None:
        super().__init__(
            f"{path}: {what} is truncated or corrupt and cannot be read ({_reason(reason)}). "
            f"Rebuild it: delete it and run `{rebuild}`"
        )
        self.path, self.what, self.rebuild = path, what, rebuild


def _reason(error: BaseException | str) -> str:
    if isinstance(error, str):
        return error
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def read_checked(path: str | os.PathLike, read: Callable[[Path], T], what: str, rebuild: str) -> T:
    """``read(path)``; a broken file raises :class:`BrokenFileError` naming it, ``what`` it is and ``rebuild``.

    A missing file is not broken: its ``FileNotFoundError`` passes through (callers name the chapter that writes it).
    """
    path = Path(path)
    try:
        return read(path)
    except FileNotFoundError:
        raise
    except BROKEN_FILE_ERRORS as error:
        raise BrokenFileError(path, what, error, rebuild) from error


def set_aside(path: str | os.PathLike, what: str, reason: BaseException | str) -> Path:
    """Move a broken file or folder to ``<name>.broken`` (replacing an older one there), warn naming both; the
    new path."""
    path = Path(path)
    aside = path.with_name(path.name + BROKEN_SUFFIX)
    if aside.is_dir():
        shutil.rmtree(aside)
    elif aside.exists():
        aside.unlink()
    os.replace(path, aside)
    warnings.warn(
        f"{path}: {what} is truncated or corrupt ({_reason(reason)}); moved aside to {aside.name} and rebuilt",
        stacklevel=3,
    )
    return aside


def read_or_set_aside(path: str | os.PathLike, read: Callable[[Path], T], what: str, move: bool = True) -> T | None:
    """``read(path)``, or ``None`` when ``path`` is missing or broken (then moved aside, with a warning): the caller
    rebuilds it. ``move=False``: a broken file is left where it is (under torchrun each process reads, rank 0 moves)."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        return read(path)
    except FileNotFoundError:
        return None
    except BROKEN_FILE_ERRORS as error:
        if move:
            set_aside(path, what, error)
        return None


def read_index_header(folder: Path, header_name: str, expected_format: int, what: str) -> dict[str, Any]:
    """The JSON header of an index folder, after checking its format and that every file it lists (``files``: name →
    bytes) is there with its size: a missing file is a ``FileNotFoundError``, a truncated one a ``ValueError``, each
    naming the file, the header and ``what`` index it is."""
    header_path = folder / header_name
    if not header_path.is_file():
        raise FileNotFoundError(f"{header_path}: no such file: {folder} is no {what}, or its build did not finish")
    header = json.loads(header_path.read_text(encoding="utf-8"))
    if header.get("format") != expected_format:
        raise ValueError(f"{header_path}: index format {header.get('format')!r}, expected {expected_format}")
    for name, expected in header["files"].items():
        path = folder / name
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such file (the index header {header_path} lists it)")
        size = path.stat().st_size
        if size != expected:
            raise ValueError(
                f"{path}: {size} bytes, but the index header {header_path} expects {expected}: the file is truncated "
                f"or belongs to another index; build the {what} again"
            )
    return header


__all__ = [
    "BROKEN_FILE_ERRORS",
    "BROKEN_SUFFIX",
    "BrokenFileError",
    "read_checked",
    "read_index_header",
    "read_or_set_aside",
    "set_aside",
]
