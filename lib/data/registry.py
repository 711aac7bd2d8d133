"""The registry of the book's real data files and the hash-checked fetch.

``registry.txt`` (beside this module) lists every file as ``name sha256:HASH url``: the name is
its path below the data mirror, the url the same file upstream, pinned to a commit
(``../shared/data/SOURCES.md`` gives the provenance). :func:`fetch` takes a file from the offline
mirror named by ``TKBOOK_MIRROR`` when it is set, and downloads the url with pooch otherwise;
either way the digest is checked and nothing but a verified file is ever left at the target path.

``paper_registry.txt`` lists, in the same format, the files only the ``paper`` profile downloads
(the published teacher scores, the pinned bert-base-uncased): :func:`fetch_paper` fetches one into
``<data>/paper/<name>`` (:func:`paper_dir`); ``make data`` (:func:`fetch_all`) never fetches them.
A digest is ``sha256:<64 hex digits>`` or, where the publisher gives only that (Zenodo),
``md5:<32 hex digits>``; the file is checked with the algorithm named.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from lib.core import paths

MIRROR_VARIABLE = "TKBOOK_MIRROR"
REGISTRY_FILE = Path(__file__).with_name("registry.txt")
PAPER_REGISTRY_FILE = Path(__file__).with_name("paper_registry.txt")
#: The digest algorithms a registry line may name, with their lengths in hex digits.
DIGEST_LENGTHS = {"sha256": 64, "md5": 32}


class DataFetchError(RuntimeError):
    """A registry file could not be fetched or did not verify."""


@dataclass(frozen=True)
class RegistryEntry:
    """One registry line: the file's ``name`` (path below the mirror), hex ``digest``, ``url`` and ``algorithm``."""

    name: str
    digest: str
    url: str
    algorithm: str = "sha256"

    @property
    def known_hash(self) -> str:
        """The digest as the registry writes it and pooch reads it: ``<algorithm>:<hex>``."""
        return f"{self.algorithm}:{self.digest}"


def _parse_digest(field: str) -> tuple[str, str] | None:
    """``(algorithm, hex)`` of a registry digest field (``sha256:<64 hex>`` or ``md5:<32 hex>``), else ``None``."""
    algorithm, _, digest = field.partition(":")
    length = DIGEST_LENGTHS.get(algorithm)
    if length is None or not re.fullmatch(f"[0-9a-f]{{{length}}}", digest):
        return None
    return algorithm, digest


def load_registry(path: str | os.PathLike = REGISTRY_FILE) -> dict[str, RegistryEntry]:
    """Parse a registry file; a malformed line is a ``ValueError`` naming the file and line."""
    entries: dict[str, RegistryEntry] = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            fields = line.split()
            parsed = _parse_digest(fields[1]) if len(fields) == 3 else None
            if parsed is None:
                raise ValueError(
                    f"{path}:{number}: expected 'name sha256:<64 hex digits> url' or 'name md5:<32 hex digits> url', "
                    f"got {line!r}"
                )
            name, _, url = fields
            if name in entries:
                raise ValueError(f"{path}:{number}: duplicate registry name {name!r}")
            algorithm, digest = parsed
            entries[name] = RegistryEntry(name, digest, url, algorithm)
    return entries


REGISTRY: dict[str, RegistryEntry] = load_registry()
PAPER_REGISTRY: dict[str, RegistryEntry] = load_registry(PAPER_REGISTRY_FILE)
#: The published Margin-MSE teacher scores of the ``paper`` profile (Hofstätter et al. 2020), a paper registry name.
TEACHER_SCORES = "hofstaetter/neural-ranking-kd/bert_cat_ensemble_msmarcopassage_train_scores_ids.tsv"


def file_digest(path: str | os.PathLike, algorithm: str = "sha256") -> str:
    """The hex digest of a file with ``algorithm`` (a :data:`DIGEST_LENGTHS` name), read in 1 MiB blocks."""
    digest = hashlib.new(algorithm)
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sha256_of(path: str | os.PathLike) -> str:
    """The hex sha256 of a file, read in 1 MiB blocks."""
    return file_digest(path, "sha256")


def paper_dir() -> Path:
    """Where :func:`fetch_paper` puts the ``paper`` profile's downloads: ``<data>/paper``."""
    return paths.data_dir() / "paper"


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
            known_hash=entry.known_hash,
            fname=target.name,
            path=target.parent,
            progressbar=False,
        )
    except ValueError as error:  # pooch's hash mismatch
        raise DataFetchError(
            f"{entry.name}: the download from {entry.url} failed its {entry.algorithm} check: {error}"
        ) from None
    except Exception as error:  # network errors of every kind
        raise DataFetchError(
            f"{entry.name}: could not download {entry.url} ({type(error).__name__}: {error}). "
            f"Without network, set {MIRROR_VARIABLE} to a folder holding a copy of the data as <folder>/{entry.name} "
            f"(the book's registry files: {MIRROR_VARIABLE}=../shared/data)."
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
        actual = file_digest(tmp, entry.algorithm)
        if actual != entry.digest:
            raise DataFetchError(
                f"{entry.name}: {entry.algorithm} mismatch for {source}: expected {entry.digest}, got {actual}. "
                "The mirror's copy is corrupted or a different version; nothing was written."
            )
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _fetch_entry(entry: RegistryEntry, folder: Path, mirror_required: bool) -> Path:
    """``<folder>/<entry.name>``, verified: a copy already there is re-hashed and kept only if it verifies,
    otherwise the file is taken from the mirror (``TKBOOK_MIRROR``) or downloaded.

    With ``mirror_required`` a set mirror must hold the file; without, a file the mirror lacks is downloaded.
    """
    target = folder / entry.name
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_file():
        if file_digest(target, entry.algorithm) == entry.digest:
            return target
        target.unlink()  # a stale or damaged copy: fetch it anew
    mirror = mirror_dir()
    if mirror is not None and (mirror_required or (mirror / entry.name).is_file()):
        _copy_from_mirror(entry, mirror, target)
    else:
        _download(entry, target)
    return target


def fetch(name: str, destination: str | os.PathLike | None = None) -> Path:
    """Return the local path of registry file ``name``, fetching and verifying it if needed.

    The file lands at ``<destination>/<name>`` (default: :func:`lib.core.paths.raw_dir`). A copy that is
    already there is re-hashed and kept only if it verifies.
    """
    try:
        entry = REGISTRY[name]
    except KeyError:
        raise DataFetchError(f"{name!r} is not in the registry {REGISTRY_FILE}") from None
    return _fetch_entry(entry, Path(destination or paths.raw_dir()), mirror_required=True)


def fetch_paper(name: str, destination: str | os.PathLike | None = None) -> Path:
    """Return the local path of ``paper`` profile file ``name`` (:data:`PAPER_REGISTRY`), fetched and verified.

    As :func:`fetch`, but from the mirror only when ``TKBOOK_MIRROR`` is set *and* holds the file (the
    book's mirror does not hold these files), else downloaded; the file lands at
    ``<destination>/<name>`` (default: :func:`paper_dir`), checked with the entry's algorithm.
    """
    try:
        entry = PAPER_REGISTRY[name]
    except KeyError:
        raise DataFetchError(f"{name!r} is not in the paper registry {PAPER_REGISTRY_FILE}") from None
    return _fetch_entry(entry, Path(destination or paper_dir()), mirror_required=False)


def fetch_all(destination: str | os.PathLike | None = None) -> dict[str, Path]:
    """Fetch every book registry file (never a :data:`PAPER_REGISTRY` file); returns ``{name: local path}``."""
    return {name: fetch(name, destination) for name in sorted(REGISTRY)}
