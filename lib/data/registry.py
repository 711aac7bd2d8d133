"""The registry of the book's real data files and the hash-checked fetch.

``registry.txt`` (beside this module) lists every file as ``name sha256:HASH url``: the name is
its path below the data mirror, the url the same file upstream, pinned to a commit
(``../shared/data/SOURCES.md`` gives the provenance). :func:`fetch` takes a file from the offline
mirror named by ``TKBOOK_MIRROR`` when it is set, and downloads the url with pooch otherwise;
either way the sha256 is checked and nothing but a verified file is ever left at the target path.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from lib.core import paths

MIRROR_VARIABLE = "TKBOOK_MIRROR"
REGISTRY_FILE = Path(__file__).with_name("registry.txt")


class DataFetchError(RuntimeError):
    """A registry file could not be fetched or did not verify."""


@dataclass(frozen=True)
class RegistryEntry:
    """One registry line: the file's ``name`` (path below the mirror), its ``sha256`` and ``url``."""

    name: str
    sha256: str
    url: str


def load_registry(path: str | os.PathLike = REGISTRY_FILE) -> dict[str, RegistryEntry]:
    """Parse a registry file; a malformed line is a ``ValueError`` naming the file and line."""
    entries: dict[str, RegistryEntry] = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            fields = line.split()
            if len(fields) != 3 or not fields[1].startswith("sha256:") or len(fields[1]) != 7 + 64:
                raise ValueError(f"{path}:{number}: expected 'name sha256:<64 hex digits> url', got {line!r}")
            name, digest, url = fields
            if name in entries:
                raise ValueError(f"{path}:{number}: duplicate registry name {name!r}")
            entries[name] = RegistryEntry(name, digest.removeprefix("sha256:"), url)
    return entries


REGISTRY: dict[str, RegistryEntry] = load_registry()


def sha256_of(path: str | os.PathLike) -> str:
    """The hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def mirror_dir() -> Path | None:
    """The offline mirror folder from ``TKBOOK_MIRROR``, or ``None`` when the variable is unset."""
    value = os.environ.get(MIRROR_VARIABLE, "").strip()
    return Path(value).expanduser().resolve() if value else None


def _download(entry: RegistryEntry, target: Path) -> None:
    """Download ``entry.url`` to ``target`` with pooch (which checks the hash and writes atomically)."""
    import pooch  # imported here: the offline path needs no network library

    try:
        pooch.retrieve(
            entry.url,
            known_hash=f"sha256:{entry.sha256}",
            fname=target.name,
            path=target.parent,
            progressbar=False,
        )
    except ValueError as error:  # pooch's hash mismatch
        raise DataFetchError(f"{entry.name}: the download from {entry.url} failed its sha256 check: {error}") from None
    except Exception as error:  # network errors of every kind
        raise DataFetchError(
            f"{entry.name}: could not download {entry.url} ({type(error).__name__}: {error}). "
            f"Without network, set {MIRROR_VARIABLE} to a folder holding a copy of the data "
            f"(for example {MIRROR_VARIABLE}=../shared/data)."
        ) from None


def _copy_from_mirror(entry: RegistryEntry, mirror: Path, target: Path) -> None:
    """Copy ``entry`` from the mirror to ``target`` through a checked temporary file."""
    source = mirror / entry.name
    if not source.is_file():
        raise DataFetchError(
            f"{entry.name}: not found in the mirror {mirror} (from {MIRROR_VARIABLE}); expected the file {source}"
        )
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    os.close(fd)
    try:
        shutil.copyfile(source, tmp)
        actual = sha256_of(tmp)
        if actual != entry.sha256:
            raise DataFetchError(
                f"{entry.name}: sha256 mismatch for {source}: expected {entry.sha256}, got {actual}. "
                "The mirror's copy is corrupted or a different version; nothing was written."
            )
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def fetch(name: str, destination: str | os.PathLike | None = None) -> Path:
    """Return the local path of registry file ``name``, fetching and verifying it if needed.

    The file lands at ``<destination>/<name>`` (default: :func:`lib.core.paths.raw_dir`). A copy that is
    already there is re-hashed and kept only if it verifies.
    """
    try:
        entry = REGISTRY[name]
    except KeyError:
        raise DataFetchError(f"{name!r} is not in the registry {REGISTRY_FILE}") from None
    target = Path(destination or paths.raw_dir()) / entry.name
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_file():
        if sha256_of(target) == entry.sha256:
            return target
        target.unlink()  # a stale or damaged copy: fetch it anew
    mirror = mirror_dir()
    if mirror is not None:
        _copy_from_mirror(entry, mirror, target)
    else:
        _download(entry, target)
    return target


def fetch_all(destination: str | os.PathLike | None = None) -> dict[str, Path]:
    """Fetch every registry file; returns ``{name: local path}``."""
    return {name: fetch(name, destination) for name in sorted(REGISTRY)}
