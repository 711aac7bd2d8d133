"""Margin-MSE distillation at paper scale: MS MARCO's triples, a published teacher, one GPU, N GPUs or several nodes.

The book-scale chapters learn from the MiniLM bi-encoder on the book corpus (chapter 2); this entry
point is the papers' setting (TK paper §4; Hofstätter et al. 2020, *Improving Efficient Neural
Ranking Models with Cross-Architecture Knowledge Distillation*, §4): the full MS MARCO collection and
training queries as :mod:`lib.data.msmarco` exports them, the BERT-cat ensemble's scores of the
training triples (:func:`lib.data.readers.read_teacher_scores`; ``--teacher`` defaults to the published
file, :data:`lib.data.registry.TEACHER_SCORES`, downloaded once per node and md5-checked against its
Zenodo record), validation on MS MARCO dev-small's
BM25 candidates, and :func:`lib.training.pairwise.train` with the teacher's margins. No test-year
query trains or validates: the triples of a training query that shares an id or a text with a
DL19/DL20 query of the export are dropped (``result.json``'s ``dropped_test_queries``), and such a
validation query is an error (:mod:`lib.data.splits`). Any trainable
model of the registry (:mod:`lib.models.registry`) is a student:

- a **word** model (``--model tk2``, the default; TK-1/3, KNRM, Conv-KNRM, TK-Sparse) starts from word
  vectors: ``--vectors`` is ``glove-6b-50d`` (the pinned package), ``glove-42b-300d`` (the paper's
  vectors, from ``TKBOOK_GLOVE_42B``; Stanford publishes no checksum, so ``result.json``'s ``start``
  records the sha256 of the file read) or the path of another GloVe text file. The vocabulary (terms
  with at least 5 occurrences in the collection, TK paper §4.3) is built once by rank 0 into
  ``<out>/vocabulary.txt``. Learning rates are the model's own (TK paper §4.3).
- a **WordPiece** model (``--model bert-cat``; PreTTR, ColBERT) starts from the BERT folder ``--bert``
  (any folder :func:`lib.representations.bert.load_bert` loads, with its ``vocab.txt``, whose WordPiece
  tokenizer feeds the model; default: the pinned bert-base-uncased,
  :func:`lib.representations.pretrained.bert_base_uncased_folder`, fetched once per node by its local
  rank 0), built as chapter 2 builds it (the registry's constructor, ``--bert-layers`` of its layers).
  BERT is fine-tuned at ``--bert-lr`` (default the TK paper's 10⁻⁶ for BERT-Base on MS MARCO, §4.3,
  :data:`lib.models.bert_cat.PAPER_BERT_LR`), the new scoring layer at the model's own rate
  (10⁻³); ``--warmup-steps`` adds BERT's warm-up and linear decay (:func:`lib.training.pairwise.warmup_decay`).
  TK on the BERT's first layers (``--model tk-bert2``; :mod:`lib.models.tk_bert`) is one of them.
- a **pieces** model (``--model tk2-pieces``; KNRM, Conv-KNRM, TK-1/3 on pieces) starts from static
  word-piece vectors distilled from ``--bert``'s outputs (:mod:`lib.representations.piece_vectors`,
  ``--piece-dim`` wide, computed once by each node's local rank 0 into ``<out>/piece-vectors-<dim>d.npy``)
  and that BERT's WordPiece tokenizer; its rates are the model's own.

Checkpoints, ``best.pt`` and ``history.csv`` go to ``<out>/checkpoints/`` and a run resumes from them
(also after being killed: ``tests/training/test_paper_distillation.py``). The best model then re-ranks each
``--test-sets`` year's official top ``--test-depth`` (the export's ``runs/<set>__bm25.trec``; the paper
re-ranks 1,000) into ``<out>/runs/<set>__<model>.trec``, a TREC run that
``python -m lib.evaluation.comparison data/msmarco/qrels.<set>.txt <run>`` evaluates (the years' queries and
candidates are read and checked before training); ``<out>/result.json`` records the best step and validation
value and the run files.

Under ``torchrun`` every process trains on its share of each step's global batch (:mod:`lib.core.distributed`:
NCCL on GPUs, gloo on CPU; bf16 autocast on a GPU), rank 0 alone validates, re-ranks the test years and writes::

    # one GPU (or the CPU)
    python -m lib.training.paper_distillation --data data/msmarco --vectors glove-42b-300d --out artifacts/paper-tk2
    python -m lib.training.paper_distillation --model bert-cat --batch-size 32 \\
        --data data/msmarco --out artifacts/paper-bert-cat
    # N GPUs on one node
    torchrun --standalone --nproc_per_node=N -m lib.training.paper_distillation --data … --out …
    # several nodes (here 2 of 8 GPUs): the same command on every node, HOST:PORT one node's address
    torchrun --nnodes=2 --nproc_per_node=8 --rdzv_backend=c10d --rdzv_endpoint=HOST:PORT \\
        -m lib.training.paper_distillation --data … --out …
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from lib.core import distributed
from lib.core.atomic import write_json
from lib.core.types import JudgedSet, Run, query_order, top_of_run
from lib.data import read_collection, read_qrels, read_queries, read_run, read_teacher_scores
from lib.data.registry import TEACHER_SCORES, fetch_paper
from lib.data.splits import check_disjoint_from_tests, export_test_queries, without_test_queries
from lib.evaluation.measures import write_trec_run
from lib.models.bert_cat import PAPER_BERT_LR
from lib.models.registry import ModelSpec, model_spec
from lib.representations.bert import load_tokenizer
from lib.representations.piece_vectors import PIECE_VECTOR_DIM, piece_vectors
from lib.representations.pretrained import bert_base_uncased_folder, glove_6b_50d, glove_42b_300d
from lib.representations.text import DOC_MAX_LENGTH, QUERY_MAX_LENGTH, Vocabulary
from lib.representations.word_vectors import embedding_matrix, load_glove_text
from lib.reranking.scoring import ScoringOptions, score_candidates
from lib.training.pairwise import TrainingConfig, train

#: The pinned GloVe package (``--vectors`` default); any other value is a GloVe text file.
PACKAGE_VECTORS = "glove-6b-50d"
#: ``--vectors`` for the TK paper's GloVe 42B 300-d, read from ``TKBOOK_GLOVE_42B`` (its sha256 is recorded).
PAPER_VECTORS = "glove-42b-300d"


def _vocabulary(out: Path, texts: dict[str, str]) -> Vocabulary:
    """``<out>/vocabulary.txt``, built from the collection by rank 0 the first time."""
    path = out / "vocabulary.txt"
    if distributed.is_main() and not path.is_file():
        Vocabulary.build(texts.values()).save(path)
    distributed.barrier()
    return Vocabulary.load(path)


def _embeddings(vectors: str, vocabulary: Vocabulary, seed: int) -> tuple[torch.Tensor, str]:
    """The embedding matrix of ``vocabulary`` and where it came from: the pinned GloVe 6B 50-d, GloVe 42B
    (:func:`lib.representations.pretrained.glove_42b_300d`, named with the sha256 of the file read) or a GloVe
    text file."""
    if vectors == PACKAGE_VECTORS:
        return embedding_matrix(vocabulary, glove_6b_50d(), seed=seed), vectors
    if vectors == PAPER_VECTORS:
        matrix, _coverage, source = glove_42b_300d(vocabulary, seed=seed)
        return matrix, f"{vectors} ({source['file']}, sha256 {source['sha256']})"
    matrix, _coverage = load_glove_text(vectors, vocabulary, dim=None, seed=seed)
    return matrix, vectors


def _teacher_file(teacher: str | None) -> Path:
    """``--teacher``, or the published scores of the paper registry: fetched by each node's local rank 0 while the
    others wait, then hash-checked by every process."""
    return Path(teacher) if teacher is not None else distributed.local_first(lambda: fetch_paper(TEACHER_SCORES))


def _student(
    spec: ModelSpec, arguments: argparse.Namespace, out: Path, texts: dict[str, str]
) -> tuple[torch.nn.Module, Any, dict[str, float], str]:
    """The freshly initialised model (seeded), its tokenizer, the learning-rate overrides and where it started from."""
    if spec.family == "word":
        vocabulary = _vocabulary(out, texts)
        torch.manual_seed(arguments.seed)
        matrix, start = _embeddings(arguments.vectors, vocabulary, arguments.seed)
        return spec.build(matrix), vocabulary, {}, start
    bert = arguments.bert or str(distributed.local_first(bert_base_uncased_folder))
    tokenizer = load_tokenizer(bert)
    if spec.family == "pieces":
        cache = out / f"piece-vectors-{arguments.piece_dim}d.npy"
        matrix = distributed.local_first(
            lambda: piece_vectors(bert, cache, arguments.piece_dim, progress=distributed.is_main())
        )
        torch.manual_seed(arguments.seed)
        return spec.build(matrix), tokenizer, {}, f"piece vectors of {bert}"
    torch.manual_seed(arguments.seed)
    model = spec.build(bert, num_layers=arguments.bert_layers)
    return model, tokenizer, {"bert_lr": arguments.bert_lr}, bert


def _validation(data: Path, queries: int, depth: int) -> JudgedSet:
    """The first ``queries`` dev-small queries (query order) with their qrels and BM25 top ``depth``."""
    texts = read_queries(data / "queries.dev-small.tsv")
    run = read_run(data / "runs" / "dev-small__bm25.trec")
    chosen = sorted((qid for qid in texts if qid in run), key=query_order)[:queries]
    if not chosen:
        raise ValueError(f"{data}: no dev-small query has candidates in runs/dev-small__bm25.trec")
    return JudgedSet(
        name="dev-small",
        queries={qid: texts[qid] for qid in chosen},
        qrels=read_qrels(data / "qrels.dev-small.txt"),
        run=top_of_run(run, depth, chosen),
    )


def _test_candidates(arguments: argparse.Namespace) -> dict[str, tuple[dict[str, str], Run]]:
    """Each ``--test-sets`` year's queries and official top ``--test-depth``, read (and checked) before training."""
    data, years = Path(arguments.data), {}
    for name in arguments.test_sets:
        run_file, queries_file = data / "runs" / f"{name}__bm25.trec", data / f"queries.{name}.tsv"
        candidates, queries = top_of_run(read_run(run_file), arguments.test_depth), read_queries(queries_file)
        missing = sorted(candidates.keys() - queries.keys(), key=query_order)
        if missing:
            raise ValueError(f"{run_file}: query {missing[0]!r} has no text in {queries_file}")
        years[name] = queries, candidates
    return years


