"""The rendered book as a reader opens it: headless Chromium, network off, pages over ``file://``.

Every page of ``_toc.yml`` must have each formula typeset by the MathJax copy inside the book
(``mjx-container`` in every ``.math`` element, no ``mjx-merror``) and each figure loaded
(``naturalWidth > 0``). A chapter page shows its own parameters cell (how a reader re-runs it), not
the cell papermill injected, and collapses its import cells (tag ``hide-input``). One screen of each
page, scrolled to its first formula (else its first figure), is saved to
``_build/<profile>/screenshots/<page>.png`` for a reviewer.

``make test`` runs this module after rendering the smoke book (Makefile, target ``nbval``) with
``TKBOOK_REQUIRE_PAGES=1``, which makes a page that was not rendered a failure; in the unit-test pass,
before the book is rendered, the page checks are skipped. ``.ci/run`` installs Debian's ``chromium``
and sets ``TKBOOK_REQUIRE_BROWSER=1``, which makes a missing browser a failure; elsewhere the module
is skipped with the command that installs one. ``TKBOOK_PAGES_PROFILE=book`` checks the book profile.
"""

from __future__ import annotations

import os
from pathlib import Path

import mathjax
import pytest
import yaml

from lib.core import paths
from tests.chromium import Chromium, find_browser

PROFILE = os.environ.get("TKBOOK_PAGES_PROFILE", "smoke")
HTML = paths.REPO_ROOT / "_build" / PROFILE / "_build" / "html"
SCREENSHOTS = paths.REPO_ROOT / "_build" / PROFILE / "screenshots"

# What a page shows once MathJax's first typesetting pass is over (awaited when MathJax loaded at all).
READ_PAGE = """(async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  const math = [...document.querySelectorAll('.math')];
  return {
    formulas: math.length,
    untypeset: math.filter(e => !e.querySelector('mjx-container')).map(e => e.textContent.slice(0, 80)),
    errors: [...document.querySelectorAll('mjx-merror')].map(e => e.textContent.slice(0, 80)),
    figures: document.images.length,
    broken: [...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.getAttribute('src')),
    cells: document.querySelectorAll('.cell').length,
    parameters: document.querySelectorAll('.cell.tag_parameters').length,
    injected: document.querySelectorAll('.cell.tag_injected-parameters').length,
    open_imports: [...document.querySelectorAll('.cell:not(.tag_hide-input) .cell_input')]
      .map(e => e.textContent.trim()).filter(text => /^(import |from \\S+ import )/.test(text))
      .map(text => text.slice(0, 60)),
  };
})()"""
SCROLL_TO_CONTENT = """(document.querySelector('.math') || document.querySelector('main img'))
  ?.scrollIntoView({block: 'center'})"""


def toc_pages() -> list[str]:
    """The pages of ``_toc.yml`` in reading order, sections included, as paths without suffix
    (``book/chapters/02_training``)."""
    toc = yaml.safe_load((paths.REPO_ROOT / "_toc.yml").read_text(encoding="utf-8"))

    def files(entries: list[dict]) -> list[str]:
        return [page for entry in entries for page in [entry["file"], *files(entry.get("sections", []))]]

    return [toc["root"]] + [page for part in toc["parts"] for page in files(part["chapters"])]


@pytest.fixture(scope="module")
def browser():
    executable = find_browser()
    if executable is None:
        if os.environ.get("TKBOOK_REQUIRE_BROWSER") == "1":
            pytest.fail("no Chromium on PATH: `apt-get install chromium` (.ci/run does it)")
        pytest.skip("no Chromium on PATH: `apt-get install chromium` to check the rendered pages")
    with Chromium(executable) as chromium:
        yield chromium


def formula_page(tmp_path: Path, mathjax_src: str) -> str:
    page = tmp_path / "formula.html"
    page.write_text(
        f'<html><head><script async src="{mathjax_src}"></script></head>'
        r'<body><span class="math">\(W_{\log} = \sum_k \log K_k\)</span></body></html>',
        encoding="utf-8",
    )
    return page.as_uri()


def test_a_page_that_loads_mathjax_from_a_cdn_shows_raw_latex(browser, tmp_path):
    session = browser.open(formula_page(tmp_path, "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js"))
    page = browser.evaluate(session, READ_PAGE)
    assert page["formulas"] == 1 and page["untypeset"] == [r"\(W_{\log} = \sum_k \log K_k\)"]


def test_the_pinned_mathjax_package_typesets_offline(browser, tmp_path):
    script = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5" / "tex-mml-chtml.js"
    session = browser.open(formula_page(tmp_path, script.as_uri()))
    page = browser.evaluate(session, READ_PAGE)
    assert page["formulas"] == 1 and page["untypeset"] == [] and page["errors"] == []


@pytest.mark.parametrize("page", toc_pages())
def test_a_rendered_page_typesets_its_formulas_and_loads_its_figures_offline(browser, page):
    html = HTML / f"{page}.html"
    if not html.is_file():
        if os.environ.get("TKBOOK_REQUIRE_PAGES") == "1":
            pytest.fail(f"{html}: the {PROFILE} book was not rendered (`make book PROFILE={PROFILE}`)")
        pytest.skip(f"the {PROFILE} book is rendered later in `make test`")
    session = browser.open(html.as_uri())
    shown = browser.evaluate(session, READ_PAGE)
    assert shown["untypeset"] == [], f"{html}: formulas left as raw LaTeX"
    assert shown["errors"] == [], f"{html}: MathJax could not typeset these formulas"
    assert shown["broken"] == [], f"{html}: figures that did not load"
    if shown["cells"]:  # a chapter: its parameters cell shown, papermill's injected one and its imports not
        assert shown["parameters"] == 1, f"{html}: the chapter's parameters cell is not shown"
        assert shown["injected"] == 0, f"{html}: papermill's injected-parameters cell is shown"
        assert shown["open_imports"] == [], f"{html}: import cells not collapsed (tag them hide-input)"
    browser.evaluate(session, SCROLL_TO_CONTENT)
    screenshot = SCREENSHOTS / f"{Path(page).name}.png"
    browser.screenshot(session, screenshot)
    assert screenshot.stat().st_size > 0
