"""The book-scale experiment behind chapter 2 (ARCHITECTURE.md, "Conventions"), reusable by later chapters.

1. :func:`prepare_representations` — the vocabulary (min count 5, TK paper §4.3) and 300-d word vectors
   trained on the book corpus (word2vec or fastText, instead of GloVe-42B), and a small BERT
   pre-trained by masked LM on the book corpus with the real ``bert-base-uncased`` vocabulary
   (instead of the pre-trained BERT-Base). Each is cached in the chapter's artifacts and reused.
2. :func:`prepare_fold` — a cross-year fold of :mod:`lib.data.splits`: training pairs from the graded
   labels of the training years (BM25 top-100 candidates + judged passages, unjudged = 0), a held-out
   validation slice of the training queries, and the test year's official BM25 top-100.
3. :func:`run_model` — train one model (early stopping on validation MRR@10, as the paper), tune the
   re-ranking depth on validation (cs@N), score the test candidates once, write the per-candidate
   scores and the re-ranked run, evaluate, and measure documents per millisecond.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from lib.core import paths
from lib.core.atomic import write_json
from lib.core.profiles import Profile, TrainingSettings, limit_queries
from lib.core.types import ranking_from_run, top_of_run
from lib.data import book_texts, load_qrels, load_queries, load_run
from lib.data.splits import FOLDS, train_validation_split
from lib.evaluation import measures as evaluation
from lib.evaluation.depths import tune_depth
from lib.evaluation.efficiency import measure_throughput
from lib.models.registry import model_spec
from lib.representations.bert import WordPieceTokenizer, load_tokenizer, small_bert_config
from lib.representations.text import DOC_MAX_LENGTH, QUERY_MAX_LENGTH, Vocabulary
from lib.representations.word_vectors import embedding_matrix, load_matrix, save_matrix, train_word_vectors
from lib.reranking.scoring import rerank, score_candidates
from lib.training.masked_lm import pretrain_mlm
from lib.training.pairwise import TrainingConfig, TrainingResult, ValidationSet, train, training_pairs

#: The first stage that is re-ranked (the official BM25 top-100 from the full MS MARCO index).
FIRST_STAGE = "bm25"


@dataclass
class Representations:
    """The word vocabulary and embedding matrix, and the small BERT's folder and tokenizer."""

    vocabulary: Vocabulary
    embeddings: torch.Tensor
    bert_path: Path
    wordpiece: WordPieceTokenizer


@dataclass
class FoldData:
    """Everything one cross-year fold needs (see :func:`prepare_fold`)."""

    fold: str
    pairs: list[tuple[str, str, str]]
    queries: dict[str, str]
    texts: dict[str, str]
    validation: ValidationSet
    test_queries: dict[str, str]
    test_qrels: dict[str, dict[str, int]]
    test_run: dict[str, dict[str, float]]
    train_qids: list[str]


@dataclass
class ModelResult:
    """One trained model on one fold: its metrics, tuned depth, speed and training history."""

    model: str
    fold: str
    tuned_depth: int
    metrics_at_tuned_depth: dict[str, float]
    metrics_at_full_depth: dict[str, float]
    per_query: pd.DataFrame
    docs_per_ms: float
    history: pd.DataFrame
    best_step: int
    training: TrainingResult

    def row(self) -> dict[str, Any]:
        """The Table 2 row of this result (metrics at the tuned depth, and nDCG@10 re-ranking all candidates)."""
        return {
            "set": self.fold,
            "model": self.model,
            **self.metrics_at_tuned_depth,
            "depth": self.tuned_depth,
            "nDCG@10 (all)": self.metrics_at_full_depth["nDCG@10"],
            "docs/ms": self.docs_per_ms,
            "best step": self.best_step,
        }