def _test_runs(
    model: torch.nn.Module,
    tokenizer: Any,
    texts: dict[str, str],
    years: dict[str, tuple[dict[str, str], Run]],
    arguments: argparse.Namespace,
    batch_size: int,
) -> list[str]:
    """Rank 0: ``model`` re-ranks each year's candidates (:func:`_test_candidates`); the run files, relative to
    ``--out``."""
    written, options = [], ScoringOptions(batch_size=batch_size, progress=True)
    for name, (queries, candidates) in years.items():
        scores = score_candidates(model, tokenizer, queries, texts, candidates, None, options)
        relative = Path("runs") / f"{name}__{arguments.model}.trec"
        write_trec_run(scores, Path(arguments.out) / relative, tag=arguments.model)
        written.append(str(relative))
    return written


def run(arguments: argparse.Namespace) -> dict[str, Any]:
    """Train ``arguments.model`` by Margin-MSE from the teacher's scores (module docstring); the result record."""
    distributed.init_from_env()
    spec = model_spec(arguments.model)
    if spec.zero_shot:
        raise ValueError(f"parameter '--model': {arguments.model!r} is used zero-shot, never trained")
    data, out = Path(arguments.data), Path(arguments.out)
    texts = read_collection(data / "collection.tsv")
    tests = export_test_queries(data)
    every_query = read_queries(data / "queries.train.tsv")
    queries = without_test_queries(every_query, tests)
    dropped = every_query.keys() - queries.keys()
    labelled = zip(*read_teacher_scores(_teacher_file(arguments.teacher)), strict=True)
    kept = [(triple, margin) for triple, margin in labelled if triple[0] not in dropped]
    triples, margins = [triple for triple, _ in kept], [margin for _, margin in kept]
    model, tokenizer, learning_rates, start = _student(spec, arguments, out, texts)
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
        eval_batch_size=spec.eval_batch_size,
        learning_rates=learning_rates,
        warmup_steps=arguments.warmup_steps,
        bucket_batches=arguments.bucket_batches,
    )
    validation = _validation(data, arguments.validation_queries, arguments.rerank_depth)
    check_disjoint_from_tests(validation.queries, tests)
    years = _test_candidates(arguments)
    result = train(model, tokenizer, triples, queries, texts, validation, config, out / "checkpoints", margins=margins)
    record = {
        "model": arguments.model,
        "start": start,
        "triples": len(triples),
        "dropped_test_queries": len(dropped),
        "steps": result.steps,
        "best_step": result.best_step,
        f"best validation {config.metric}": result.best_metric,
        "stopped_early": result.stopped_early,
        "processes": distributed.world_size(),
    }
    if distributed.is_main():
        record["runs"] = _test_runs(result.model, tokenizer, texts, years, arguments, spec.eval_batch_size)
        write_json(out / "result.json", record)
    distributed.barrier()
    return record


