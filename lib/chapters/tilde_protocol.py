"""Chapter 6's protocol: what TILDE starts from, which candidates it re-ranks, and the systems it is compared with.

- :func:`starting_bert` — chapter 2's small BERT (``paper``: ``bert-base-uncased`` by name), the weights
  every TILDE variant is fine-tuned from (TILDE paper §4.1 starts from BERT-Base).
- :func:`check_test_sets` — the chapter's test and ablation years must be folds of the protocol.
- :func:`evaluation_year` — a test year's queries, judgments and, per first stage, the top-``depth`` candidates
  that have text (the book's queries of the profile, judged ones only).
- :func:`score_both_precisions` — one model's TILDE-QL/-DL scores of every first stage from a float16 index
  (the one the paper stores, §3.2) and from a float32 copy (the model's own ranking).
- :func:`ablation_scores` — every other variant's scores of BM25's candidates (Table 3).
- :func:`table2_systems` — the rows of the paper's Table 2 at book scale: each first stage, re-ranked by
  TILDE-QL and TILDE-QDL, BM25 in a seeded random order, and chapter 2's TK-2 and BERT-cat.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lib.chapters import artifacts
from lib.chapters.tilde_tables import scoring_runs
from lib.core import paths
from lib.core.profiles import Profile, limit_queries
from lib.core.types import top_of_run
from lib.data import load_qrels, load_queries, load_run
from lib.data.splits import FOLDS
from lib.models.registry import label
from lib.models.tilde import Tilde
from lib.models.tilde_vocabulary import TargetVocabulary
from lib.representations.bert import WordPieceTokenizer, load_tokenizer
from lib.reranking.scoring import rerank
from lib.reranking.tilde_runs import IndexSummary, random_order, score_first_stages
from lib.reranking.tilde_scoring import TildeScores
from lib.training.tilde_variants import MAIN_VARIANT, VARIANTS

#: The first stage the ablation, the random order and chapter 2's models re-rank.
BM25 = "bm25"
#: Chapter 2's models shown in Table 2 for context: (model name, label).
CHAPTER2_MODELS: tuple[tuple[str, str], ...] = tuple((name, label(name)) for name in ("tk2", "bert-cat"))
#: The index precisions: float16 as stored and served (paper §3.2), float32 the model's own scores.
PRECISIONS: tuple[str, ...] = ("float16", "float32")


@dataclass(frozen=True)
class StartingBert:
    """The BERT every variant is fine-tuned from: its folder (or hub name), tokenizer and pre-training record.

    ``mlm_steps`` and ``mlm_loss`` (mean of the last 20 masked-LM losses, nats per masked piece) describe
    chapter 2's pre-training; for ``bert-base-uncased`` they are the words the chapter's prose shows instead.
    """

    path: Path | str
    tokenizer: WordPieceTokenizer
    mlm_steps: int | str
    mlm_loss: str

    def __str__(self) -> str:
        if isinstance(self.path, str):
            return f"{self.path}, loaded by name"
        return f"small BERT {paths.shown(self.path)}: {self.mlm_steps} MLM steps, final loss {self.mlm_loss} nats"


def starting_bert(profile: str) -> StartingBert:
    """Chapter 2's small BERT for ``profile`` (an error naming chapter 2 when missing); ``paper``: BERT-Base."""
    if profile == "paper":
        return StartingBert(
            "bert-base-uncased", WordPieceTokenizer.from_vocab(), "the original pre-training's", "(not recorded here)"
        )
    path = artifacts.small_bert(profile)
    record = artifacts.small_bert_pretraining(profile)
    loss = float(np.mean(record["losses"][-20:]))
    return StartingBert(path, load_tokenizer(path), record["params"]["steps"], f"{loss:.2f}")


def check_test_sets(test_sets: Sequence[str], ablation_sets: Sequence[str]) -> None:
    """Every test set must be a fold of :data:`lib.data.splits.FOLDS`, every ablation set a test set; else a
    ``ValueError`` naming the parameter."""
    unknown = [s for s in test_sets if s not in FOLDS]
    if unknown:
        raise ValueError(f"parameter 'test_sets' has {unknown}; each must be one of {sorted(FOLDS)}")
    if not set(ablation_sets) <= set(test_sets):
        raise ValueError(f"parameter 'ablation_sets' ({ablation_sets}) must be among 'test_sets' ({test_sets})")


@dataclass
class EvaluationYear:
    """One test year: ``queries``, ``qrels``, and per first stage the top candidates that have text."""

    name: str
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    runs: dict[str, dict[str, dict[str, float]]]


