"""Execute the book's chapters with papermill, in ``_toc.yml`` order, re-running only what changed.

``python -m lib.book.build --profile smoke`` (what ``make book`` calls) reads the executed-chapter
entries of ``_toc.yml`` (``book/chapters/NN_topic``), converts each source ``notebooks/NN_topic.py``
(jupytext percent format) to a notebook and executes it with papermill into the profile's own folder
``_build/<profile>/chapters/NN_topic.ipynb``, injecting the ``profile`` (and any ``--param``) into
the cell tagged ``parameters``. Profiles never overwrite each other: ``--stage`` copies one profile's
executed chapters into ``book/chapters/``, where Jupyter Book reads them, right before it renders
that profile's HTML into ``_build/<profile>/``.

A chapter is re-executed only when its *fingerprint* changed: the sha256 of its source, of the
``lib/`` modules it imports (:func:`lib.core.dependencies.library_fingerprint`: transitively, read with
:mod:`ast`, with the ``__init__`` files of their packages and the data files beside them), of the
``manifest.json`` of the profile's data folder (:func:`lib.core.paths.converted_dir`: the converted book
subset, or the ``paper`` profile's MS MARCO export; a chapter reads the same folder,
:func:`lib.chapters.prologue.start_chapter`), of the committed files it reads (:data:`COMMITTED_INPUTS`:
the benchmark results chapters 3, 8 and 9 show), of its parameters, and of the fingerprints of the chapters
before it (later chapters read earlier chapters' artifacts). Editing a module that only chapter 6 imports
therefore re-executes chapter 6 alone. The fingerprint is stored beside the output
(``.NN_topic.stamp.json``) once the chapter succeeded; the executed notebook is written to a temporary
file first and renamed, so an interrupted run never leaves a chapter that looks complete. A chapter that
raises stops the build with an error naming the chapter and the cell; its partly executed notebook is
kept as ``NN_topic.failed.ipynb``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from lib.book.slide_map import slide_table
from lib.core import paths
from lib.core.atomic import write_json, write_text
from lib.core.decisions import decisions_table
from lib.core.dependencies import library_fingerprint
from lib.core.profiles import get_profile
from lib.data import fill_command

CHAPTERS_DIR = "book/chapters"
#: The page the staged build writes the chapters' times into, included by ``book/build_times_and_decisions.md``.
TIMES_PAGE = "build_times.md"
#: The page the staged build writes the record of decisions into (:mod:`lib.core.decisions`), included there too.
DECISIONS_PAGE = "decisions.md"
#: The page the staged build writes the lecture's slide map into (:mod:`lib.book.slide_map`), for the lecture page.
SLIDE_MAP_PAGE = "slide_map.md"
#: The book's time budget per chapter on 2 CPU cores, ``book`` profile, from scratch (minutes; the Reproducing page's
#: target): every chapter 15 minutes except chapter 2's 20, the whole book 60.
BUDGET_MINUTES: dict[str, float] = {"02_training": 20.0}
DEFAULT_BUDGET_MINUTES = 15.0
TOTAL_BUDGET_MINUTES = 60.0
#: Committed files a chapter reads besides its data and ``lib/`` (repository-relative globs), part of its
#: fingerprint: chapter 3 tabulates every benchmark result committed under ``benchmarks/results/``.
COMMITTED_INPUTS: dict[str, tuple[str, ...]] = {
    "03_time_budget": (
        "benchmarks/results/*.json",
        "benchmarks/results/regimes/*.json",
        "benchmarks/results/cold/*.json",
    ),
    "08_lecture_models": ("benchmarks/results/regimes/*.json",),
    "09_long_documents": ("benchmarks/results/long/*.json",),
}


def executed_dir(profile_name: str, root: Path = paths.REPO_ROOT) -> Path:
    """Where profile ``profile_name``'s executed chapters and their stamps live: ``_build/<profile>/chapters``
    (``TKBOOK_BUILD`` moves ``_build``, :func:`lib.core.paths.build_dir`)."""
    return paths.build_dir(root) / profile_name / "chapters"


class ChapterError(RuntimeError):
    """A chapter is missing, malformed, or raised while executing."""


@dataclass(frozen=True)
class Chapter:
    """One executed chapter: its ``name`` (``NN_topic``), ``source`` (.py) and ``output`` (.ipynb)."""

    name: str
    source: Path
    output: Path

    @property
    def stamp(self) -> Path:
        return self.output.with_name(f".{self.name}.stamp.json")

    @property
    def failed(self) -> Path:
        return self.output.with_name(f"{self.name}.failed.ipynb")


def _toc_files(entries: list[Any]) -> list[str]:
    files: list[str] = []
    for entry in entries or []:
        if isinstance(entry, dict):
            if "file" in entry:
                files.append(str(entry["file"]))
            for key in ("parts", "chapters", "sections"):
                files += _toc_files(entry.get(key, []))
    return files


def toc_files(toc: dict[str, Any]) -> list[str]:
    """Every file a parsed ``_toc.yml`` lists (parts, chapters, sections), the root first, in reading order, as
    written there."""
    return [str(toc.get("root", ""))] + _toc_files(toc.get("parts", []) + toc.get("chapters", []))


def chapters_in_toc(profile_name: str = "book", root: Path = paths.REPO_ROOT) -> list[Chapter]:
    """The executed chapters listed in ``_toc.yml``, in order, with their sources and the outputs of profile
    ``profile_name``."""
    toc_path = root / "_toc.yml"
    toc = yaml.safe_load(toc_path.read_text(encoding="utf-8"))
    files = toc_files(toc)
    chapters = []
    for file in files:
        file = file.removesuffix(".ipynb")
        if not file.startswith(CHAPTERS_DIR + "/"):
            continue
        name = file.rsplit("/", 1)[1]
        source = root / "notebooks" / f"{name}.py"
        if not source.is_file():
            raise ChapterError(f"{toc_path}: chapter {file!r} has no source {source.relative_to(root)}")
        chapters.append(Chapter(name, source, executed_dir(profile_name, root) / f"{name}.ipynb"))
    return chapters


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def data_fingerprint(profile_name: str) -> str:
    """The sha256 of the manifest of profile ``profile_name``'s data folder (every file's hash); a missing one names
    the command."""
    folder = paths.converted_dir(profile_name)
    manifest = folder / "manifest.json"
    if not manifest.is_file():
        raise ChapterError(f"{manifest}: missing; run {fill_command(folder)} first")
    return _sha256(manifest.read_bytes())


def inputs_fingerprint(name: str, root: Path = paths.REPO_ROOT) -> str:
    """The sha256 over chapter ``name``'s :data:`COMMITTED_INPUTS` (each file's path and content, in path order)."""
    digest = hashlib.sha256()
    for pattern in COMMITTED_INPUTS.get(name, ()):
        for path in sorted(root.glob(pattern)):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()


def fingerprint(
    chapter: Chapter, parameters: Mapping[str, Any], previous: str, library: str, data: str, inputs: str
) -> str:
    """A chapter's fingerprint: source, the library it imports (``library``), data, the committed files it reads
    (``inputs``, :func:`inputs_fingerprint`), parameters, the previous one's."""
    parts = {
        "source": _sha256(chapter.source.read_bytes()),
        "lib": library,
        "data": data,
        "inputs": inputs,
        "parameters": json.dumps(dict(parameters), sort_keys=True),
        "previous": previous,
    }
    return _sha256(json.dumps(parts, sort_keys=True).encode())


