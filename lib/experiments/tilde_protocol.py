"""Chapter 6's protocol: what TILDE and TILDEv2 start from and learn from, what they re-rank, and the comparisons.

- :func:`starting_bert` — all-MiniLM-L6-v2 (or chapter 2's small BERT; ``paper``: ``bert-base-uncased`` by
  name), the weights every TILDE variant and TILDEv2 are fine-tuned from (TILDE paper §4.1 starts from BERT-Base).
- :func:`trained_part` — what a ``trainable_layers`` setting fine-tunes, in words for the chapter;
  :func:`training_config`, :func:`v2_training_config` — TILDE's and TILDEv2's fine-tuning from the chapter's settings.
- :func:`teacher_labelled` — chapter 2's teacher-labelled queries and the teacher's scores of their candidates;
  :func:`tilde_training_data` — TILDE's pairs: the judged pairs of the profile (DL21's; ``paper``: MS MARCO's training
  judgments, as :mod:`lib.training.paper_tilde`) and the teacher's, :func:`judged_source` how the chapter names them;
  :func:`judged_groups` — TILDEv2's groups of the judged training queries that have a BM25 run.
- :func:`pooled_cache` — where a frozen encoder's vectors are kept, holding chapter 2's teacher vectors of
  every book passage when TILDE's encoder and pooling are the teacher's.
- :func:`check_test_sets` — the chapter's test and ablation years must be folds of the protocol.
- :func:`evaluation_year` — a test year's judged sets (:class:`lib.core.types.JudgedSet`), one per first stage the
  data folder has (BM25's scored run always, :func:`lib.experiments.first_stage_runs.bm25_run`): its queries,
  judgments and the top-``depth`` candidates that have text (the profile's judged queries).
- :func:`score_both_precisions` — one model pass, TILDE-QL/-DL scores of every first stage from the float16
  index (the one the paper stores and serves, §3.2) and, as a check, from the float32 vectors.
- :func:`ablation_scores` — every other variant's scores of BM25's candidates (Table 3).
- :func:`tilde_v2_scores` — TILDEv2's scores of every year's BM25 candidates from its sparse index.
- :func:`table2_systems` — the rows of the paper's Table 2 at book scale: each first stage, re-ranked by
  TILDE-QL and TILDE-QDL, BM25 in a seeded random order, BM25 re-ranked by TILDEv2 and by chapter 2's TK-2
  and BERT-cat; :func:`run_names` — the run-file names of this chapter's re-rankings.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from lib.core import paths
from lib.core.profiles import Profile, TildeSettings, limit_queries
from lib.core.types import JudgedSet, top_of_run
from lib.data import held_runs, load_qrels, load_queries, load_run
from lib.data.splits import FOLDS
from lib.experiments import artifacts
from lib.experiments.distillation_protocol import validation_set
from lib.experiments.distillation_set import DistillationSet, build_distillation_set, file_distillation_set
from lib.experiments.first_stage_runs import bm25_run, rerank_sets
from lib.experiments.tilde_scorings import scoring_runs
from lib.models.bi_encoder import BiEncoder
from lib.models.registry import label
from lib.models.tilde import PASSAGE_MARKER_ID, QUERY_MARKER_ID, Tilde
from lib.models.tilde_pooled_cache import PooledCache
from lib.models.tilde_v2 import TildeV2
from lib.models.tilde_vocabulary import TargetVocabulary
from lib.representations.bert import CLS_ID, WordPieceTokenizer, load_tokenizer
from lib.representations.pretrained import (
    BERT_BASE_REVISION,
    MINILM_FILES,
    bert_base_uncased_folder,
    minilm_folder,
    pin,
)
from lib.reranking.scoring import rerank
from lib.reranking.tilde_index import cast_index, load_index
from lib.reranking.tilde_runs import IndexSummary, candidate_pids, random_order, score_first_stages
from lib.reranking.tilde_scoring import TildeScores, score_run
from lib.reranking.tilde_v2_index import TildeV2Index
from lib.reranking.tilde_v2_index import build_index as build_tilde_v2_index
from lib.reranking.tilde_v2_index import score_run as score_v2_run
from lib.training.tilde import (
    MIN_RELEVANCE,
    MSMARCO_TRAIN_SET,
    TildeTrainingConfig,
    TildeTrainingData,
    fold_training_data,
    msmarco_training_data,
    with_teacher_pairs,
)
from lib.training.tilde_v2 import Group, TildeV2TrainingConfig, groups
from lib.training.tilde_variants import MAIN_VARIANT, VARIANTS

#: The first stage the ablation, the random order and chapter 2's models re-rank.
BM25 = "bm25"
#: Chapter 2's models shown in Table 2 for context: (model name, label).
CHAPTER2_MODELS: tuple[tuple[str, str], ...] = tuple((name, label(name)) for name in ("tk2", "bert-cat"))
#: The index precisions: float16 as stored and served (paper §3.2), float32 the model's own scores.
PRECISIONS: tuple[str, ...] = ("float16", "float32")


#: The seed of the weights a starting encoder lacks (TILDE's new head, TILDEv2's projection).
INIT_SEED = 0
#: The encoders chapter 6 can start TILDE and TILDEv2 from (its ``start`` parameter); ``paper``: BERT-Base.
STARTS: tuple[str, ...] = ("minilm", "small-bert")


@dataclass(frozen=True)
class StartingBert:
    """The encoder every model is fine-tuned from: its folder (or hub name), tokenizer and TILDE's input choices.

    ``markers`` are the ids TILDE puts at position 0 of a passage and of a query, ``pooling`` what its
    head reads (:mod:`lib.models.tilde`); ``description`` says where the weights come from.
    """

    name: str
    path: Path | str
    tokenizer: WordPieceTokenizer
    markers: tuple[int, int]
    pooling: str
    description: str

    def __str__(self) -> str:
        return self.description

    def tilde(self) -> Tilde:
        """A new TILDE on these weights; a new head is initialised from :data:`INIT_SEED`, so every call
        (every variant, every re-run) starts from the same weights."""
        with torch.random.fork_rng():
            torch.manual_seed(INIT_SEED)
            return Tilde(self.path, *self.markers, pooling=self.pooling)

    def tilde_v2(self) -> TildeV2:
        """A new TILDEv2 on these weights, its projection initialised from :data:`INIT_SEED`."""
        with torch.random.fork_rng():
            torch.manual_seed(INIT_SEED)
            return TildeV2(self.path)


def starting_bert(profile: Profile, start: str = "minilm") -> StartingBert:
    """The encoder of ``profile``: all-MiniLM-L6-v2 (``start="minilm"``) or chapter 2's small BERT (``"small-bert"``,
    an error naming chapter 2 when missing); a profile on the paper's code path (:attr:`Profile.paper_path`)
    starts from its ``training.bert_cat_start``: ``paper``'s bert-base-uncased from its pinned, hash-checked
    folder (:func:`lib.representations.pretrained.bert_base_uncased_folder`, fetched once), ``paper-mini``'s
    MiniLM (a named substitution).

    MiniLM was trained with mean pooling and never saw the ``[unused]`` markers, so its TILDE reads the
    unit-length mean of the output vectors — MiniLM's own sentence vector, the one chapter 2's teacher
    uses (:func:`pooled_cache`) — and starts every input with ``[CLS]`` (the paper's text); the small
    BERT and BERT-Base keep the authors' markers and the first position.
    """
    markers = (PASSAGE_MARKER_ID, QUERY_MARKER_ID)
    if profile.paper_path:
        start = profile.training.bert_cat_start
    if start == "bert-base-uncased":
        folder = bert_base_uncased_folder()
        return StartingBert(
            "bert-base-uncased", folder, load_tokenizer(folder), markers, "first",
            f"bert-base-uncased (Hugging Face revision {BERT_BASE_REVISION[:12]}, hash-checked)",
        )  # fmt: skip
    if start not in STARTS:
        raise ValueError(f"parameter 'start' must be one of {list(STARTS)}, got {start!r}")
    if start == "minilm":
        folder = minilm_folder()
        return StartingBert(
            "minilm", folder, load_tokenizer(folder), (CLS_ID, CLS_ID), "unit-mean",
            f"all-MiniLM-L6-v2 ({pin(MINILM_FILES[0])}; 6 layers, hidden 384), no masked-LM head",
        )  # fmt: skip
    path = artifacts.small_bert(profile)
    record = artifacts.small_bert_pretraining(profile)
    loss = float(np.mean(record["losses"][-20:]))
    description = (
        f"chapter 2's small BERT {paths.shown(path)}: {record['params']['steps']} masked-LM steps, "
        f"final loss {loss:.2f} nats"
    )
    return StartingBert("small-bert", path, load_tokenizer(path), markers, "first", description)


def trained_part(trainable_layers: int | None) -> str:
    """What a ``trainable_layers`` setting fine-tunes, in words (:meth:`lib.models.tilde.Tilde.train_only_top`)."""
    if trainable_layers is None:
        return "the whole encoder and the head"
    if trainable_layers == 0:
        return "the head alone (transform, decoder and bias) on a frozen encoder"
    return f"the encoder's top {trainable_layers} layer{'s' if trainable_layers > 1 else ''} and the head"


def training_config(tilde: TildeSettings, seed: int, device: str | torch.device) -> TildeTrainingConfig:
    """TILDE's fine-tuning (:func:`lib.training.tilde.train_tilde`) on chapter 6's settings ``tilde``."""
    return TildeTrainingConfig(
        steps=tilde.steps,
        batch_size=tilde.batch_size,
        lr=tilde.lr,
        seed=seed,
        device=device,
        checkpoint_every=tilde.checkpoint_every,
        trainable_layers=tilde.trainable_layers,
        head_lr=tilde.head_lr,
    )


def v2_training_config(tilde: TildeSettings, seed: int, device: str | torch.device) -> TildeV2TrainingConfig:
    """TILDEv2's fine-tuning (:func:`lib.training.tilde_v2.train_tilde_v2`) on chapter 6's settings ``tilde``."""
    return TildeV2TrainingConfig(
        steps=tilde.v2_steps,
        batch_size=tilde.v2_batch_size,
        group_size=tilde.v2_group_size,
        lr=tilde.v2_lr,
        seed=seed,
        device=device,
        trainable_layers=tilde.v2_trainable_layers,
    )


def teacher_labelled(profile: Profile, seed: int, progress: bool = True) -> DistillationSet:
    """Chapter 2's teacher-labelled queries and the teacher's scores of their candidates (its cached encodings).

    The same set chapter 2's students learn from (:func:`lib.experiments.distillation_set.build_distillation_set`
    with the profile's training settings), rebuilt from chapter 2's cache: BM25 over chapter 1's index
    and the teacher's dense search, no teacher pass over the corpus. On the paper's path, the teacher-scores file's
    (:func:`lib.experiments.distillation_set.file_distillation_set`).
    """
    if profile.training.teacher_scores is not None:
        return file_distillation_set(profile, profile.training)
    folder = artifacts.teacher_cache(profile)
    return build_distillation_set(
        profile,
        profile.training,
        BiEncoder(minilm_folder()),
        load_tokenizer(minilm_folder()),
        artifacts.book_index(profile),
        folder,
        seed,
        progress=progress,
    )


#: Passages whose teacher vectors :func:`pooled_cache` recomputes with TILDE's encoder, to check they are its own.
CHECKED_PASSAGES = 8


def pooled_cache(
    folder: Path, model: Tilde, tokenizer: WordPieceTokenizer, texts: Mapping[str, str], teacher: DistillationSet
) -> PooledCache:
    """The cache of ``model``'s pooled vectors in ``folder``, with the teacher's passage vectors when they are its own.

    Chapter 2's teacher is all-MiniLM-L6-v2's unit-length mean over ``[CLS] pieces[:200] [SEP]``:
    a TILDE with the same encoder, ``unit-mean`` pooling and ``[CLS]`` markers reads exactly these
    vectors, so the book's passages need no new encoder pass. The first :data:`CHECKED_PASSAGES` are
    recomputed first; a difference is a ``ValueError``, and any other TILDE gets the cache empty.
    """
    cache = PooledCache(folder)
    if model.pooling != "unit-mean" or not teacher.passages.ids:
        return cache
    ids = teacher.passages.ids
    rows = model.rows(tokenizer.pieces([texts[pid] for pid in ids]), "passage")
    checked = ids[:CHECKED_PASSAGES]
    uncached = Tilde(model.bert, **model.settings())
    computed = uncached.pooled(tokenizer.pieces([texts[pid] for pid in checked]), "passage")
    difference = float((computed.cpu() - teacher.passages.vectors[: len(checked)]).abs().max())
    if difference > 1e-4:
        raise ValueError(
            f"chapter 2's teacher vectors differ from this TILDE's own by up to {difference:.2g} "
            f"(passages {checked}): not the same encoder, pooling or input"
        )
    cache.put(model.encoder_fingerprint(), rows, teacher.passages.vectors)
    return cache


def judged_training_data(profile: Profile, fold: str, texts: Mapping[str, str], seed: int) -> TildeTrainingData:
    """The judged pairs TILDE learns from under ``profile`` (``profile.tilde.train_set``), for test year ``fold``.

    ``None``: the fold's judged years that are not test years, DL21
    (:func:`lib.training.tilde.fold_training_data`); ``"train"`` (``paper``): MS MARCO's training queries and
    judgments, the profile's ``validation_set`` the validation queries
    (:func:`lib.training.tilde.msmarco_training_data`). A profile with a query limit keeps the first
    ``4 × query_limit`` training queries.
    """
    max_train_queries = None if profile.query_limit is None else 4 * profile.query_limit
    train_set = profile.tilde.train_set
    if train_set is None:
        return fold_training_data(fold, texts, seed=seed, max_train_queries=max_train_queries)
    if train_set == MSMARCO_TRAIN_SET:
        validation = validation_set(profile.training)
        return msmarco_training_data(fold, texts, validation, max_train_queries=max_train_queries)
    raise ValueError(f"tilde setting 'train_set' must be None or {MSMARCO_TRAIN_SET!r}, got {train_set!r}")


def tilde_training_data(
    profile: Profile, fold: str, texts: Mapping[str, str], teacher: DistillationSet, seed: int
) -> TildeTrainingData:
    """:func:`judged_training_data` plus one pair per teacher-labelled query that is no judged training query.

    Each such query is paired with the passage the teacher ranks first
    (:func:`lib.training.tilde.with_teacher_pairs`, which refuses a validation query); a query with
    judged pairs keeps its judgments (under ``paper`` the teacher labels MS MARCO training queries too).
    """
    data = judged_training_data(profile, fold, texts, seed)
    judged = set(data.train_qids)
    unjudged = {qid: candidates for qid, candidates in teacher.teacher.items() if qid not in judged}
    return with_teacher_pairs(data, unjudged, teacher.queries)


def judged_source(data: TildeTrainingData) -> str:
    """How the chapter names ``data``'s judged pairs: DL21's graded pairs or MS MARCO's training judgments."""
    if data.train_sets == (MSMARCO_TRAIN_SET,):
        return "the pairs (query, passage judged relevant) of MS MARCO's training judgments, the paper's training data"
    years = " and ".join(name.upper() for name in data.train_sets)
    return f"the pairs (query, passage judged ≥ {MIN_RELEVANCE}) of {years}, the judged year that is not a test year"


def judged_groups(profile: Profile, data: TildeTrainingData, texts: Mapping[str, str], depth: int) -> list[Group]:
    """TILDEv2's groups of the judged training queries: each pair's positive against the query's BM25 top
    ``depth`` that is not judged relevant (grade ≥ 1).

    BM25's scored run (:func:`lib.experiments.first_stage_runs.bm25_run`) exists for the sets the chapters
    re-rank (:func:`lib.experiments.first_stage_runs.rerank_sets`): DL21 in the book subset; MS MARCO's
    training queries have none, so under ``paper`` this gives no group.
    """
    candidates, with_runs = {}, rerank_sets(profile)
    for train_set in (name for name in data.train_sets if name in with_runs):
        run = bm25_run(profile, train_set)
        candidates.update({q: {p: s for p, s in run[q].items() if p in texts} for q in data.train_qids if q in run})
    relevant = {q: {p for p, grade in data.qrels.get(q, {}).items() if grade >= 1} for q in candidates}
    judged = [(q, p) for q, p in data.pairs if q in candidates]
    return groups(judged, top_of_run(candidates, depth), exclude=relevant)


def check_test_sets(test_sets: Sequence[str], ablation_sets: Sequence[str]) -> None:
    """Every test set must be a fold of :data:`lib.data.splits.FOLDS`, every ablation set a test set; else a
    ``ValueError`` naming the parameter."""
    unknown = [s for s in test_sets if s not in FOLDS]
    if unknown:
        raise ValueError(f"parameter 'test_sets' has {unknown}; each must be one of {sorted(FOLDS)}")
    if not set(ablation_sets) <= set(test_sets):
        raise ValueError(f"parameter 'ablation_sets' ({ablation_sets}) must be among 'test_sets' ({test_sets})")


def evaluation_year(
    name: str, first_stages: Sequence[str], texts: Mapping[str, str], profile: Profile, depth: int
) -> dict[str, JudgedSet]:
    """Test year ``name``'s judged sets by first stage: every query and judgment of the year, and the first stage's
    top ``depth`` passages with text of the judged queries (the profile's slice).

    BM25's is the scored run of :func:`lib.experiments.first_stage_runs.bm25_run`; another first stage's is the
    data folder's run, and a first stage the folder has no run of (full MS MARCO's export has none but
    BM25's) is left out.
    """
    queries, qrels = load_queries(name), load_qrels(name)
    judged = limit_queries([q for q in queries if q in qrels], profile)
    runs = {}
    for stage in first_stages:
        if stage != BM25 and not held_runs(name, (stage,)):
            continue
        full = bm25_run(profile, name) if stage == BM25 else load_run(name, stage)
        chosen = {q: {p: s for p, s in full[q].items() if p in texts} for q in judged if q in full}
        runs[stage] = top_of_run(chosen, depth)
    return {stage: JudgedSet(name, queries, qrels, run) for stage, run in runs.items()}


def score_both_precisions(
    model: Tilde,
    tokenizer: WordPieceTokenizer,
    texts: Mapping[str, str],
    year: Mapping[str, JudgedSet],
    folder: Path,
    vocabulary: TargetVocabulary,
    serve: bool,
) -> tuple[dict[str, dict[str, TildeScores]], dict[str, IndexSummary]]:
    """Index ``year``'s candidates with ``model`` once and score every first stage from each of :data:`PRECISIONS`.

    ``year`` is a test year's judged sets by first stage (:func:`evaluation_year`), which share its name and queries.

    The model's float32 vectors are written first; the float16 index (the one the paper stores and
    serves, §3.2) is cast from them, so both hold the same model output. Returns ``{precision: {first
    stage: scores}}`` and ``{precision: index summary}``. The float16 index is kept in
    ``folder/<year>-float16`` when ``serve`` (the index whose latency is measured); the float32 copy,
    a check only, is deleted once scored.
    """
    any_stage = next(iter(year.values()))
    runs = {stage: judged.run for stage, judged in year.items()}
    full = folder / f"{any_stage.name}-float32"
    scores = {"float32": {}}
    scores["float32"], float32 = score_first_stages(
        model, tokenizer, texts, any_stage.queries, runs, full, vocabulary, log_prob_dtype="float32", keep_index=True
    )
    served = folder / f"{any_stage.name}-float16"
    index = cast_index(load_index(full), served, vocabulary, "float16")
    scores["float16"] = {
        name: score_run(index, tokenizer, any_stage.queries, run, model=model) for name, run in runs.items()
    }
    float16 = IndexSummary(
        len(index), index.bytes_per_passage, index.log_prob_bytes_per_passage, "float16", served if serve else None
    )
    del index
    shutil.rmtree(full)
    if not serve:
        shutil.rmtree(served)
    return scores, {"float16": float16, "float32": dataclasses.replace(float32, folder=None)}


def ablation_scores(
    models: Mapping[str, Tilde],
    main_scores: TildeScores,
    tokenizer: WordPieceTokenizer,
    texts: Mapping[str, str],
    bm25: JudgedSet,
    folder: Path,
) -> dict[str, TildeScores]:
    """Every variant's scores of ``bm25``'s candidates (a test year's BM25 set, :func:`evaluation_year`) from its
    float16 index; the main variant's are ``main_scores``.

    ``models`` maps variant names (:data:`lib.training.tilde_variants.VARIANTS`) to fine-tuned models; each
    scores with its own target vocabulary through an index in ``folder`` that is deleted afterwards.
    """
    scores = {MAIN_VARIANT: main_scores}
    for name, model in models.items():
        if name == MAIN_VARIANT:
            continue
        variant_scores, _ = score_first_stages(
            model.to("cpu").eval(),
            tokenizer,
            texts,
            bm25.queries,
            {BM25: bm25.run},
            folder / f"{bm25.name}-{name}-float16",
            TargetVocabulary.named(VARIANTS[name].vocabulary, tokenizer),
            log_prob_dtype="float16",
            keep_index=False,
        )
        scores[name] = variant_scores[BM25]
    return scores


def tilde_v2_scores(
    model: TildeV2,
    tokenizer: WordPieceTokenizer,
    texts: Mapping[str, str],
    years: Mapping[str, Mapping[str, JudgedSet]],
    folder: Path,
) -> tuple[dict[str, dict[str, dict[str, float]]], TildeV2Index]:
    """TILDEv2's scores of every year's BM25 candidates (``years``: each year's judged sets by first stage,
    :func:`evaluation_year`), from one index of them all kept in ``folder``."""
    pids = candidate_pids({name: year[BM25].run for name, year in years.items()})
    index = build_tilde_v2_index(model.to("cpu").eval(), tokenizer, texts, pids, folder)
    cleaned = TargetVocabulary.cleaned(tokenizer)
    return {
        name: score_v2_run(index, tokenizer, year[BM25].queries, year[BM25].run, cleaned)
        for name, year in years.items()
    }, index


def run_names(systems: Mapping[str, object]) -> dict[str, str]:
    """The run-file names of this chapter's re-rankings among Table 2's ``systems`` (``<first stage> + <model>``).

    BM25's re-rankings are named by the model alone (``BM25 + TILDE-QL`` → ``tilde-ql``), another first
    stage's carry its name first (``SPLADE++ + TILDE-QL`` → ``splade-pp-tilde-ql``); chapter 2's rows and the
    first stages themselves are not this chapter's and get none.
    """
    names = {}
    for system in systems:
        stage, _, model = system.partition(" + ")
        if not model or "chapter 2" in model:
            continue
        slug = model.lower()
        if stage != "BM25":
            slug = f"{stage.lower().replace('++', '-pp').replace(' ', '-')}-{slug}"
        names[system] = slug
    return names


def table2_systems(
    year: Mapping[str, JudgedSet],
    scores: Mapping[str, TildeScores],
    stage_labels: Mapping[str, str],
    profile: Profile,
    seed: int,
    depth: int,
    bm25_rerankers: Mapping[str, Mapping[str, Mapping[str, float]]] | None = None,
) -> tuple[dict[str, dict[str, dict[str, float]]], dict[str, str], list[str]]:
    """The runs of Table 2 for ``year``, each system's baseline (the first stage it re-ranks), and what is left out.

    ``year`` is a test year's judged sets by first stage (:func:`evaluation_year`); ``scores`` holds the main
    model's float32 scores per first stage. Per first stage (in ``year``'s order): the first stage itself
    (labelled by ``stage_labels``, default its name), for BM25 also its candidates in random order
    (:func:`lib.reranking.tilde_runs.random_order` with ``seed``), then the first stage re-ranked by TILDE-QL
    and TILDE-QDL; then BM25 re-ranked by each of ``bm25_rerankers``
    (``{label: scores of BM25's candidates}``, e.g. TILDEv2); last, BM25 re-ranked to ``depth`` by chapter 2's
    :data:`CHAPTER2_MODELS`. A chapter-2 model whose scores are missing is left out, and the returned
    messages say so.
    """
    systems: dict[str, dict[str, dict[str, float]]] = {}
    baseline_of: dict[str, str] = {}
    for stage, judged in year.items():
        first = judged.run
        label = stage_labels.get(stage, stage)
        systems[label], baseline_of[label] = first, label
        if stage == BM25:
            systems["BM25 in random order"] = random_order(first, seed)
            baseline_of["BM25 in random order"] = label
        for scoring, run in scoring_runs(scores[stage], first).items():
            if scoring != "TILDE-DL":
                systems[f"{label} + {scoring}"], baseline_of[f"{label} + {scoring}"] = run, label
    left_out = []
    bm25 = year[BM25].run
    for reranker, reranker_scores in (bm25_rerankers or {}).items():
        system = f"BM25 + {reranker}"
        systems[system], baseline_of[system] = rerank(bm25, {q: dict(reranker_scores[q]) for q in bm25}, depth), "BM25"
    for model, model_label in CHAPTER2_MODELS:
        try:
            stored = artifacts.candidate_scores(profile, year[BM25].name, model)
        except FileNotFoundError as missing:
            left_out.append(f"{model_label} row left out: {missing}")
            continue
        system = f"BM25 + {model_label} (chapter 2)"
        systems[system], baseline_of[system] = rerank(bm25, {q: stored[q] for q in bm25}, depth), "BM25"
    return systems, baseline_of, left_out
