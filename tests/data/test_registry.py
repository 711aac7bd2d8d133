"""The registry and the hash-checked fetch (mirror and download paths)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pooch
import pytest
import requests

from lib.data import registry
from lib.data.registry import REGISTRY, DataFetchError, fetch, load_registry, sha256_of

SMALL_FILE = "JLNuijens/NOS-IRv3/LICENSE"


def files_under(folder: Path) -> list[Path]:
    """Every file (not folder) below ``folder``, hidden ``.part`` files included."""
    return sorted(path for path in folder.rglob("*") if path.is_file())


@pytest.fixture
def destination(tmp_path: Path) -> Path:
    return tmp_path / "raw"


@pytest.fixture
def tmp_mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty mirror folder that ``TKBOOK_MIRROR`` points at."""
    folder = tmp_path / "mirror"
    folder.mkdir()
    monkeypatch.setenv("TKBOOK_MIRROR", str(folder))
    return folder


def test_small_file_is_in_the_registry() -> None:
    assert SMALL_FILE in REGISTRY


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_registry_file_verifies_from_the_mirror(
    name: str, mirror: Path, destination: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TKBOOK_MIRROR", str(mirror))
    path = fetch(name, destination)
    assert path == destination / name
    assert hashlib.sha256(path.read_bytes()).hexdigest() == REGISTRY[name].sha256
    assert path.read_bytes() == (mirror / name).read_bytes()
    assert files_under(destination) == [path]  # no temporary file left beside it


def test_fetch_defaults_to_the_raw_folder(mirror: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TKBOOK_MIRROR", str(mirror))
    monkeypatch.setenv("TKBOOK_DATA", str(tmp_path))
    path = fetch(SMALL_FILE)
    assert path == tmp_path.resolve() / "raw" / SMALL_FILE
    assert sha256_of(path) == REGISTRY[SMALL_FILE].sha256


def test_committed_registry_equals_the_mirrors(mirror: Path) -> None:
    assert load_registry(mirror / "registry.txt") == REGISTRY
    assert load_registry(registry.REGISTRY_FILE) == REGISTRY


def test_registry_urls_are_pinned_to_a_commit_and_match_the_names() -> None:
    pattern = re.compile(r"^https://raw\.githubusercontent\.com/([^/]+/[^/]+)/[0-9a-f]{40}/(.+)$")
    for name, entry in REGISTRY.items():
        match = pattern.match(entry.url)
        assert match, entry.url
        assert f"{match.group(1)}/{match.group(2)}" == name
        assert re.fullmatch(r"[0-9a-f]{64}", entry.sha256), name


def test_sha256_of_matches_hashlib(tmp_path: Path) -> None:
    path = tmp_path / "blob"
    body = bytes(range(256)) * 5000  # > 1 MiB: several blocks
    path.write_bytes(body)
    assert sha256_of(path) == hashlib.sha256(body).hexdigest()


def test_corrupted_mirror_copy_is_rejected_and_leaves_nothing(
    mirror: Path, tmp_mirror: Path, destination: Path
) -> None:
    body = bytearray((mirror / SMALL_FILE).read_bytes())
    body[10] ^= 0x01  # one byte changed
    (tmp_mirror / SMALL_FILE).parent.mkdir(parents=True)
    (tmp_mirror / SMALL_FILE).write_bytes(bytes(body))

    with pytest.raises(DataFetchError) as caught:
        fetch(SMALL_FILE, destination)
    message = str(caught.value)
    assert SMALL_FILE in message
    assert "sha256 mismatch" in message
    assert REGISTRY[SMALL_FILE].sha256 in message
    assert files_under(destination) == []  # neither the file nor a .part file


def test_file_missing_from_the_mirror_names_file_and_variable(tmp_mirror: Path, destination: Path) -> None:
    with pytest.raises(DataFetchError) as caught:
        fetch(SMALL_FILE, destination)
    message = str(caught.value)
    assert SMALL_FILE in message
    assert "TKBOOK_MIRROR" in message
    assert str(tmp_mirror) in message
    assert files_under(destination) == []


def test_no_mirror_and_no_network_names_file_and_variable(destination: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TKBOOK_MIRROR", raising=False)
    calls = []

    def offline(url: str, **kwargs: object) -> str:
        calls.append(url)
        raise requests.exceptions.ConnectionError("Name or service not known")

    monkeypatch.setattr(pooch, "retrieve", offline)
    with pytest.raises(DataFetchError) as caught:
        fetch(SMALL_FILE, destination)
    message = str(caught.value)
    assert calls == [REGISTRY[SMALL_FILE].url]
    assert SMALL_FILE in message
    assert "TKBOOK_MIRROR" in message
    assert "ConnectionError" in message
    assert files_under(destination) == []


def test_download_path_passes_the_registry_url_and_hash(
    mirror: Path, destination: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a mirror the url is downloaded with pooch, which is given the registry hash to check."""
    monkeypatch.delenv("TKBOOK_MIRROR", raising=False)
    calls = []

    def fake_retrieve(url: str, known_hash: str, fname: str, path: Path, **kwargs: object) -> str:
        calls.append((url, known_hash, fname))
        target = Path(path) / fname
        target.write_bytes((mirror / SMALL_FILE).read_bytes())
        return str(target)

    monkeypatch.setattr(pooch, "retrieve", fake_retrieve)
    path = fetch(SMALL_FILE, destination)
    entry = REGISTRY[SMALL_FILE]
    assert calls == [(entry.url, f"sha256:{entry.sha256}", "LICENSE")]
    assert path == destination / SMALL_FILE
    assert sha256_of(path) == entry.sha256


def test_download_hash_mismatch_is_a_fetch_error(destination: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TKBOOK_MIRROR", raising=False)

    def mismatch(url: str, **kwargs: object) -> str:
        raise ValueError("SHA256 hash of downloaded file does not match the known hash")

    monkeypatch.setattr(pooch, "retrieve", mismatch)
    with pytest.raises(DataFetchError, match="sha256 check") as caught:
        fetch(SMALL_FILE, destination)
    assert SMALL_FILE in str(caught.value)


def test_stale_damaged_file_is_fetched_anew(mirror: Path, destination: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TKBOOK_MIRROR", str(mirror))
    good = (mirror / SMALL_FILE).read_bytes()
    stale = destination / SMALL_FILE
    stale.parent.mkdir(parents=True)
    stale.write_bytes(good[:-1] + b"X")
    assert sha256_of(stale) != REGISTRY[SMALL_FILE].sha256

    path = fetch(SMALL_FILE, destination)
    assert path == stale
    assert path.read_bytes() == good
    assert files_under(destination) == [path]


def test_verified_file_is_kept_without_the_mirror(mirror: Path, tmp_mirror: Path, destination: Path) -> None:
    """A copy that already verifies is used as is: the (empty) mirror is never consulted."""
    target = destination / SMALL_FILE
    target.parent.mkdir(parents=True)
    target.write_bytes((mirror / SMALL_FILE).read_bytes())
    assert fetch(SMALL_FILE, destination) == target


def test_unknown_name_is_a_fetch_error(destination: Path) -> None:
    with pytest.raises(DataFetchError, match="not in the registry"):
        fetch("no/such/file.txt", destination)


def test_fetch_all_fetches_every_file(mirror: Path, destination: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TKBOOK_MIRROR", str(mirror))
    fetched = registry.fetch_all(destination)
    assert sorted(fetched) == sorted(REGISTRY)
    assert all(sha256_of(path) == REGISTRY[name].sha256 for name, path in fetched.items())


def test_mirror_dir_from_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TKBOOK_MIRROR", f"  {tmp_path}  ")
    assert registry.mirror_dir() == tmp_path.resolve()
    monkeypatch.setenv("TKBOOK_MIRROR", "")
    assert registry.mirror_dir() is None
    monkeypatch.delenv("TKBOOK_MIRROR")
    assert registry.mirror_dir() is None


GOOD_LINE = f"a/b/file.txt sha256:{'0' * 64} https://example.org/file.txt"


@pytest.mark.parametrize(
    "bad_line",
    [
        f"a/b/file.txt sha256:{'0' * 64}",  # no url
        f"a/b/file.txt sha256:{'0' * 64} https://example.org/file.txt extra",  # four fields
        f"a/b/file.txt md5:{'0' * 64} https://example.org/file.txt",  # wrong algorithm
        f"a/b/file.txt sha256:{'0' * 63} https://example.org/file.txt",  # short digest
        f"a/b/file.txt {'0' * 64} https://example.org/file.txt",  # no prefix
    ],
)
def test_load_registry_rejects_a_malformed_line(bad_line: str, tmp_path: Path) -> None:
    path = tmp_path / "registry.txt"
    path.write_text(f"# name sha256 url\n\n{GOOD_LINE}\n{bad_line}\n", encoding="utf-8")
    with pytest.raises(ValueError) as caught:
        load_registry(path)
    assert f"{path}:4:" in str(caught.value)


def test_load_registry_rejects_a_duplicate_name(tmp_path: Path) -> None:
    path = tmp_path / "registry.txt"
    path.write_text(f"{GOOD_LINE}\n# comment\n{GOOD_LINE}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="duplicate") as caught:
        load_registry(path)
    assert f"{path}:3:" in str(caught.value)


def test_load_registry_parses_entries(tmp_path: Path) -> None:
    path = tmp_path / "registry.txt"
    path.write_text(f"# comment\n\n   {GOOD_LINE}   \n", encoding="utf-8")
    assert load_registry(path) == {
        "a/b/file.txt": registry.RegistryEntry("a/b/file.txt", "0" * 64, "https://example.org/file.txt")
    }