def parse_arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line (``python -m lib.training.paper_distillation --help``)."""
    parser = argparse.ArgumentParser(
        prog="python -m lib.training.paper_distillation", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--data", required=True, help="a folder exported by `python -m lib.data.msmarco`")
    parser.add_argument(
        "--teacher", help="the teacher's scores (pos, neg, qid, pos_pid, neg_pid); default: the published ones"
    )
    parser.add_argument("--out", required=True, help="output folder: vocabulary, checkpoints, result.json")
    parser.add_argument("--model", default="tk2", help="a trainable model of the registry (default tk2)")
    parser.add_argument(
        "--vectors", default=PACKAGE_VECTORS, help="word models: glove-6b-50d, glove-42b-300d or a GloVe text file"
    )
    parser.add_argument("--bert", help="WordPiece models: a BERT folder with vocab.txt (default: bert-base-uncased)")
    parser.add_argument(
        "--piece-dim", type=int, default=PIECE_VECTOR_DIM, help="pieces models: width of the piece vectors (256)"
    )
    parser.add_argument("--bert-layers", type=int, help="WordPiece models: keep BERT's first N layers (default: all)")
    parser.add_argument("--bert-lr", type=float, default=PAPER_BERT_LR, help="WordPiece models: BERT's rate")
    parser.add_argument("--warmup-steps", type=int, default=0, help="linear warm-up, then linear decay (0: none)")
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--batch-size", type=int, default=64, help="global batch (split over the processes)")
    parser.add_argument("--validate-every", type=int, default=4_000)
    parser.add_argument("--bucket-batches", type=int, default=8, help="batches of similar lengths (1: none)")
    parser.add_argument("--patience", type=int, default=5)
    parser.add_argument("--validation-queries", type=int, default=1_000)
    parser.add_argument("--rerank-depth", type=int, default=100, help="validation: BM25 candidates re-ranked")
    parser.add_argument(
        "--test-sets", nargs="*", default=["dl19", "dl20"], help="years whose official top-k the best model re-ranks"
    )
    parser.add_argument("--test-depth", type=int, default=1000, help="test years: candidates re-ranked (1,000)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--seed", type=int, default=42)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    """Run from the command line; rank 0 prints the result record as JSON."""
    distributed.finish(run(parse_arguments(argv)))


if __name__ == "__main__":
    main()
