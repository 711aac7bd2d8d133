"""TILDE at paper scale: fine-tuning on MS MARCO's training judgments, then its passage index; one GPU, N GPUs or nodes.

The book's chapter 6 fine-tunes TILDE on DL21's judged pairs at book scale (:mod:`lib.training.tilde`);
this entry point is the paper's setting (TILDE paper §4.3): BiQDL (eq. 8) over the (query, relevant
passage) pairs of the MS MARCO training set as :mod:`lib.data.msmarco` exports it (``queries.train.tsv``,
``qrels.train.txt``, ``collection.tsv``; :func:`lib.training.tilde.msmarco_training_pairs`, the pairs chapter 6
trains on under the ``paper`` profile; MS MARCO's judgments are binary, so ``--min-relevance`` is 1;
a training query that shares an id or a text with a DL19/DL20 query is dropped, :mod:`lib.data.splits`),
starting from bert-base-uncased (``--bert``, default the pinned
:func:`lib.representations.pretrained.bert_base_uncased_folder`, fetched once per node by its local
rank 0; any folder :func:`lib.representations.bert.load_bert` loads, with its ``vocab.txt``), Adam at
2·10⁻⁵ (:data:`lib.training.tilde.PAPER_LR`), batches of 128 pairs for 10 epochs (``--epochs``, or
``--steps``), no validation. Training is :func:`lib.training.tilde.train_tilde` into ``<out>/model``
(resumable from its checkpoint; a finished run is reused). With ``--index-set SET`` the trained TILDE
then encodes the passages of the BM25 top ``--index-depth`` of ``runs/SET__bm25.trec`` into TILDE's
index ``<out>/index-SET`` (:func:`lib.reranking.tilde_index.build_index`, TILDE §3.2; reused when it
was built by the same training run) and re-ranks those candidates by TILDE-QL from the index alone (eq. 5,
no BERT at query time; :func:`lib.reranking.tilde_scoring.score_run`) into ``<out>/runs/SET__tilde-ql.trec``, a
TREC run that ``python -m lib.evaluation.comparison data/msmarco/qrels.SET.txt <run>`` evaluates.
``<out>/result.json`` records what was done.

Under ``torchrun`` (:mod:`lib.core.distributed`: NCCL on GPUs, gloo on CPU; bf16 autocast on a GPU)
every process trains on its share of each step's global batch and encodes every ``W``-th batch of the
index's passages; rank 0 alone writes the checkpoints, the model, the index and ``result.json``. A
finished model and the index are read back from ``<out>`` by every process: on several nodes, put
``<out>`` on a shared disk::

    # one GPU (or the CPU)
    python -m lib.training.paper_tilde --data data/msmarco --out artifacts/paper-tilde --index-set dl19
    # N GPUs on one node
    torchrun --standalone --nproc_per_node=N -m lib.training.paper_tilde --data data/msmarco --out …
    # several nodes (here 2 of 8 GPUs): the same command on every node, HOST:PORT one node's address
    torchrun --nnodes=2 --nproc_per_node=8 --rdzv_backend=c10d --rdzv_endpoint=HOST:PORT \\
        -m lib.training.paper_tilde --data data/msmarco --out …
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lib.core import distributed
from lib.core.atomic import write_json
from lib.core.broken_files import read_or_set_aside
from lib.core.types import Run, top_of_run
from lib.data import read_collection, read_qrels, read_queries, read_run
from lib.data.splits import export_test_queries, without_test_queries
from lib.evaluation.measures import write_trec_run
from lib.models.tilde import Tilde
from lib.models.tilde_vocabulary import VOCABULARIES, TargetVocabulary
from lib.representations.bert import WordPieceTokenizer, load_tokenizer
from lib.representations.pretrained import bert_base_uncased_folder
from lib.reranking.tilde_index import HEADER_NAME, TildeIndex, build_index, load_index
from lib.reranking.tilde_scoring import score_run
from lib.training.tilde import (
    MSMARCO_MIN_RELEVANCE,
    PAPER_LR,
    TildeTrainingConfig,
    msmarco_training_pairs,
    train_tilde,
)
from lib.training.tilde_losses import LOSSES

#: The tag and file name of the index's TILDE-QL run.
RUN_TAG = "tilde-ql"


def _index(
    model: Tilde,
    tokenizer: WordPieceTokenizer,
    texts: dict[str, str],
    arguments: argparse.Namespace,
    trained: dict[str, Any],
    candidates: Run,
) -> TildeIndex:
    """TILDE's index of ``candidates`` (the BM25 top ``--index-depth`` of ``--index-set``), reused when this training
    run built it."""
    folder = Path(arguments.out) / f"index-{arguments.index_set}"
    identity = {"training": trained, "set": arguments.index_set, "depth": arguments.index_depth}
    index = None
    if (folder / HEADER_NAME).is_file():  # a broken index is set aside by rank 0 and built again
        index = read_or_set_aside(folder, load_index, "a stored TILDE index", move=distributed.is_main())
    if index is not None:
        if {key: index.header["metadata"].get(key) for key in identity} == json.loads(json.dumps(identity)):
            return index
    pids = sorted({pid for ranked in candidates.values() for pid in ranked})
    vocabulary = TargetVocabulary.named(arguments.vocabulary, tokenizer)
    show = arguments.progress and distributed.is_main()
    return build_index(model, tokenizer, texts, pids, folder, vocabulary, arguments.index_batch_size, show, identity)


def run(arguments: argparse.Namespace) -> dict[str, Any]:
    """Fine-tune TILDE on MS MARCO's training pairs and build its index (module docstring); the result record."""
    distributed.init_from_env()
    data, out = Path(arguments.data), Path(arguments.out)
    texts = read_collection(data / "collection.tsv")
    every_query = read_queries(data / "queries.train.tsv")
    queries = without_test_queries(every_query, export_test_queries(data))
    pairs = msmarco_training_pairs(queries, read_qrels(data / "qrels.train.txt"), texts, arguments.min_relevance)
    if not pairs:
        raise ValueError(f"{data}: no training query has a passage judged >= {arguments.min_relevance} with text")
    steps = arguments.steps or math.ceil(arguments.epochs * len(pairs) / arguments.batch_size)
    bert = arguments.bert or str(distributed.local_first(bert_base_uncased_folder))
    tokenizer = load_tokenizer(bert)
    config = TildeTrainingConfig(
        loss=arguments.loss,
        vocabulary=arguments.vocabulary,
        steps=steps,
        batch_size=arguments.batch_size,
        lr=arguments.lr,
        seed=arguments.seed,
        device=arguments.device,
        checkpoint_every=arguments.checkpoint_every,
        progress=arguments.progress,
    )
    result = train_tilde(Tilde(bert), tokenizer, pairs, queries, texts, out / "model", config)
    record: dict[str, Any] = {
        "bert": bert,
        "pairs": len(pairs),
        "dropped_test_queries": len(every_query) - len(queries),
        "steps": steps,
        "epochs": result.epochs,
        "final_loss": result.losses[-1],
        "processes": distributed.world_size(),
    }
    if arguments.index_set:
        name = arguments.index_set
        candidates = top_of_run(read_run(data / "runs" / f"{name}__bm25.trec"), arguments.index_depth)
        index = _index(result.model, tokenizer, texts, arguments, result.params, candidates)
        record.update(index=str(index.folder), indexed_passages=len(index))
        if distributed.is_main():
            scores = score_run(index, tokenizer, read_queries(data / f"queries.{name}.tsv"), candidates)
            run_file = out / "runs" / f"{name}__{RUN_TAG}.trec"
            write_trec_run(scores.ql, run_file, tag=RUN_TAG)
            record["run"] = str(run_file.relative_to(out))
    if distributed.is_main():
        write_json(out / "result.json", record)
    distributed.barrier()
    return record


