"""TILDE (Zhuang & Zuccon, SIGIR 2021) around the network of :mod:`lib.models.tilde`.

- :mod:`lib.tilde.vocabulary` — the cleaned / full target vocabulary (§4.3);
- :mod:`lib.tilde.losses` — the vocabulary-wide binary cross-entropy L_QL, L_DL and BiQDL (eq. 7–8);
- :mod:`lib.tilde.training` — fine-tuning on (query, relevant passage) pairs, resumable;
- :mod:`lib.tilde.index` — the pre-computed, memory-mapped passage log-probabilities (§3.2);
- :mod:`lib.tilde.scoring` — TILDE-QL, TILDE-DL, TILDE-QDL (eq. 4–6) and re-ranking a run;
- :mod:`lib.tilde.latency` — per-query latency as the paper's Table 2 (query processing + re-ranking).

A chapter's whole pipeline::

    model = Tilde(bert_folder)
    trained = train_tilde(model, tokenizer, data.pairs, data.queries, texts, out / "tilde").model
    index = build_index(trained, tokenizer, texts, candidate_pids, out / "index", TargetVocabulary.cleaned(tokenizer))
    scores = score_run(index, tokenizer, queries, run, model=trained)  # QL and DL of every candidate
    reranked = scores.rerank(run, alpha=0.5)                            # any α, no re-scoring
    latency = measure_latency(index, tokenizer, queries, run, model=trained, alpha=1.0)
"""

from lib.tilde.index import TildeIndex, build_index, load_index, write_index
from lib.tilde.latency import TildeLatency, measure_latency
from lib.tilde.losses import LOSSES, biqdl_loss, dl_loss, ql_loss, vocabulary_bce
from lib.tilde.scoring import TildeScores, dl_scores, qdl_scores, ql_scores, rerank_run, score_run
from lib.tilde.training import (
    MIN_RELEVANCE,
    TildeTrainingData,
    TildeTrainingResult,
    fold_training_data,
    relevant_pairs,
    train_tilde,
)
from lib.tilde.vocabulary import TargetVocabulary

__all__ = [
    "LOSSES",
    "MIN_RELEVANCE",
    "TargetVocabulary",
    "TildeIndex",
    "TildeLatency",
    "TildeScores",
    "TildeTrainingData",
    "TildeTrainingResult",
    "biqdl_loss",
    "build_index",
    "dl_loss",
    "dl_scores",
    "fold_training_data",
    "load_index",
    "measure_latency",
    "qdl_scores",
    "ql_loss",
    "ql_scores",
    "relevant_pairs",
    "rerank_run",
    "score_run",
    "train_tilde",
    "vocabulary_bce",
    "write_index",
]
