"""The lecture's slide map (``lib.book.slide_map``), read from the chapters' headings: complete, and stated."""

from __future__ import annotations

from pathlib import Path

from lib.book import build
from lib.book.slide_map import NOT_COVERED, TAUGHT_SLIDES, headings, slide_sections, slide_table, slides_named

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("[0-9][0-9]_*.py"))


def test_a_heading_names_single_slides_ranges_and_lists() -> None:
    assert slides_named("Splitting BERT: ColBERT (slides 20–21)") == [20, 21]
    assert slides_named("The clusters (slide 28)") == [28]
    assert slides_named("BERT-cat and why it is slow (slides 7–11, 14)") == [7, 8, 9, 10, 11, 14]
    assert slides_named("Table 2 at book scale") == [] and slides_named("(slides 3) and more") == []


def test_only_markdown_headings_count() -> None:
    source = "# %% [markdown]\n# ## A (slide 9)\n# text\n# %%\n# ## Not a heading (slide 10)\nx = 1\n"
    assert headings(source) == ["A (slide 9)"]


def test_every_taught_slide_has_a_section_or_a_stated_reason_never_both() -> None:
    sections = slide_sections(NOTEBOOKS)
    missing = [slide for slide in TAUGHT_SLIDES if slide not in sections and slide not in NOT_COVERED]
    assert not missing, f"slides with no section and no reason in lib/book/slide_map.py: {missing}"
    stale = sorted(set(sections) & set(NOT_COVERED))
    assert not stale, f"slides with a section whose reason for having none is stale: {stale}"
    assert set(sections) <= set(TAUGHT_SLIDES), "a heading names a slide outside 7–40"


def test_a_slide_without_a_section_is_caught(tmp_path: Path) -> None:
    chapter = tmp_path / "08_lecture.py"
    chapter.write_text("# %% [markdown]\n# ## ColBERT (slides 20–21)\n", encoding="utf-8")
    sections = slide_sections([chapter])
    assert [slide for slide in TAUGHT_SLIDES if slide not in sections and slide not in NOT_COVERED][:2] == [7, 8]


def test_the_table_lists_every_taught_slide_with_its_chapter() -> None:
    table = slide_table(NOTEBOOKS)
    assert "| 20 | {doc}`chapters/08_lecture_models` | Splitting BERT: ColBERT (slides 20–21) |" in table
    assert "| 12 | {doc}`chapters/08_lecture_models` | Mono-duo: BERT-cat's top again, in pairs (slide 12) |" in table
    two = slide_table([NOTEBOOKS[0]]).splitlines()[2:]  # chapter 1 alone teaches nothing: every row a reason
    assert len(two) == len(TAUGHT_SLIDES)
    assert ("| 13 | {doc}`chapters/09_long_documents` | BERT-cat on documents: FirstP and MaxP (slide 13); Where "
            "relevance sits: a controlled sweep (slide 13) |") in table  # fmt: skip
    assert "| 38 | {doc}`chapters/09_long_documents` | IDCM: a cascade inside the document (slides 38–40) |" in table
    listed = [int(line.split("|")[1]) for line in table.splitlines()[2:]]
    assert listed == list(TAUGHT_SLIDES)  # one row per slide, however many sections teach it


def test_the_staged_book_writes_the_map_for_the_lecture_page() -> None:
    assert build.SLIDE_MAP_PAGE == "slide_map.md"
    page = (Path(__file__).resolve().parents[2] / "book" / "lecture.md").read_text(encoding="utf-8")
    assert f"```{{include}} chapters/{build.SLIDE_MAP_PAGE}" in page