def _stored_fingerprint(chapter: Chapter) -> str | None:
    if not (chapter.output.is_file() and chapter.stamp.is_file()):
        return None
    try:
        return json.loads(chapter.stamp.read_text(encoding="utf-8")).get("fingerprint")
    except (OSError, json.JSONDecodeError):
        return None


def _check_parameters_cell(chapter: Chapter, notebook: Any) -> None:
    if not any("parameters" in cell.get("metadata", {}).get("tags", []) for cell in notebook.cells):
        raise ChapterError(f"{chapter.source}: no cell tagged 'parameters' (papermill needs one)")


def execute(chapter: Chapter, parameters: Mapping[str, Any], kernel: str = "python3") -> float:
    """Execute one chapter into its output notebook; returns the wall time in seconds."""
    import jupytext
    import nbformat
    import papermill
    from papermill.exceptions import PapermillExecutionError

    notebook = jupytext.read(chapter.source)
    _check_parameters_cell(chapter, notebook)
    notebook.metadata["kernelspec"] = {"name": kernel, "display_name": "Python 3", "language": "python"}
    chapter.output.parent.mkdir(parents=True, exist_ok=True)
    source_ipynb = chapter.output.with_name(f".{chapter.name}.source.ipynb")
    partial = chapter.output.with_name(f".{chapter.name}.partial.ipynb")
    nbformat.write(notebook, source_ipynb)
    start = time.perf_counter()
    try:
        papermill.execute_notebook(
            str(source_ipynb),
            str(partial),
            parameters=dict(parameters),
            kernel_name=kernel,
            cwd=str(chapter.output.parent),
            progress_bar=False,
            log_output=False,
        )
    except PapermillExecutionError as error:
        os.replace(partial, chapter.failed)
        raise ChapterError(
            f"chapter {chapter.name} ({chapter.source}) failed in cell "
            f"{error.cell_index} (execution count {error.exec_count}): {error.ename}: {error.evalue}\n"
            f"the partly executed notebook is {chapter.failed}"
        ) from None
    finally:
        source_ipynb.unlink(missing_ok=True)
    os.replace(partial, chapter.output)
    chapter.failed.unlink(missing_ok=True)
    return time.perf_counter() - start


