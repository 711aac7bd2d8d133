"""One model trained and tested on chapter 2's protocol (:mod:`lib.experiments.distillation_protocol`).

:func:`run_model` — train one model once (Margin-MSE, early stopping on the profile's validation
measure, ``validation_metric``: nDCG@10 on DL21's graded judgments, MRR@10 on dev-small as the paper;
a zero-shot model is used as it is), tune the re-ranking depth on validation (cs@N), and for
each test year score the candidates once, write the per-candidate scores, the run at the tuned
depth and the run re-ranking all candidates (``<set>__<model>-all.trec``), evaluate, and measure
documents per millisecond; :class:`RunVariant` — another run of the architecture than its plain one.
Where its checkpoint and scores live (:func:`checkpoint_folder`,
:func:`scores_path`), and the student's margins on the held-out triples (:func:`held_out_margins`).
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from lib.core import paths
from lib.core.device import amp_enabled, resolve_device
from lib.core.profiles import Profile, TrainingSettings
from lib.core.run_context import RunContext
from lib.core.types import JudgedSet, Run, ranking_from_run
from lib.evaluation import measures as evaluation
from lib.evaluation.depths import tune_depth
from lib.evaluation.efficiency import measure_throughput
from lib.evaluation.interpolation import interpolate, tune_interpolation
from lib.experiments import score_cache
from lib.experiments.distillation_protocol import Protocol
from lib.experiments.distillation_set import triple_sampling
from lib.experiments.model_setup import Representations, build_model, training_config
from lib.models.bi_encoder import BiEncoder
from lib.models.registry import model_spec
from lib.representations.text import DOC_MAX_LENGTH, QUERY_MAX_LENGTH
from lib.reranking import dense
from lib.reranking.scoring import ScoringOptions, rerank, score_candidates
from lib.training.distillation import Group, teacher_groups
from lib.training.pairwise import TrainingConfig, TrainingResult, train

#: Suffix of the run that re-ranks all candidates (``<set>__<model>-all.trec``).
ALL_CANDIDATES = "-all"
#: Suffix of the run that interpolates the model with BM25 (``<set>__<model>-with-bm25.trec``).
INTERPOLATED = "-with-bm25"


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


def scores_path(profile: Profile, chapter: str, query_set: str, model: str) -> Path:
    """Where the model's score of every test candidate is kept (a TREC run over the full depth)."""
    return paths.chapter_dir(profile.name, chapter) / "scores" / f"{query_set}__{model}.trec"


def score_cache_folder(profile: Profile) -> Path:
    """Where a profile's scores are kept by content (:mod:`lib.experiments.score_cache`), shared by every chapter."""
    return paths.artifacts_root() / profile.name / "score-cache"


def training_groups(protocol: Protocol, settings: TrainingSettings, seed: int) -> tuple[list[Group], list[list[float]]]:
    """The training queries' groups of a positive and ``settings.distill_negatives`` negatives, with the teacher's
    scaled scores (:func:`lib.training.distillation.teacher_groups`): drawn as the protocol's triples are, from
    the same teacher scores and random passages, never from a held-out query."""
    kept = {qid for qid, _, _ in protocol.triples}
    teacher = {qid: run for qid, run in protocol.distillation.teacher.items() if qid in kept}
    return teacher_groups(teacher, triple_sampling(settings), seed, protocol.distillation.random)


