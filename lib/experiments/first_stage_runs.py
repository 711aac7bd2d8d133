"""The scored BM25 runs the chapters re-rank: the data folder's, or the ones chapter 1 retrieves.

The book subset ships a scored BM25 run of every judged year. Full MS MARCO's export (the ``paper``
profile) ships the official top-1000 of DL19, DL20 and (part ``dev-small-run``) dev-small with the
score 0 for every candidate (:func:`lib.data.is_unscored`): an order that is no ranking, which neither
a measure at a cut-off nor a cut to a smaller depth can use. For every query set a later chapter
re-ranks or validates on (:func:`rerank_sets`) whose run the data folder lacks or ships unscored,
chapter 1 retrieves a scored BM25 top-k from its Lucene index of the folder's ``collection.tsv``
(:func:`retrieve_missing`) into the profile's runs folder (``artifacts/<profile>/runs/<set>__bm25.trec``,
:func:`lib.core.paths.run_path`); :func:`bm25_run` reads the scored run of a set from wherever it is.
"""

from __future__ import annotations

from pathlib import Path

from lib.core import paths
from lib.core.profiles import Profile, limit_queries
from lib.core.types import Run
from lib.data import held_query_sets, held_runs, is_unscored, load_queries, load_run, read_run
from lib.data.splits import TEST_SETS
from lib.evaluation.measures import write_trec_run
from lib.first_stage import lucene

#: The first stage the chapters re-rank (a system of :data:`lib.first_stage.lucene.METHODS`).
SYSTEM = "bm25"


def _shipped_scored(query_set: str) -> dict[str, dict[str, float]] | None:
    """The data folder's BM25 run of ``query_set`` when it has one with scores, else ``None``."""
    if not held_runs(query_set, (SYSTEM,)):
        return None
    run = load_run(query_set, SYSTEM)
    return None if is_unscored(run) else run


def rerank_sets(profile: Profile) -> tuple[str, ...]:
    """The sets whose BM25 candidates the chapters re-rank: the test years and the profile's validation set.

    Only those whose queries and qrels the data folder has, in that order.
    """
    return held_query_sets(dict.fromkeys((*TEST_SETS, profile.training.validation_set)))


def retrieve_missing(profile: Profile, index_dir: Path, threads: int = 2) -> dict[str, Run]:
    """Retrieve and write a scored BM25 run of every :func:`rerank_sets` set the data folder has none of.

    A set needs one when its run file is missing or unscored. The run ranks the profile's slice of the
    set's queries (:func:`lib.core.profiles.limit_queries`) with BM25 over ``index_dir``
    (:func:`lib.first_stage.lucene.retrieve`), ``profile.training.candidate_depth`` passages deep, and is
    written to ``artifacts/<profile>/runs/<set>__bm25.trec``. Returns the retrieved runs by set: none
    when the folder ships scored runs, as the book subset does.
    """
    runs: dict[str, Run] = {}
    for query_set in rerank_sets(profile):
        if _shipped_scored(query_set) is not None:
            continue
        queries = load_queries(query_set)
        chosen = limit_queries(list(queries), profile)
        run = lucene.retrieve(
            index_dir, {qid: queries[qid] for qid in chosen}, SYSTEM, profile.training.candidate_depth, threads
        )
        write_trec_run(run, paths.run_path(profile.name, query_set, SYSTEM), tag=SYSTEM)
        runs[query_set] = run
    return runs


def bm25_run(profile: Profile, query_set: str) -> dict[str, dict[str, float]]:
    """The scored BM25 run of ``query_set``: the data folder's, else the one chapter 1 retrieved.

    A set whose run the data folder lacks or ships unscored is read from the profile's runs folder;
    a missing file there is a ``FileNotFoundError`` naming chapter 1 and the command that runs it.
    """
    shipped = _shipped_scored(query_set)
    if shipped is not None:
        return shipped
    path = paths.run_path(profile.name, query_set, SYSTEM)
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: missing (the scored BM25 run of {query_set}: the data folder's is missing or unscored); "
            f"chapter 1 (01_data_and_first_stage) retrieves it: run "
            f"`make chapter CH=01_data_and_first_stage PROFILE={profile.name}` first"
        )
    return read_run(path)


def runs_sentence(profile: Profile, retrieved: dict[str, Run]) -> str:
    """What chapter 1 did for the scored BM25 runs of :func:`rerank_sets`: read them, or retrieve them (where)."""
    sets = rerank_sets(profile)
    shipped = [name for name in sets if name not in retrieved]
    parts = []
    if shipped:
        parts.append(f"The data folder ships scored BM25 runs of {', '.join(shipped)}: they are read as they are.")
    if retrieved:
        folder = paths.shown(paths.runs_dir(profile.name))
        parts.append(
            f"Retrieved here, as the data folder's are missing or unscored: BM25 top "
            f"{profile.training.candidate_depth} of {', '.join(retrieved)}, in {folder}/<set>__{SYSTEM}.trec."
        )
    return " ".join(parts)