def run(
    profile_name: str, extra: Mapping[str, Any] | None = None, only: str | None = None, force: bool = False
) -> None:
    """Execute every chapter of ``_toc.yml`` whose fingerprint changed (or just ``only``)."""
    get_profile(profile_name)  # fail early on a bad profile name
    parameters = {"profile": profile_name, **(extra or {})}
    chapters = chapters_in_toc(profile_name)
    if only is not None and only not in {chapter.name for chapter in chapters}:
        raise ChapterError(f"--only {only!r}: not a chapter of _toc.yml ({[c.name for c in chapters]})")
    data = data_fingerprint(profile_name)
    previous = ""
    for chapter in chapters:
        library = library_fingerprint(chapter.source)
        current = fingerprint(chapter, parameters, previous, library, data, inputs_fingerprint(chapter.name))
        previous = current
        if only is not None and chapter.name != only:
            continue
        if not force and _stored_fingerprint(chapter) == current:
            print(f"[chapters] {chapter.name}: up to date ({profile_name})", flush=True)
            continue
        print(f"[chapters] {chapter.name}: executing with {parameters} …", flush=True)
        chapter.stamp.unlink(missing_ok=True)
        seconds = execute(chapter, parameters)
        write_json(chapter.stamp, {"fingerprint": current, "parameters": parameters, "seconds": round(seconds, 1)})
        print(f"[chapters] {chapter.name}: done in {seconds:.0f} s", flush=True)
    if only is None:
        print(f"[chapters] time per chapter ({profile_name} profile; from each chapter's last execution):", flush=True)
        print(times_table(profile_name, chapter_times(chapters)), flush=True)


def stage(profile_name: str, root: Path = paths.REPO_ROOT) -> Path:
    """Copy profile ``profile_name``'s executed chapters into ``book/chapters/`` for Jupyter Book; the folder.

    Every chapter of ``_toc.yml`` must have been executed for this profile (else a :class:`ChapterError`
    naming the missing ones and the command); other notebooks in ``book/chapters/`` are removed. The
    cell papermill injected (tagged ``injected-parameters``) is tagged ``remove-cell`` in the staged
    copy, so the page shows the chapter's own parameters cell (how a reader re-runs it) and not the
    injected one. The chapters' times (:func:`times_table`) go to :data:`TIMES_PAGE` beside them, and the ``book``
    and ``paper`` profiles' decisions (:func:`lib.core.decisions.decisions_table`) to :data:`DECISIONS_PAGE`, which
    the "Build times and decisions" page includes, and the lecture's slide map
    (:func:`lib.book.slide_map.slide_table`) to :data:`SLIDE_MAP_PAGE`, which the "Lecture companion" page includes.
    """
    get_profile(profile_name)
    chapters = chapters_in_toc(profile_name, root)
    missing = [chapter.name for chapter in chapters if not chapter.output.is_file()]
    if missing:
        raise ChapterError(
            f"profile {profile_name!r} has not executed {missing}: run `make chapters PROFILE={profile_name}`"
        )
    target = root / CHAPTERS_DIR
    target.mkdir(parents=True, exist_ok=True)
    wanted = {f"{chapter.name}.ipynb" for chapter in chapters}
    for stale in target.glob("*.ipynb"):
        if stale.name not in wanted:
            stale.unlink()
    for chapter in chapters:
        notebook = json.loads(chapter.output.read_text(encoding="utf-8"))
        for cell in notebook.get("cells", []):
            tags = cell.setdefault("metadata", {}).setdefault("tags", [])
            if "injected-parameters" in tags and "remove-cell" not in tags:
                tags.append("remove-cell")
        write_json(target / f"{chapter.name}.ipynb", notebook)
    write_text(target / TIMES_PAGE, times_table(profile_name, chapter_times(chapters)))
    write_text(target / DECISIONS_PAGE, decisions_page())
    write_text(target / SLIDE_MAP_PAGE, slide_table(chapter.source for chapter in chapters))
    return target


def decisions_page() -> str:
    """The "Build times and decisions" page's decisions: the ``book`` profile's table, then the ``paper`` profile's."""
    return "\n".join(f"**The `{name}` profile**\n\n{decisions_table(name)}" for name in ("book", "paper"))


