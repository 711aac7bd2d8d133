"""Margin-MSE distillation of a word model at paper scale: MS MARCO's triples, a published teacher, one or N GPUs.

The book-scale chapters learn from the MiniLM bi-encoder on the book corpus (chapter 2); this entry
point is the papers' setting (TK paper §4; Hofstätter et al. 2020, *Improving Efficient Neural
Ranking Models with Cross-Architecture Knowledge Distillation*, §4): the full MS MARCO collection and
training queries as :mod:`lib.data.msmarco` exports them, the BERT-cat ensemble's scores of the
training triples (:func:`lib.data.readers.read_teacher_scores`), validation on MS MARCO dev-small's
BM25 candidates, and :func:`lib.training.pairwise.train` with the teacher's margins. Under
``torchrun`` it trains on every process (:mod:`lib.core.distributed`)::

    python -m lib.training.paper_distillation --data data/msmarco --teacher scores.tsv --out artifacts/paper-tk2
    torchrun --standalone --nproc_per_node=N -m lib.training.paper_distillation --data … --teacher … --out …

``--vectors`` is ``glove-6b-50d`` (the pinned package) or the path of a GloVe text file (the paper's
``glove.42B.300d.txt``). The vocabulary (terms with at least 5 occurrences in the collection, TK paper
§4.3) is built once by rank 0 into ``<out>/vocabulary.txt``; checkpoints, ``best.pt`` and
``history.csv`` go to ``<out>/checkpoints/`` and a run resumes from them; ``<out>/result.json`` records
the best step and validation value. Learning rates are the model's own (TK paper §4.3).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from lib.core import distributed
from lib.core.atomic import write_json
from lib.core.types import query_order, top_of_run
from lib.data import read_collection, read_qrels, read_queries, read_run, read_teacher_scores
from lib.models.registry import model_spec
from lib.representations.pretrained import glove_6b_50d
from lib.representations.text import DOC_MAX_LENGTH, QUERY_MAX_LENGTH, Vocabulary
from lib.representations.word_vectors import embedding_matrix, load_glove_text
from lib.training.pairwise import TrainingConfig, ValidationSet, train

#: The pinned GloVe package (``--vectors`` default); any other value is a GloVe text file.
PACKAGE_VECTORS = "glove-6b-50d"


def _vocabulary(out: Path, texts: dict[str, str]) -> Vocabulary:
    """``<out>/vocabulary.txt``, built from the collection by rank 0 the first time."""
    path = out / "vocabulary.txt"
    if distributed.is_main() and not path.is_file():
        Vocabulary.build(texts.values()).save(path)
    distributed.barrier()
    return Vocabulary.load(path)


def _embeddings(vectors: str, vocabulary: Vocabulary, seed: int) -> torch.Tensor:
    """The embedding matrix of ``vocabulary`` from the pinned GloVe 6B 50-d or a GloVe text file."""
    if vectors == PACKAGE_VECTORS:
        return embedding_matrix(vocabulary, glove_6b_50d(), seed=seed)
    matrix, _coverage = load_glove_text(vectors, vocabulary, dim=None, seed=seed)
    return matrix


def _validation(data: Path, queries: int, depth: int) -> ValidationSet:
    """The first ``queries`` dev-small queries (query order) with their qrels and BM25 top ``depth``."""
    texts = read_queries(data / "queries.dev-small.tsv")
    run = read_run(data / "runs" / "dev-small__bm25.trec")
    chosen = sorted((qid for qid in texts if qid in run), key=query_order)[:queries]
    if not chosen:
        raise ValueError(f"{data}: no dev-small query has candidates in runs/dev-small__bm25.trec")
    return ValidationSet(
        queries={qid: texts[qid] for qid in chosen},
        qrels=read_qrels(data / "qrels.dev-small.txt"),
        run=top_of_run(run, depth, chosen),
    )


def run(arguments: argparse.Namespace) -> dict[str, Any]:
    """Train ``arguments.model`` by Margin-MSE from the teacher's scores (module docstring); the result record."""
    distributed.init_from_env()
    spec = model_spec(arguments.model)
    if spec.family != "word" or spec.zero_shot:
        raise ValueError(f"parameter '--model': {arguments.model!r} is not a trainable word-embedding model")
    data, out = Path(arguments.data), Path(arguments.out)
    texts = read_collection(data / "collection.tsv")
    queries = read_queries(data / "queries.train.tsv")
    triples, margins = read_teacher_scores(arguments.teacher)
    vocabulary = _vocabulary(out, texts)
    torch.manual_seed(arguments.seed)
    model = spec.build(_embeddings(arguments.vectors, vocabulary, arguments.seed))
    config = TrainingConfig(
        batch_size=arguments.batch_size,
        max_steps=arguments.steps,
        validate_every=arguments.validate_every,
        patience=arguments.patience,
        max_query_length=QUERY_MAX_LENGTH,
        max_doc_length=DOC_MAX_LENGTH,
        seed=arguments.seed,
        device=arguments.device,
        rerank_depth=arguments.rerank_depth,
        bucket_batches=arguments.bucket_batches,
    )
    validation = _validation(data, arguments.validation_queries, arguments.rerank_depth)
    result = train(model, vocabulary, triples, queries, texts, validation, config, out / "checkpoints", margins=margins)
    record = {
        "model": arguments.model,
        "triples": len(triples),
        "steps": result.steps,
        "best_step": result.best_step,
        f"best validation {config.metric}": result.best_metric,
        "stopped_early": result.stopped_early,
        "processes": distributed.world_size(),
    }
    if distributed.is_main():
        write_json(out / "result.json", record)
    distributed.barrier()
    return record


def parse_arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line (``python -m lib.training.paper_distillation --help``)."""
    parser = argparse.ArgumentParser(
        prog="python -m lib.training.paper_distillation", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--data", required=True, help="a folder exported by `python -m lib.data.msmarco`")
    parser.add_argument("--teacher", required=True, help="the teacher's scores (pos, neg, qid, pos_pid, neg_pid)")
    parser.add_argument("--out", required=True, help="output folder: vocabulary, checkpoints, result.json")
    parser.add_argument("--model", default="tk2", help="a word model of the registry (default tk2)")
    parser.add_argument("--vectors", default=PACKAGE_VECTORS, help="glove-6b-50d or a GloVe text file")
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--batch-size", type=int, default=64, help="global batch (split over the processes)")
    parser.add_argument("--validate-every", type=int, default=4_000)
    parser.add_argument("--bucket-batches", type=int, default=8, help="batches of similar lengths (1: none)")
    parser.add_argument("--patience", type=int, default=5)
    parser.add_argument("--validation-queries", type=int, default=1_000)
    parser.add_argument("--rerank-depth", type=int, default=100)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--seed", type=int, default=42)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    """Run from the command line; rank 0 prints the result record as JSON."""
    record = run(parse_arguments(argv))
    if distributed.is_main():
        print(json.dumps(record))
    distributed.shutdown()


if __name__ == "__main__":
    main()
