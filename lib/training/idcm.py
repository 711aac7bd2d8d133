"""Training IDCM's student by distillation from BERT-cat's window scores (lecture 8, slide 39), resumable.

The third of the authors' stages (Hofstätter et al., "Intra-Document Cascading", SIGIR 2021, §3.2; their training
recipe in sebastian-hofstaetter/matchmaker, ``documentation/reranking_idcm_sigir21.md``): BERT-cat is frozen and
the fast student learns, without labels, to order each document's windows as BERT-cat orders them —
:meth:`lib.models.idcm.IDCM.distillation_scores` and :func:`lib.models.idcm.lambda_loss_distillation` (LambdaLoss
over a document's windows, BERT-cat's top 3 as graded labels). Each step takes ``batch_size`` (query, document)
examples of a seeded order (:class:`lib.training.loop.BatchOrder`); the optimizer holds the student's parameters
alone. Every ``validate_every`` steps IDCM re-ranks the validation set's candidates with its ``select_k`` and is
early-stopped on ``config.metric`` — the pairwise trainer's validation hook (:class:`lib.training.pairwise.Validator`:
IDCM scores (query, document) pairs as any model does), best weights, history and resumption.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from lib.core.device import amp_enabled, autocast, resolve_device
from lib.core.types import JudgedSet
from lib.models.idcm import IDCM, lambda_loss_distillation
from lib.training.loop import CHECKPOINT_NAME, BatchOrder, LoopSettings, run_loop
from lib.training.pairwise import TrainingConfig, TrainingResult, Validator, best_of, training_fingerprint

#: A training example: a query and one of its documents.
Example = tuple[str, str]


def train_student(
    model: IDCM,
    tokenizer: Any,
    examples: Sequence[Example],
    queries: Mapping[str, str],
    documents: Mapping[str, str],
    validation: JudgedSet,
    config: TrainingConfig,
    checkpoint_dir: str | Path,
) -> TrainingResult:
    """Distil ``model``'s student from its BERT-cat on ``examples`` (module docstring), validated on ``validation``
    (its candidates' texts in ``documents``). ``config``: the pairwise trainer's (batch size in examples, steps,
    validation, patience, caps — ``max_doc_length`` the document cap —, ``learning_rates`` for
    :meth:`lib.models.idcm.IDCM.optimizer_groups`; ``margin`` and ``bucket_batches`` unused)."""
    if not examples:
        raise ValueError("parameter 'examples' is empty: nothing to distil on")
    missing = [example for example in examples if example[0] not in queries or example[1] not in documents][:3]
    if missing:
        raise KeyError(f"examples {missing} have no query or document text")
    device = resolve_device(config.device)
    amp_enabled(device, config.amp)  # validates the value
    checkpoint_dir = Path(checkpoint_dir)
    pairs = [(qid, docid, docid) for qid, docid in examples]  # the fingerprint's pair format
    fingerprint = {"idcm_student": True, **training_fingerprint(model, pairs, validation, config, None)}
    model.to(device)
    groups = [group for group in model.optimizer_groups(**config.learning_rates) if group["name"] == "student"]
    optimizer = torch.optim.Adam(groups)
    order = BatchOrder(len(examples), config.batch_size, config.seed)

    def loss_of_step(step: int) -> torch.Tensor:
        batch = [examples[i] for i in order.batch(step)]
        query_ids, query_mask = tokenizer.encode([queries[qid] for qid, _ in batch], config.max_query_length)
        doc_ids, doc_mask = tokenizer.encode([documents[docid] for _, docid in batch], config.max_doc_length)
        tensors = [tensor.to(device) for tensor in (query_ids, query_mask, doc_ids, doc_mask)]
        with autocast(device, config.amp):
            student, teacher, mask = model.distillation_scores(*tensors)
        return lambda_loss_distillation(student.float(), teacher.float(), mask)

    settings = LoopSettings(
        steps=config.max_steps, checkpoint_every=config.validate_every, grad_clip=config.grad_clip, seed=config.seed,
        desc="train IDCM's student", progress=config.progress, mismatch=config.mismatch,
    )  # fmt: skip
    validator = Validator(model, tokenizer, validation, dict(documents), config, device, checkpoint_dir, len(examples))
    state = run_loop(model, optimizer, loss_of_step, checkpoint_dir / CHECKPOINT_NAME, fingerprint, settings, None,
                     validator)  # fmt: skip
    return best_of(model, state, checkpoint_dir)


__all__ = ["Example", "train_student"]
