"""Atomic file output: write to a temporary file in the target folder, then rename.

An interrupted run therefore never leaves a file that looks complete (ARCHITECTURE.md, "Conventions"). A
write that fails for lack of disk space leaves the previous file as it was and says which file it was and
how much space it needed (:class:`DiskFullError`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

_UMASK = os.umask(0)
os.umask(_UMASK)


class DiskFullError(OSError):
    """A write that ran out of disk space: the file, the bytes it needed (at least) and the bytes free.

    An ``OSError`` with ``errno.ENOSPC``, so code that handles a full disk still does; its message says that
    the previous file is intact.
    """

    def __init__(self, path: Path, needed: int, free: int | None) -> None:
        free_text = "unknown" if free is None else f"{free:,} bytes"
        previous = "the previous file is intact" if path.exists() else "no file was written"
        super().__init__(
            errno.ENOSPC,
            f"{path}: {os.strerror(errno.ENOSPC)} to write it: it needs at least {needed:,} bytes "
            f"({free_text} free in {path.parent}); {previous}. Free some space and run the command again",
        )
        self.path, self.needed, self.free = path, needed, free


def _disk_full(path: Path, tmp: str, needed: int | None) -> DiskFullError:
    """The :class:`DiskFullError` of a failed write into ``tmp``: ``needed`` bytes when known, else more than what
    had been written when the disk filled."""
    written = os.path.getsize(tmp) if os.path.exists(tmp) else 0
    try:
        free = shutil.disk_usage(path.parent).free
    except OSError:
        free = None
    return DiskFullError(path, needed if needed is not None else written + 1, free)


@contextlib.contextmanager
def atomic_write(
    path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8", size: int | None = None
) -> Iterator[IO]:
    """Open a temporary sibling of ``path`` for writing and move it onto ``path`` on success.

    On an exception the temporary file is removed and ``path`` is left as it was. A full disk
    (``errno.ENOSPC``) becomes a :class:`DiskFullError` naming ``path`` and the space it needed: ``size`` when
    the caller knows the file's size, else more than what had been written when the disk filled.
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
    except OSError as error:
        full = _disk_full(path, tmp, size) if error.errno == errno.ENOSPC else None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if full is not None and not isinstance(error, DiskFullError):
            raise full from error
        raise
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` atomically and return the path."""
    with atomic_write(path, size=len(text.encode("utf-8"))) as handle:
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