def parse_arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line (``python -m lib.training.paper_tilde --help``)."""
    parser = argparse.ArgumentParser(prog="python -m lib.training.paper_tilde", description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="a folder exported by `python -m lib.data.msmarco`")
    parser.add_argument("--out", required=True, help="output folder: model/, index-SET/, result.json")
    parser.add_argument("--bert", help="a BERT folder with vocab.txt (default: the pinned bert-base-uncased)")
    parser.add_argument("--loss", choices=list(LOSSES), default="biqdl")
    parser.add_argument("--vocabulary", choices=list(VOCABULARIES), default="cleaned")
    parser.add_argument("--min-relevance", type=int, default=MSMARCO_MIN_RELEVANCE)
    parser.add_argument("--epochs", type=float, default=10.0, help="passes over the pairs (unless --steps)")
    parser.add_argument("--steps", type=int, help="optimizer steps (default: from --epochs)")
    parser.add_argument("--batch-size", type=int, default=128, help="global batch (split over the processes)")
    parser.add_argument("--lr", type=float, default=PAPER_LR)
    parser.add_argument("--checkpoint-every", type=int, default=1_000)
    parser.add_argument("--index-set", help="index the BM25 candidates of runs/SET__bm25.trec (e.g. dl19)")
    parser.add_argument("--index-depth", type=int, default=1_000)
    parser.add_argument("--index-batch-size", type=int, default=64)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bars")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    """Run from the command line; rank 0 prints the result record as JSON."""
    distributed.finish(run(parse_arguments(argv)))


if __name__ == "__main__":
    main()
