"""Atomic file output: write to a temporary file in the target folder, then rename.

An interrupted run therefore never leaves a file that looks complete (ARCHITECTURE.md, "Conventions").
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

_UMASK = os.umask(0)
os.umask(_UMASK)


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temporary sibling of ``path`` for writing and move it onto ``path`` on success.

    On an exception the temporary file is removed and ``path`` is left as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    binary = "b" in mode
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, mode, encoding=None if binary else encoding, newline=None if binary else "") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` atomically and return the path."""
    with atomic_write(path) as handle:
        handle.write(text)
    return Path(path)


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Write ``obj`` as indented, key-sorted JSON to ``path`` atomically."""
    return write_text(path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def write_csv(path: str | os.PathLike, frame: Any, **kwargs: Any) -> Path:
    """Write a pandas DataFrame to ``path`` as CSV atomically (``index=False`` unless given)."""
    kwargs.setdefault("index", False)
    with atomic_write(path) as handle:
        frame.to_csv(handle, **kwargs)
    return Path(path)