@dataclass(frozen=True)
class RunVariant:
    """Which run of an architecture :func:`run_model` trains, when it is not the plain one.

    ``name`` names a run of the same architecture on other representations (``tk2-word2vec``): its
    checkpoint, scores and runs use that name. ``start`` — a model of the architecture and what its weights
    are (:attr:`lib.training.pairwise.TrainingConfig.start`) — is trained instead of a freshly built one
    (chapter 8's PreTTR from chapter 2's BERT-cat). ``tokenizer`` replaces the architecture's own in training and
    scoring (chapter 8's TK-2 on passages and queries without stopwords). ``reuse_from``: a chapter whose checkpoint
    of the architecture this run starts from when it has none of its own — a finished run of the same protocol,
    settings and seed is then resumed as finished, not trained again (chapter 7's init with chapter 2's seed
    is chapter 2's model); any other difference trains afresh (its fingerprint differs,
    :func:`lib.training.loop.check_fingerprint`). ``stop_at``: the last step trained, the schedule still the
    whole run's (:attr:`lib.training.pairwise.TrainingConfig.stop_at`; chapter 8's budget cuts).
    """

    name: str | None = None
    start: tuple[torch.nn.Module, str] | None = None
    tokenizer: Any | None = None
    reuse_from: str | None = None
    stop_at: int | None = None

    def run_name(self, architecture: str) -> str:
        """The name of this run of ``architecture``: its checkpoint's, scores' and runs'."""
        return architecture if self.name is None else f"{architecture}-{self.name}"