def evaluation_year(
    name: str, first_stages: Sequence[str], texts: Mapping[str, str], profile: Profile, depth: int
) -> EvaluationYear:
    """The judged queries of ``name`` (the profile's slice) and each first stage's top ``depth`` passages with text."""
    queries, qrels = load_queries(name), load_qrels(name)
    judged = limit_queries([q for q in queries if q in qrels], profile)
    runs = {}
    for stage in first_stages:
        full = load_run(name, stage)
        chosen = {q: {p: s for p, s in full[q].items() if p in texts} for q in judged if q in full}
        runs[stage] = top_of_run(chosen, depth)
    return EvaluationYear(name, queries, qrels, runs)


def score_both_precisions(
    model: Tilde,
    tokenizer: WordPieceTokenizer,
    texts: Mapping[str, str],
    year: EvaluationYear,
    folder: Path,
    vocabulary: TargetVocabulary,
    serve: bool,
) -> tuple[dict[str, dict[str, TildeScores]], dict[str, IndexSummary]]:
    """Index ``year``'s candidates with ``model`` in each of :data:`PRECISIONS` and score every first stage.

    Returns ``{precision: {first stage: scores}}`` and ``{precision: index summary}``. The float16 index is
    kept in ``folder/<year>-float16`` when ``serve`` (the index whose latency is measured); the others are
    deleted once scored.
    """
    scores, summaries = {}, {}
    for dtype in PRECISIONS:
        scores[dtype], summaries[dtype] = score_first_stages(
            model,
            tokenizer,
            texts,
            year.queries,
            year.runs,
            folder / f"{year.name}-{dtype}",
            vocabulary,
            log_prob_dtype=dtype,
            keep_index=serve and dtype == "float16",
        )
    return scores, summaries


def ablation_scores(
    models: Mapping[str, Tilde],
    main_scores: TildeScores,
    tokenizer: WordPieceTokenizer,
    texts: Mapping[str, str],
    year: EvaluationYear,
    folder: Path,
) -> dict[str, TildeScores]:
    """Every variant's float32 scores of BM25's candidates; the main variant's are ``main_scores`` (already computed).

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
            year.queries,
            {BM25: year.runs[BM25]},
            folder / f"{year.name}-{name}-float32",
            TargetVocabulary.named(VARIANTS[name].vocabulary, tokenizer),
            log_prob_dtype="float32",
            keep_index=False,
        )
        scores[name] = variant_scores[BM25]
    return scores


def table2_systems(
    year: EvaluationYear,
    scores: Mapping[str, TildeScores],
    stage_labels: Mapping[str, str],
    profile: str,
    seed: int,
    depth: int,
) -> tuple[dict[str, dict[str, dict[str, float]]], dict[str, str], list[str]]:
    """The runs of Table 2 for ``year``, each system's baseline (the first stage it re-ranks), and what is left out.

    ``scores`` holds the main model's float32 scores per first stage. Per first stage (in ``year.runs``'
    order): the first stage itself (labelled by ``stage_labels``, default its name), for BM25 also its
    candidates in random order (:func:`lib.reranking.tilde_runs.random_order` with ``seed``), then the
    first stage re-ranked by TILDE-QL and TILDE-QDL; last, BM25 re-ranked to ``depth`` by chapter 2's
    :data:`CHAPTER2_MODELS`. A chapter-2 model whose scores are missing is left out, and the returned
    messages say so.
    """
    systems: dict[str, dict[str, dict[str, float]]] = {}
    baseline_of: dict[str, str] = {}
    for stage, first in year.runs.items():
        label = stage_labels.get(stage, stage)
        systems[label], baseline_of[label] = first, label
        if stage == BM25:
            systems["BM25 in random order"] = random_order(first, seed)
            baseline_of["BM25 in random order"] = label
        for scoring, run in scoring_runs(scores[stage], first).items():
            if scoring != "TILDE-DL":
                systems[f"{label} + {scoring}"], baseline_of[f"{label} + {scoring}"] = run, label
    left_out = []
    bm25 = year.runs[BM25]
    for model, model_label in CHAPTER2_MODELS:
        try:
            stored = artifacts.candidate_scores(profile, year.name, model)
        except FileNotFoundError as missing:
            left_out.append(f"{model_label} row left out: {missing}")
            continue
        system = f"BM25 + {model_label} (chapter 2)"
        systems[system], baseline_of[system] = rerank(bm25, {q: stored[q] for q in bm25}, depth), "BM25"
    return systems, baseline_of, left_out
