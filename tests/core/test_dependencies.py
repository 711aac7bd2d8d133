"""Which lib/ files a source depends on (``lib.core.dependencies``): imports read transitively, and their hash."""

from __future__ import annotations

import pytest

from lib.core import paths
from lib.core.dependencies import library_files, library_fingerprint


def _write(path, text: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def tiny_repo(tmp_path):
    """A repository with lib/ packages: chapter 1 imports lib.core.units, chapter 6 lib.chapters.six, which
    imports lib.models.deep (``from lib.models import deep``), which imports lib.core.units relatively."""
    for package in ("lib", "lib/core", "lib/models", "lib/chapters"):
        _write(tmp_path / package / "__init__.py", '"""package"""\n')
    _write(tmp_path / "lib/core/units.py", "SCALE = 1\n")
    _write(tmp_path / "lib/core/table.txt", "a data file beside a module\n")
    _write(tmp_path / "lib/models/deep.py", "from ..core.units import SCALE\n")
    _write(tmp_path / "lib/models/unused.py", "X = 1\n")
    _write(tmp_path / "lib/chapters/six.py", "def run():\n    from lib.models import deep\n    return deep\n")
    _write(tmp_path / "notebooks/01_one.py", "# %%\nimport numpy\nfrom lib.core.units import SCALE\n")
    _write(tmp_path / "notebooks/06_six.py", "# %%\nfrom lib.chapters import six\n")
    return tmp_path


def test_library_files_are_the_imports_transitively_with_package_inits_and_data_files(tiny_repo):
    def names(chapter: str) -> list[str]:
        return [str(p.relative_to(tiny_repo)) for p in library_files(tiny_repo / chapter, tiny_repo)]

    assert names("notebooks/01_one.py") == [
        "lib/__init__.py", "lib/core/__init__.py", "lib/core/table.txt", "lib/core/units.py"
    ]  # fmt: skip
    assert names("notebooks/06_six.py") == [
        "lib/__init__.py", "lib/chapters/__init__.py", "lib/chapters/six.py", "lib/core/__init__.py",
        "lib/core/table.txt", "lib/core/units.py", "lib/models/__init__.py", "lib/models/deep.py",
    ]  # fmt: skip


def test_editing_a_module_of_chapter_6_only_changes_chapter_6s_library_fingerprint(tiny_repo):
    one, six = tiny_repo / "notebooks/01_one.py", tiny_repo / "notebooks/06_six.py"
    before = library_fingerprint(one, tiny_repo), library_fingerprint(six, tiny_repo)
    _write(tiny_repo / "lib/models/deep.py", "from ..core.units import SCALE\nDEPTH = 2 * SCALE\n")
    after = library_fingerprint(one, tiny_repo), library_fingerprint(six, tiny_repo)
    assert after[0] == before[0], "chapter 1 does not import lib.models.deep"
    assert after[1] != before[1], "chapter 6 imports lib.models.deep through lib.chapters.six"
    _write(tiny_repo / "lib/models/unused.py", "X = 2\n")
    assert library_fingerprint(six, tiny_repo) == after[1], "a module nobody imports does not count"
    _write(tiny_repo / "lib/core/units.py", "SCALE = 3\n")
    assert library_fingerprint(one, tiny_repo) != after[0]
    assert library_fingerprint(six, tiny_repo) != after[1], "a module imported transitively counts"


def test_the_books_chapter_6_helpers_are_not_part_of_chapter_1s_library():
    first = library_files(paths.REPO_ROOT / "notebooks" / "01_data_and_first_stage.py")
    sixth = library_files(paths.REPO_ROOT / "notebooks" / "06_tilde.py")
    tilde_tables = paths.REPO_ROOT / "lib" / "chapters" / "tilde_tables.py"
    assert tilde_tables in sixth and tilde_tables not in first
    assert paths.REPO_ROOT / "lib" / "__init__.py" in first


def test_a_source_that_does_not_parse_is_an_error_naming_file_and_line(tmp_path):
    _write(tmp_path / "notebooks/01_bad.py", "# %%\nimport (\n")
    with pytest.raises(ValueError, match=r"01_bad\.py:2"):
        library_files(tmp_path / "notebooks/01_bad.py", tmp_path)