def chapter_times(chapters: Sequence[Chapter]) -> dict[str, float | None]:
    """Each chapter's execution time in seconds from its stamp (``None``: not executed for its profile yet).

    A stamp records the run that last executed the chapter: chapters that were up to date keep the time of
    the run that made them."""
    times: dict[str, float | None] = {}
    for chapter in chapters:
        seconds = None
        if chapter.stamp.is_file():
            seconds = json.loads(chapter.stamp.read_text(encoding="utf-8")).get("seconds")
        times[chapter.name] = None if seconds is None else float(seconds)
    return times


def times_table(profile_name: str, times: Mapping[str, float | None]) -> str:
    """A Markdown table of ``times`` (:func:`chapter_times`) in minutes, with the total and, for ``book``,
    each chapter's budget on 2 CPU cores (:data:`BUDGET_MINUTES`)."""
    budgets = profile_name == "book"
    header = "| chapter | minutes |" + (" budget (2 CPU cores) |" if budgets else "")
    rows = [header, "|---|---:|" + ("---:|" if budgets else "")]

    def row(name: str, seconds: float | None, budget: float) -> str:
        minutes = "not executed" if seconds is None else f"{seconds / 60:.1f}"
        return f"| {name} | {minutes} |" + (f" ≤ {budget:.0f} |" if budgets else "")

    for name, seconds in times.items():
        rows.append(row(name, seconds, BUDGET_MINUTES.get(name, DEFAULT_BUDGET_MINUTES)))
    known = [seconds for seconds in times.values() if seconds is not None]
    total = sum(known) if len(known) == len(times) else None
    rows.append(row("**total**", total, TOTAL_BUDGET_MINUTES))
    return "\n".join(rows) + "\n"


@dataclass(frozen=True)
class CellCost:
    """One executed code cell's time: its chapter, execution count, seconds, and first line of source."""

    chapter: str
    cell: int
    seconds: float
    first_line: str


def chapter_costs(profile_name: str, top: int = 5, root: Path = paths.REPO_ROOT) -> list[CellCost]:
    """The ``top`` slowest code cells of each executed chapter of profile ``profile_name``, slowest first, from the
    per-cell durations papermill records in the executed notebooks (where a chapter's time goes)."""
    costs: list[CellCost] = []
    for chapter in chapters_in_toc(profile_name, root):
        if not chapter.output.is_file():
            continue
        notebook = json.loads(chapter.output.read_text(encoding="utf-8"))
        cells = []
        for cell in notebook.get("cells", []):
            seconds = cell.get("metadata", {}).get("papermill", {}).get("duration")
            if cell.get("cell_type") != "code" or seconds is None:
                continue
            source = "".join(cell.get("source", ""))
            first = next((line for line in source.splitlines() if line.strip()), "")
            cells.append(CellCost(chapter.name, int(cell.get("execution_count") or 0), float(seconds), first))
        costs += sorted(cells, key=lambda cost: -cost.seconds)[:top]
    return costs


def _parse_param(text: str) -> tuple[str, Any]:
    key, separator, value = text.partition("=")
    if not separator or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"--param expects KEY=VALUE, got {text!r}")
    return key, yaml.safe_load(value)


def main(argv: list[str] | None = None) -> int:
    """Command line: ``python -m lib.book.build --profile smoke [--only NAME] [--param KEY=VALUE …]``."""
    parser = argparse.ArgumentParser(description="Execute the book's chapters with papermill.")
    parser.add_argument("--profile", default="book", help="smoke, book (default) or paper")
    parser.add_argument("--only", default=None, help="execute only this chapter (e.g. 01_data_and_first_stage)")
    parser.add_argument("--param", action="append", type=_parse_param, default=[], help="extra parameter KEY=VALUE")
    parser.add_argument("--force", action="store_true", help="execute even when up to date")
    parser.add_argument("--stage", action="store_true", help="only copy the profile's chapters into book/chapters")
    parser.add_argument("--costs", action="store_true", help="print each chapter's time and its 5 slowest cells")
    args = parser.parse_args(argv)
    try:
        if args.costs:
            print(times_table(args.profile, chapter_times(chapters_in_toc(args.profile))))
            for cost in chapter_costs(args.profile):
                print(f"{cost.chapter}  cell {cost.cell:>3}  {cost.seconds:8.1f} s  {cost.first_line[:80]}")
        elif args.stage:
            print(f"[chapters] {args.profile} chapters staged in {stage(args.profile)}", flush=True)
        else:
            run(args.profile, dict(args.param), args.only, args.force)
    except (ChapterError, ValueError) as error:
        print(f"[chapters] error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