def prepare_representations(profile: str, settings: TrainingSettings, seed: int, out: Path) -> Representations:
    """Vocabulary, word vectors and the small BERT for ``profile``, cached under ``out``."""
    folder = out / "representations"
    folder.mkdir(parents=True, exist_ok=True)
    passages = list(book_texts().values())
    vocabulary_path = folder / "vocabulary.txt"
    if vocabulary_path.is_file():
        vocabulary = Vocabulary.load(vocabulary_path)
    else:
        vocabulary = Vocabulary.build(passages)
        vocabulary.save(vocabulary_path)
    method = settings.embedding_method
    matrix_path = folder / f"{method}-{settings.embedding_epochs}ep-seed{seed}.npy"
    if matrix_path.is_file():
        embeddings = load_matrix(matrix_path, vocabulary)
    else:
        vectors = train_word_vectors(passages, method=method, seed=seed, epochs=settings.embedding_epochs)
        embeddings = embedding_matrix(vocabulary, vectors, seed=seed)
        save_matrix(matrix_path, embeddings)
    bert_path = folder / "small-bert"
    if profile == "paper":
        bert_path = Path("bert-base-uncased")
    else:
        config = small_bert_config(
            layers=settings.bert_layers,
            hidden=settings.bert_hidden,
            heads=settings.bert_heads,
            intermediate=settings.bert_intermediate,
        )
        pretrain_mlm(
            passages,
            bert_path,
            config=config,
            steps=settings.bert_steps,
            batch_size=settings.bert_batch_size,
            seq_len=settings.bert_seq_len,
            seed=seed,
            checkpoint_every=max(1, settings.bert_steps // 5),
        )
    wordpiece = load_tokenizer(bert_path) if profile != "paper" else WordPieceTokenizer.from_vocab()
    return Representations(vocabulary, embeddings, bert_path, wordpiece)


def prepare_fold(fold: str, profile: Profile, settings: TrainingSettings, seed: int) -> FoldData:
    """The training pairs, validation set and test data of one cross-year fold (:data:`lib.data.splits.FOLDS`)."""
    if fold not in FOLDS:
        raise ValueError(f"parameter 'fold' must be one of {sorted(FOLDS)}, got {fold!r}")
    spec = FOLDS[fold]
    texts = book_texts()
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    candidates: dict[str, dict[str, float]] = {}
    for train_set in spec.train:
        queries.update(load_queries(train_set))
        qrels.update(load_qrels(train_set))
        candidates.update(load_run(train_set, FIRST_STAGE))
    train_qids, validation_qids = train_validation_split(list(queries), seed=seed)
    validation_qids = limit_queries(validation_qids, profile)
    if profile.query_limit is not None:  # the smoke slice: a few training queries too
        train_qids = train_qids[: 4 * profile.query_limit]
    pairs = training_pairs(
        {q: qrels.get(q, {}) for q in train_qids},
        {q: candidates[q] for q in train_qids if q in candidates},
        texts,
        seed=seed,
        max_pairs_per_query=settings.max_pairs_per_query,
    )
    validation = ValidationSet(
        queries={q: queries[q] for q in validation_qids},
        qrels={q: qrels[q] for q in validation_qids if q in qrels},
        run=top_of_run(candidates, settings.candidate_depth, validation_qids),
    )
    test_queries = load_queries(spec.test)
    chosen = limit_queries(list(test_queries), profile)
    test_run = top_of_run(load_run(spec.test, FIRST_STAGE), settings.candidate_depth, chosen)
    return FoldData(
        fold=fold,
        pairs=pairs,
        queries={q: queries[q] for q in train_qids},
        texts=texts,
        validation=validation,
        test_queries={q: test_queries[q] for q in chosen},
        test_qrels=load_qrels(spec.test),
        test_run=test_run,
        train_qids=train_qids,
    )


def build_model(name: str, representations: Representations, seed: int) -> tuple[torch.nn.Module, Any]:
    """A freshly initialised model (seeded) and its tokenizer, by registry name (:mod:`lib.models.registry`)."""
    spec = model_spec(name)
    torch.manual_seed(seed)
    if spec.family == "wordpiece":
        return spec.build(representations.bert_path), representations.wordpiece
    return spec.build(representations.embeddings), representations.vocabulary


def training_config(name: str, settings: TrainingSettings, seed: int, device: str) -> TrainingConfig:
    """The training configuration of model ``name`` under ``settings``."""
    spec = model_spec(name)
    bert = spec.family == "wordpiece"
    return TrainingConfig(
        batch_size=settings.bert_cat_batch_size if bert else settings.batch_size,
        max_steps=settings.bert_cat_max_steps if bert else settings.max_steps,
        validate_every=settings.validate_every,
        patience=settings.patience,
        metric="MRR@10",
        max_query_length=QUERY_MAX_LENGTH,
        max_doc_length=DOC_MAX_LENGTH,
        seed=seed,
        device=device,
        rerank_depth=settings.validation_depth,
        eval_batch_size=spec.eval_batch_size,
    )


def scores_path(profile: str, chapter: str, query_set: str, model: str) -> Path:
    """Where the model's score of every test candidate is kept (a TREC run over the full depth)."""
    return paths.chapter_dir(profile, chapter) / "scores" / f"{query_set}__{model}.trec"


def run_model(
    name: str,
    fold: FoldData,
    representations: Representations,
    settings: TrainingSettings,
    profile: str,
    chapter: str,
    seed: int,
    device: str = "auto",
    progress: bool = True,
) -> ModelResult:
    """Train ``name`` on ``fold`` (resuming from its checkpoint), tune its depth, score and evaluate the test year."""
    model, tokenizer = build_model(name, representations, seed)
    config = training_config(name, settings, seed, device)
    checkpoint_dir = paths.chapter_dir(profile, chapter) / "checkpoints" / fold.fold / name
    result = train(
        model, tokenizer, fold.pairs, fold.queries, fold.texts, fold.validation, config, checkpoint_dir, progress
    )
    model = result.model
    score = dict(
        tokenizer=tokenizer,
        texts=fold.texts,
        max_query_length=QUERY_MAX_LENGTH,
        max_doc_length=DOC_MAX_LENGTH,
        batch_size=config.eval_batch_size,
        depth=None,
    )
    validation_scores = score_candidates(model, queries=fold.validation.queries, run=fold.validation.run, **score)
    depth, _curve = tune_depth(fold.validation.run, validation_scores, fold.validation.qrels, metric="MRR@10")
    test_scores = score_candidates(model, queries=fold.test_queries, run=fold.test_run, **score)
    evaluation.write_trec_run(test_scores, scores_path(profile, chapter, fold.fold, name), tag=name)
    reranked = rerank(fold.test_run, test_scores, depth)
    evaluation.write_trec_run(reranked, paths.run_path(profile, fold.fold, name), tag=name)
    per_query = evaluation.per_query(reranked, fold.test_qrels)
    full = evaluation.evaluate(rerank(fold.test_run, test_scores, settings.candidate_depth), fold.test_qrels)
    docs_per_ms = _throughput(model, tokenizer, fold, settings, config, name)
    return ModelResult(
        model=name,
        fold=fold.fold,
        tuned_depth=depth,
        metrics_at_tuned_depth={k: float(v) for k, v in per_query.mean().items()},
        metrics_at_full_depth=full,
        per_query=per_query,
        docs_per_ms=docs_per_ms,
        history=result.history,
        best_step=result.best_step,
        training=result,
    )


def _throughput(
    model: torch.nn.Module, tokenizer: Any, fold: FoldData, settings: TrainingSettings, config, name
) -> float:
    """Documents per millisecond on real test candidates (scoring only; see :mod:`lib.evaluation.efficiency`)."""
    pairs = [
        (fold.test_queries[qid], fold.texts[pid])
        for qid in fold.test_run
        for pid in ranking_from_run(fold.test_run[qid])
    ][: settings.throughput_documents]
    device = next(model.parameters()).device
    query_ids, query_mask = tokenizer.encode([q for q, _ in pairs], QUERY_MAX_LENGTH)
    doc_ids, doc_mask = tokenizer.encode([d for _, d in pairs], DOC_MAX_LENGTH)
    tensors = [t.to(device) for t in (query_ids, query_mask, doc_ids, doc_mask)]
    batch_size = model_spec(name).score_batch_size
    return measure_throughput(model, *tensors, batch_size=batch_size, repetitions=3, warmup=1).docs_per_ms


def write_settings(path: Path, settings: TrainingSettings, seed: int) -> None:
    """Record the settings a chapter ran with (JSON, atomically)."""
    write_json(path, {"seed": seed, **json.loads(json.dumps(dataclasses.asdict(settings)))})
