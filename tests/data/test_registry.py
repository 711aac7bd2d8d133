"""The registry and the hash-checked fetch (mirror and download paths)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pooch
import pytest
import requests

from lib.data import read_teacher_scores, registry
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
    assert hashlib.sha256(path.read_bytes()).hexdigest() == REGISTRY[name].digest
    assert path.read_bytes() == (mirror / name).read_bytes()
    assert files_under(destination) == [path]  # no temporary file left beside it


def test_fetch_defaults_to_the_raw_folder(mirror: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TKBOOK_MIRROR", str(mirror))
    monkeypatch.setenv("TKBOOK_DATA", str(tmp_path))
    path = fetch(SMALL_FILE)
    assert path == tmp_path.resolve() / "raw" / SMALL_FILE
    assert sha256_of(path) == REGISTRY[SMALL_FILE].digest


def test_committed_registry_equals_the_mirrors(mirror: Path) -> None:
    assert load_registry(mirror / "registry.txt") == REGISTRY
    assert load_registry(registry.REGISTRY_FILE) == REGISTRY


def test_registry_urls_are_pinned_to_a_commit_and_match_the_names() -> None:
    pattern = re.compile(r"^https://raw\.githubusercontent\.com/([^/]+/[^/]+)/[0-9a-f]{40}/(.+)$")
    for name, entry in REGISTRY.items():
        match = pattern.match(entry.url)
        assert match, entry.url
        assert f"{match.group(1)}/{match.group(2)}" == name
        assert entry.algorithm == "sha256" and re.fullmatch(r"[0-9a-f]{64}", entry.digest), name


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
    assert REGISTRY[SMALL_FILE].digest in message
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
    assert calls == [(entry.url, f"sha256:{entry.digest}", "LICENSE")]
    assert path == destination / SMALL_FILE
    assert sha256_of(path) == entry.digest


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
    assert sha256_of(stale) != REGISTRY[SMALL_FILE].digest

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
    assert all(sha256_of(path) == REGISTRY[name].digest for name, path in fetched.items())


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
        f"a/b/file.txt md5:{'0' * 64} https://example.org/file.txt",  # md5 with sha256's length
        f"a/b/file.txt md5:{'0' * 31} https://example.org/file.txt",  # short md5
        f"a/b/file.txt sha1:{'0' * 40} https://example.org/file.txt",  # an algorithm the registry does not know
        f"a/b/file.txt sha256:{'0' * 63} https://example.org/file.txt",  # short digest
        f"a/b/file.txt sha256:{'g' * 64} https://example.org/file.txt",  # not hex
        f"a/b/file.txt {'0' * 64} https://example.org/file.txt",  # no prefix
    ],
)
def test_load_registry_rejects_a_malformed_line(bad_line: str, tmp_path: Path) -> None:
    path = tmp_path / "registry.txt"
    path.write_text(f"# name sha256 url\n\n{GOOD_LINE}\n{bad_line}\n", encoding="utf-8")
    with pytest.raises(ValueError) as caught:
        load_registry(path)
    assert f"{path}:4:" in str(caught.value)
    assert "sha256:<64 hex digits>" in str(caught.value) and "md5:<32 hex digits>" in str(caught.value)


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


def test_load_registry_parses_md5_entries(tmp_path: Path) -> None:
    path = tmp_path / "registry.txt"
    url = "https://example.org/y.tsv?download=1"
    path.write_text(f"{GOOD_LINE}\nx/y.tsv md5:{'ab' * 16} {url}\n", encoding="utf-8")
    entries = load_registry(path)
    assert entries["x/y.tsv"] == registry.RegistryEntry("x/y.tsv", "ab" * 16, url, "md5")
    assert entries["x/y.tsv"].known_hash == f"md5:{'ab' * 16}"
    assert entries["a/b/file.txt"].algorithm == "sha256"


def test_file_digest_uses_the_named_algorithm(tmp_path: Path) -> None:
    path = tmp_path / "blob"
    path.write_bytes(b"teacher scores")
    assert registry.file_digest(path, "md5") == hashlib.md5(b"teacher scores").hexdigest()
    assert registry.file_digest(path) == sha256_of(path) == hashlib.sha256(b"teacher scores").hexdigest()


# --- the paper registry --------------------------------------------------------------------------------------------
TEACHER = "hofstaetter/neural-ranking-kd/bert_cat_ensemble_msmarcopassage_train_scores_ids.tsv"
TEACHER_LINES = b"12.5\t-3.25\t1185869\t0\t2913\n9.0\t1.5\t1185869\t0\t7\n"


@pytest.fixture
def paper_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, registry.RegistryEntry]:
    """A tmp paper registry of one md5 entry (a two-line teacher file) in place of the real one."""
    path = tmp_path / "paper_registry.txt"
    md5 = hashlib.md5(TEACHER_LINES).hexdigest()
    path.write_text(f"# a test paper registry\n{TEACHER} md5:{md5} https://example.org/scores.tsv?download=1\n")
    entries = load_registry(path)
    monkeypatch.setattr(registry, "PAPER_REGISTRY", entries)
    return entries


def test_the_paper_registry_pins_the_teacher_scores_by_md5_and_bert_base_by_sha256() -> None:
    teacher = registry.PAPER_REGISTRY[TEACHER]
    assert (teacher.algorithm, teacher.digest) == ("md5", "4d99696386f96a7f1631076bcc53ac3c")
    assert teacher.url.startswith("https://zenodo.org/record/4068216/files/")
    bert = {name: entry for name, entry in registry.PAPER_REGISTRY.items() if name.startswith("google-bert/")}
    assert len(bert) == 3 and all(entry.algorithm == "sha256" for entry in bert.values())
    revision = "86b5e0934494bd15c9632b12f734a8a67f723594"
    for name, entry in bert.items():
        file = name.removeprefix("google-bert/bert-base-uncased/")
        assert entry.url == f"https://huggingface.co/google-bert/bert-base-uncased/resolve/{revision}/{file}"


def test_fetch_all_never_fetches_a_paper_file(destination: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert not set(REGISTRY) & set(registry.PAPER_REGISTRY), "a paper file must not be a book registry file"
    fetched = []

    def record(entry: registry.RegistryEntry, folder: Path, mirror_required: bool) -> Path:
        fetched.append(entry.name)
        return folder / entry.name

    monkeypatch.setattr(registry, "_fetch_entry", record)
    registry.fetch_all(destination)
    assert sorted(fetched) == sorted(REGISTRY)
    assert not set(fetched) & set(registry.PAPER_REGISTRY)


def test_fetch_paper_takes_a_mirrored_file_into_the_paper_folder(
    paper_registry: dict, tmp_mirror: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TKBOOK_DATA", str(tmp_path / "data"))
    (tmp_mirror / TEACHER).parent.mkdir(parents=True)
    (tmp_mirror / TEACHER).write_bytes(TEACHER_LINES)
    path = registry.fetch_paper(TEACHER)
    assert path == (tmp_path / "data").resolve() / "paper" / TEACHER == registry.paper_dir() / TEACHER
    assert path.read_bytes() == TEACHER_LINES
    assert files_under(registry.paper_dir()) == [path]
    triples, margins = read_teacher_scores(path)
    assert triples == [("1185869", "0", "2913"), ("1185869", "0", "7")] and margins == [15.75, 7.5]


def test_a_modified_paper_file_fails_its_md5_naming_the_file(
    paper_registry: dict, tmp_mirror: Path, destination: Path
) -> None:
    (tmp_mirror / TEACHER).parent.mkdir(parents=True)
    (tmp_mirror / TEACHER).write_bytes(TEACHER_LINES.replace(b"12.5", b"12.6"))
    with pytest.raises(DataFetchError) as caught:
        registry.fetch_paper(TEACHER, destination)
    message = str(caught.value)
    assert TEACHER in message and "md5 mismatch" in message
    assert paper_registry[TEACHER].digest in message
    assert files_under(destination) == []


def test_a_paper_file_the_mirror_lacks_is_downloaded_with_its_md5(
    paper_registry: dict, tmp_mirror: Path, destination: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The book's mirror does not hold the paper files: with ``TKBOOK_MIRROR`` set, they are still downloaded."""
    calls = []

    def fake_retrieve(url: str, known_hash: str, fname: str, path: Path, **kwargs: object) -> str:
        calls.append((url, known_hash, fname))
        (Path(path) / fname).write_bytes(TEACHER_LINES)
        return str(Path(path) / fname)

    monkeypatch.setattr(pooch, "retrieve", fake_retrieve)
    path = registry.fetch_paper(TEACHER, destination)
    entry = paper_registry[TEACHER]
    assert calls == [(entry.url, f"md5:{entry.digest}", Path(TEACHER).name)]
    assert path == destination / TEACHER and path.read_bytes() == TEACHER_LINES


def test_a_book_name_is_not_a_paper_name(paper_registry: dict, destination: Path) -> None:
    with pytest.raises(DataFetchError, match="not in the paper registry") as caught:
        registry.fetch_paper(SMALL_FILE, destination)
    assert str(registry.PAPER_REGISTRY_FILE) in str(caught.value)
    with pytest.raises(DataFetchError, match="not in the registry"):
        fetch(TEACHER, destination)
