"""The lecture's slides and the book's sections, read from the chapters' headings so that the map cannot drift.

A chapter heading that teaches a slide names it: ``## Splitting BERT: ColBERT (slides 20–21)``, ``(slide 28)``,
``(slides 7–11, 14)``. :func:`slide_sections` reads every heading of ``notebooks/NN_topic.py``'s markdown cells;
:data:`NOT_COVERED` gives the stated reason for each slide of :data:`TAUGHT_SLIDES` that no section teaches yet.
:func:`slide_table` is the map the "Lecture companion" page shows (written by :func:`lib.book.build.stage`);
``tests/chapters/test_slide_map.py`` fails when a slide from 7 to 40 has neither a section nor a reason, or both.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

#: The slides that teach (7: BERT recalled, to 40: IDCM); 1–6 and 41–43 frame the lecture.
TAUGHT_SLIDES: tuple[int, ...] = tuple(range(7, 41))

#: Why a taught slide has no section of its own yet (none today: every slide from 7 to 40 has one).
NOT_COVERED: dict[int, str] = {}

_SLIDES = re.compile(r"\(slides? ([0-9–\-, ]+)\)\s*$")
_HEADING = re.compile(r"^# (#{1,6}) (.+)$")


def slides_named(heading: str) -> list[int]:
    """The slides a heading names in its trailing ``(slide N)`` / ``(slides A–B, C)``; none without one."""
    found = _SLIDES.search(heading)
    if found is None:
        return []
    slides: list[int] = []
    for part in found.group(1).split(","):
        low, _, high = part.strip().replace("-", "–").partition("–")
        slides += list(range(int(low), int(high or low) + 1))
    return slides


def headings(source: str) -> list[str]:
    """The headings of a percent-format chapter's markdown cells (``# ## Title`` lines), in order."""
    found, markdown = [], False
    for line in source.split("\n"):
        if line.startswith("# %%"):
            markdown = "[markdown]" in line
        elif markdown and (match := _HEADING.match(line)):
            found.append(match.group(2).strip())
    return found


def slide_sections(notebooks: Iterable[Path]) -> dict[int, list[tuple[str, str]]]:
    """Each slide named by a heading: the ``(chapter, heading)`` pairs that teach it, chapters in name order."""
    sections: dict[int, list[tuple[str, str]]] = {}
    for path in sorted(notebooks):
        for heading in headings(path.read_text(encoding="utf-8")):
            for slide in slides_named(heading):
                sections.setdefault(slide, []).append((path.stem, heading))
    return sections


def slide_table(notebooks: Iterable[Path]) -> str:
    """A Markdown table, one row per taught slide: the chapters and sections that teach it (several in one row), or
    the reason none does yet."""
    sections = slide_sections(notebooks)
    rows = ["| slide | chapters | sections |", "|---:|---|---|"]
    for slide in TAUGHT_SLIDES:
        if slide in sections:
            chapters = ", ".join(dict.fromkeys(f"{{doc}}`chapters/{chapter}`" for chapter, _ in sections[slide]))
            rows.append(f"| {slide} | {chapters} | {'; '.join(heading for _, heading in sections[slide])} |")
        else:
            rows.append(f"| {slide} | — | {NOT_COVERED.get(slide, 'no section and no stated reason')} |")
    return "\n".join(rows) + "\n"


__all__ = ["NOT_COVERED", "TAUGHT_SLIDES", "headings", "slide_sections", "slide_table", "slides_named"]
