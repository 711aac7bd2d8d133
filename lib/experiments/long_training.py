"""Chapter 9's trained long-document models: TKL (slides 34–37) and IDCM's student (slides 38–40), on assembled
documents, and what the chapter reads off them.

- :func:`training_set`: documents assembled around the teacher's best passage of each of the first
  ``train_queries`` teacher-labelled training queries of chapter 2's protocol — training queries only, never a
  test year —, relevant and non-relevant documents from one filler mixture: the same number of the query's own
  candidates from the teacher's rank ``negative_from`` down in each (on its topic), the rest other queries'
  candidates (never one of the query's own).
- :func:`train_tkl`: TKL on GloVe (the book's TK-2 representation; the chosen TK's contextualiser would cost a
  MiniLM pass per chunk of every training document on 2 CPU cores) trained with the TK paper's pairwise hinge on
  (query, relevant document, non-relevant document) pairs, validated on DL21's assembled documents.
- :func:`train_idcm`: IDCM around chapter 2's BERT-cat (frozen, trained on passages only: the authors' second
  stage, BERT on documents, is skipped), its student distilled from BERT-cat's window scores on the training
  documents (:mod:`lib.training.idcm`).
- :func:`tkl_regions`: for each relevant assembled document, where TKL's best region lies and whether it covers the
  relevant passage (slide 37).
- :func:`region_positions`: where TKL's top regions lie in real documents (TIME's relevant candidates; slide 37's
  distribution of the regions' positions).
- :func:`cascade_effectiveness` and :func:`choose_k`: IDCM's cascade at every ``k`` measured on each set, and the
  ``k`` validation chooses — the smallest within ``tolerance`` nDCG@10 of the full cascade (every window).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from typing import Any

import pandas as pd
import torch

from lib.core.profiles import LongSettings, TrainingSettings
from lib.core.run_context import RunContext
from lib.core.types import JudgedSet, Run, query_order, ranking_from_run
from lib.data.assembled_documents import AssembledSet, Layout, assemble
from lib.evaluation.measures import evaluate
from lib.experiments.distillation_protocol import Protocol
from lib.experiments.distillation_set import triple_sampling
from lib.experiments.model_runs import checkpoint_folder
from lib.experiments.model_setup import Representations, training_config
from lib.models.bert_cat import BertCat
from lib.models.idcm import IDCM, IDCMConfig
from lib.models.tk import width_for
from lib.models.tkl import TKL, TKLConfig
from lib.representations.text import QUERY_MAX_LENGTH
from lib.training.idcm import train_student
from lib.training.pairwise import TrainingResult, train, training_pairs


def training_set(protocol: Protocol, settings: TrainingSettings, long: LongSettings, lengths: list[int],
                 seed: int) -> tuple[AssembledSet, dict[str, str]]:  # fmt: skip
    """The training documents (module docstring) and their queries' texts."""
    teacher = protocol.distillation.teacher
    kept = sorted({qid for qid, _, _ in protocol.triples}, key=query_order)[: long.train_queries]
    negative_from = triple_sampling(settings).negative_from
    relevant, negatives = {}, {}
    for qid in kept:
        ranking = [pid for pid in ranking_from_run(teacher[qid]) if pid in protocol.texts]
        relevant[qid] = {ranking[0]: 1} if ranking else {}
        negatives[qid] = ranking[negative_from - 1 :]
    pool = sorted({pid for qid in kept for pid in teacher[qid] if pid in protocol.texts})
    own = {qid: set(teacher[qid]) for qid in kept}
    counts = (1, long.others_per_query, long.own_per_document)
    assembled = assemble(relevant, negatives, pool, protocol.texts, lengths, seed, counts, own)
    return assembled, {qid: protocol.queries[qid] for qid in assembled.qrels}


def _config(name: str, settings: TrainingSettings, long: LongSettings, context: RunContext, depth: int):
    return dataclasses.replace(
        training_config(name, settings, context.seed, str(context.device)), batch_size=long.train_batch,
        max_steps=long.train_steps, validate_every=long.validate_every, patience=long.patience,
        max_doc_length=long.max_pieces, rerank_depth=depth, eval_batch_size=8, warmup_steps=0, bucket_batches=1,
    )  # fmt: skip


def train_tkl(
    representations: Representations,
    train_set: AssembledSet,
    queries: Mapping[str, str],
    validation: tuple[JudgedSet, Mapping[str, str]],
    settings: TrainingSettings,
    long: LongSettings,
    context: RunContext,
) -> TrainingResult:
    """TKL on ``representations``' word vectors, trained on ``train_set`` (module docstring); ``validation``: DL21's
    assembled documents as a judged set and their texts. Resumes its checkpoint in the chapter's folder."""
    embeddings = representations.embeddings
    config = TKLConfig(**width_for(embeddings.shape[1])) if embeddings.shape[1] < 300 else TKLConfig()
    torch.manual_seed(context.seed)
    model = TKL(embeddings, config=config)
    pairs = training_pairs(train_set.qrels, train_set.run, train_set.documents, context.seed)
    texts = {**train_set.documents, **validation[1]}
    depth = max(len(run) for run in validation[0].run.values())
    run_config = _config("tk2", settings, long, context, depth)
    folder = checkpoint_folder(context.profile, context.chapter, "tkl")
    return train(model, representations.vocabulary, pairs, queries, texts, validation[0], run_config, folder)