def run_model(
    name: str,
    protocol: Protocol,
    representations: Representations,
    settings: TrainingSettings,
    context: RunContext,
    progress: bool = True,
    variant: RunVariant = RunVariant(),
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
    :class:`ModelResult` per test year. ``variant``: another run of the architecture than its plain one
    (:class:`RunVariant`: other representations, starting weights, or another chapter's checkpoint).
    ``context``: the profile, the chapter whose folder holds the checkpoint and scores, the seed (the initial
    weights and the order of the triples) and the device it trains on.
    """
    profile, chapter, seed, device = context.profile, context.chapter, context.seed, str(context.device)
    run_name = variant.run_name(name)
    model, tokenizer = build_model(name, representations, seed)
    config = dataclasses.replace(training_config(name, settings, seed, device), progress=progress)
    if variant.start is not None:
        model, config = variant.start[0], dataclasses.replace(config, start=variant.start[1])
    if variant.tokenizer is not None:
        tokenizer = variant.tokenizer
    if variant.stop_at is not None:
        config = dataclasses.replace(config, stop_at=variant.stop_at)
    if model_spec(name).zero_shot:
        model = model.to(resolve_device(device)).eval()
        columns = ["step", "epoch", "train_loss", *config.measures]
        history, best_step, result = pd.DataFrame(columns=columns), 0, None
    else:
        checkpoint_dir = checkpoint_folder(profile, chapter, run_name)
        if variant.reuse_from is not None:
            _copy_checkpoint(checkpoint_folder(profile, variant.reuse_from, name), checkpoint_dir)
        result = train_on_protocol(model, tokenizer, protocol, settings, seed, config, checkpoint_dir)
        model, history, best_step = result.model, result.history, result.best_step

    def scores_of(queries: dict[str, str], run: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        return candidate_scores(model, tokenizer, protocol, profile, queries, run, config.eval_batch_size)

    validation = protocol.validation
    validation_scores = scores_of(validation.queries, validation.run)
    depth, _curve = tune_depth(validation.run, validation_scores, validation.qrels, metric=config.metric)
    weight, _weights = tune_interpolation(validation.run, validation_scores, validation.qrels, metric=config.metric)
    docs_per_ms = _throughput(model, tokenizer, next(iter(protocol.tests.values())), protocol.texts, settings, name)
    results = {}
    for test in protocol.tests.values():
        test_scores = scores_of(test.queries, test.run)
        evaluation.write_trec_run(test_scores, scores_path(profile, chapter, test.name, run_name), tag=run_name)
        reranked, everything, fused = _write_runs(profile, run_name, test, test_scores, depth, weight, settings)
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


def candidate_scores(
    model: torch.nn.Module,
    tokenizer: Any,
    protocol: Protocol,
    profile: Profile,
    queries: Mapping[str, str],
    run: Run,
    batch_size: int,
) -> Run:
    """Every candidate of ``run`` scored by ``model``, computed once per build (:mod:`lib.experiments.score_cache`,
    keyed by the exact weights, tokenizer, texts, caps, device and precision): a bi-encoder encodes each text once,
    reusing the teacher's corpus vectors; any other model scores the pairs, ``batch_size`` at a time."""
    dense_scoring = isinstance(model, BiEncoder)
    device = next(model.parameters()).device
    key = score_cache.scoring_key(
        model, tokenizer, queries, protocol.texts, run, method="dense" if dense_scoring else "pairs",
        max_lengths=[QUERY_MAX_LENGTH, DOC_MAX_LENGTH], device=device.type, bf16=amp_enabled(device),
        known=score_cache.encodings_digest(protocol.distillation.passages) if dense_scoring else None,
    )  # fmt: skip

    def compute() -> Run:
        if dense_scoring:
            return dense.candidate_scores(
                model, tokenizer, queries, protocol.texts, run, QUERY_MAX_LENGTH, DOC_MAX_LENGTH,
                known=protocol.distillation.passages,
            )  # fmt: skip
        options = ScoringOptions(batch_size)
        return score_candidates(model, tokenizer, queries, protocol.texts, run, depth=None, options=options)

    return score_cache.cached_scores(score_cache_folder(profile), key, run, compute)


def train_on_protocol(
    model: torch.nn.Module,
    tokenizer: Any,
    protocol: Protocol,
    settings: TrainingSettings,
    seed: int,
    config: TrainingConfig,
    checkpoint_dir: Path,
) -> TrainingResult:
    """Train on the protocol's triples with the teacher's margins, or on groups with its scores (listwise), validated
    and early-stopped on the protocol's validation set; resumes ``checkpoint_dir``. Scores no test year."""
    if settings.distill_negatives > 1:
        groups, teacher_scores = training_groups(protocol, settings, seed)
        targets = {"teacher_scores": teacher_scores}
    else:
        groups, targets = protocol.triples, {"margins": protocol.margins}
    return train(
        model, tokenizer, groups, protocol.queries, protocol.texts, protocol.validation, config,
        checkpoint_dir, **targets,
    )  # fmt: skip


def _write_runs(
    profile: Profile,
    run_name: str,
    test: JudgedSet,
    scores: Run,
    depth: int,
    weight: float,
    settings: TrainingSettings,
) -> tuple[Run, Run, Run]:
    """A test year's runs in the profile's runs folder: re-ranked to ``depth``, all candidates re-ranked, and
    interpolated with BM25 at ``weight``; returned in that order."""
    reranked = rerank(test.run, scores, depth)
    evaluation.write_trec_run(reranked, paths.run_path(profile.name, test.name, run_name), tag=run_name)
    everything = rerank(test.run, scores, settings.candidate_depth)
    evaluation.write_trec_run(everything, paths.run_path(profile.name, test.name, run_name + ALL_CANDIDATES), run_name)
    fused = interpolate(test.run, scores, weight)
    evaluation.write_trec_run(fused, paths.run_path(profile.name, test.name, run_name + INTERPOLATED), run_name)
    return reranked, everything, fused


def _copy_checkpoint(source: Path, target: Path) -> None:
    """``source``'s checkpoint files into ``target`` when ``target`` has none and ``source`` has (atomically: a whole
    copy or nothing)."""
    if target.exists() or not source.is_dir():
        return
    partial = target.with_name(f".{target.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(source, partial)
    partial.replace(target)


def checkpoint_folder(profile: Profile, chapter: str, run_name: str) -> Path:
    """Where model ``run_name``'s training checkpoint, best weights and history live (one model per architecture)."""
    return paths.chapter_dir(profile.name, chapter) / "checkpoints" / run_name


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
    scores = score_candidates(model, tokenizer, queries, protocol.texts, run, depth=None)
    return pd.DataFrame(
        {
            "teacher": protocol.held_out_margins[:limit],
            "student": [scores[q][p] - scores[q][n] for q, p, n in triples],
        }
    )


def _throughput(
    model: torch.nn.Module,
    tokenizer: Any,
    test: JudgedSet,
    texts: dict[str, str],
    settings: TrainingSettings,
    name: str,
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
    return measure_throughput(model, tensors, batch_size=batch_size, repetitions=3, warmup=1).docs_per_ms