def train_idcm(
    bert_cat: BertCat,
    tokenizer: Any,
    train_set: AssembledSet,
    queries: Mapping[str, str],
    validation: tuple[JudgedSet, Mapping[str, str]],
    settings: TrainingSettings,
    long: LongSettings,
    context: RunContext,
) -> TrainingResult:
    """IDCM around a copy of ``bert_cat`` (frozen), its student distilled on ``train_set``'s documents (module
    docstring), validated on DL21's assembled documents at the largest ``idcm_ks``. Resumes its checkpoint."""
    model = IDCM(copy.deepcopy(bert_cat), IDCMConfig(select_k=max(long.idcm_ks)))
    examples = [(qid, docid) for qid in sorted(train_set.run, key=query_order) for docid in train_set.run[qid]]
    depth = max(len(run) for run in validation[0].run.values())
    run_config = _config("bert-cat", settings, long, context, depth)
    folder = checkpoint_folder(context.profile, context.chapter, "idcm")
    documents = {**train_set.documents, **validation[1]}
    return train_student(model, tokenizer, examples, queries, documents, validation[0], run_config, folder)


def _passage_spans(layout: Layout, texts: Mapping[str, str], tokenizer: Any, cap: int) -> list[tuple[int, int]]:
    """Each passage's token span ``[start, end)`` in the document (the tokenizer's tokens of each passage, in order,
    cut at ``cap``)."""
    spans, start = [], 0
    for pid in layout.passages:
        length = int(tokenizer.encode([texts[pid]], cap)[1].sum())
        spans.append((min(start, cap), min(start + length, cap)))
        start += length
    return spans


def tkl_regions(
    model: TKL,
    tokenizer: Any,
    judged: JudgedSet,
    assembled: AssembledSet,
    texts: Mapping[str, str],
    max_pieces: int,
) -> pd.DataFrame:
    """One row per relevant assembled document of ``judged``: its length in tokens, TKL's best region (start, end),
    the relevant passage's span, whether the region overlaps it (``covers``) and the chance a region of that length
    placed uniformly would (``chance``), and the region's relative position (its middle over the length)."""
    rows = []
    model.eval()
    device = next(model.parameters()).device
    for docid, layout in assembled.layouts.items():
        if layout.relevant_at is None or layout.qid not in judged.queries:
            continue
        query = tokenizer.encode([judged.queries[layout.qid]], QUERY_MAX_LENGTH)
        doc = tokenizer.encode([assembled.documents[docid]], max_pieces)
        with torch.inference_mode():
            explained = model.explain_regions(*(tensor.to(device) for tensor in (*query, *doc)))
        length = int(doc[1].sum())
        start, end = int(explained.region_starts[0, 0]), int(explained.region_ends[0, 0])
        low, high = _passage_spans(layout, texts, tokenizer, max_pieces)[layout.relevant_at]
        width = max(end - start, 1)
        chance = min(1.0, (high - low + width - 1) / max(length - width + 1, 1)) if high > low else 0.0
        rows.append({"qid": layout.qid, "docid": docid, "tokens": length, "region_start": start, "region_end": end,
                     "relevant_start": low, "relevant_end": high, "covers": start < high and low < end,
                     "chance": chance, "region_position": (start + end) / 2 / max(length, 1)})  # fmt: skip
    return pd.DataFrame(rows)


def region_positions(
    model: TKL, tokenizer: Any, judged: JudgedSet, documents: Mapping[str, str], max_pieces: int
) -> pd.DataFrame:
    """One row per region of TKL's top regions in each relevant candidate of ``judged`` (each read to
    ``max_pieces`` tokens): ``qid``, ``docid``, the region's ``rank`` (1: best), the document's length in
    ``tokens``, the region's ``start`` and ``end`` and its relative ``position`` (its middle over the length)."""
    rows = []
    model.eval()
    device = next(model.parameters()).device
    for qid in sorted(judged.run, key=query_order):
        relevant = [doc for doc in judged.run[qid] if judged.qrels.get(qid, {}).get(doc, 0) > 0]
        for docid in relevant:
            query = tokenizer.encode([judged.queries[qid]], QUERY_MAX_LENGTH)
            doc = tokenizer.encode([documents[docid]], max_pieces)
            with torch.inference_mode():
                explained = model.explain_regions(*(tensor.to(device) for tensor in (*query, *doc)))
            length = int(doc[1].sum())
            starts, ends = explained.region_starts[0].tolist(), explained.region_ends[0].tolist()
            rows += [{"qid": qid, "docid": docid, "rank": rank, "tokens": length, "start": start, "end": end,
                      "position": (start + end) / 2 / max(length, 1)}
                     for rank, (start, end) in enumerate(zip(starts, ends, strict=True), 1) if start >= 0]  # fmt: skip
    return pd.DataFrame(rows, columns=["qid", "docid", "rank", "tokens", "start", "end", "position"])


def cascade_effectiveness(
    cascade: Mapping[tuple[int | None, str], Run], judged: Mapping[str, JudgedSet], measure: str = "nDCG@10"
) -> pd.DataFrame:
    """``measure`` of IDCM's runs ``cascade[k, set]`` on each judged set: a row per ``k`` (``None``: every window),
    a column per set."""
    rows: dict[int | None, dict[str, float]] = {}
    for (k, name), run in cascade.items():
        rows.setdefault(k, {})[name] = float(evaluate(run, judged[name].qrels, [measure])[measure])
    return pd.DataFrame(list(rows.values()), index=pd.Index(list(rows), dtype=object, name="k"))  # keeps None


def choose_k(validation: Mapping[int | None, float], tolerance: float = 0.01) -> int | None:
    """The smallest ``k`` whose validation value is within ``tolerance`` of the full cascade's (``validation[None]``);
    the full cascade itself when none is."""
    full = validation[None]
    within = sorted(k for k, value in validation.items() if k is not None and value >= full - tolerance)
    return within[0] if within else None


__all__ = [
    "cascade_effectiveness",
    "choose_k",
    "region_positions",
    "tkl_regions",
    "train_idcm",
    "train_tkl",
    "training_set",
]
