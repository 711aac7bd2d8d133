"""IDCM, the intra-document cascade (Hofstätter, Mitra, Zamani, Craswell, Hanbury, "Intra-Document Cascading:
Learning to Select Passages for Neural Document Ranking", SIGIR 2021, §3; lecture slides 38–40).

MaxP (:mod:`lib.models.long_bert`) runs BERT-cat on every window of a document, so its cost grows with the
document. IDCM puts a cascade *inside* the document (slide 38): a fast student — the authors' "ck" module,
the efficient student model (ESM) — scores every window, and BERT-cat — the effective teacher model (ETM) —
scores only the student's top ``k``; the document's score is a learned weighted sum of the best three
BERT-cat window scores. The student learns, without labels, to rank the windows as BERT-cat ranks them
(slide 39: distillation); ``k`` then bounds BERT's work per document whatever its length (slide 40).

The authors' code is ``matchmaker/models/published/sigir21_idcm.py`` in the GitHub repository
sebastian-hofstaetter/matchmaker (class ``IDCM``), its defaults ``config/train/models/idcm.yaml`` and
``config/train/defaults.yaml``, its loss ``matchmaker/losses/lambdarank.py`` and its training recipe
``documentation/reranking_idcm_sigir21.md``; this module follows them where the lecture is silent.

What is exposed: :attr:`IDCM.select_k` (the student's ``k``, changeable at inference: the chapter sweeps it;
``None`` scores every window with BERT-cat — the full cascade, the authors' ``sample_n = -1``);
:meth:`IDCM.cascade` (the document scores with the student's and BERT-cat's window scores and the
selection); :meth:`IDCM.sweep` (the scores at several ``k`` from one pass: the student and BERT-cat score every
window once, each ``k`` masks BERT-cat's scores to the student's top ``k`` — the same scores as :meth:`IDCM.cascade`
at that ``k``, since a window's score does not depend on which other windows are scored) and :class:`IDCMSweep`
(that pass as a module); :meth:`IDCM.distillation_scores` and :func:`lambda_loss_distillation` (the student's
training).

Named choices:

- **Windows** (:class:`IDCMConfig`): the authors' ``chunk_size`` 50 and ``overlap`` 7 — windows of 50 word
  pieces every 50, each seen with 7 pieces of context on each side (64 pieces), cut by
  :func:`lib.models.long_bert.document_windows` over the document's real pieces. The authors cut the
  tokenised document (its final ``[SEP]`` included) and give BERT ``[CLS] q [SEP] window``; here each window
  is packed as a passage, ``[CLS] q [SEP] w [SEP]`` (:func:`lib.models.bert_cat.pack_pairs`), the input
  chapter 2's BERT-cat was trained on. An empty document has one empty window (the authors': none, score 0).
- **Student, the authors' "ck"** (:class:`CKStudent`): word-piece embeddings, one convolution over 3-grams
  (as many filters as embedding dimensions, ReLU, zero padding on the right), the cosine match matrix
  of query and window 3-grams (:func:`lib.models.kernels.cosine_match_matrix`), 11 RBF kernels at
  μ = 1.0, 0.9, …, −0.9 all with σ = 0.1 (no exact-match σ), a learned factor per kernel (initialised to 1)
  on the kernel sums before ``ln(max(·, 1e-4))``, the sum over query terms and ``Linear(11, 1)`` (weights
  U(−0.01, 0.01)), no tanh. An n-gram counts where it starts at a real token
  (:func:`lib.models.conv_knrm.ngram_mask`'s ``"start"``, the authors'). The query is encoded once per
  document, not once per window (the same values). The student reads the query without ``[CLS]`` and
  ``[SEP]`` (the authors' query carries them).
- **Student embeddings**: the student's own ``nn.Embedding``, initialised with a copy of BERT's word-piece
  embedding matrix and frozen by default (``freeze_student_embeddings``), as the authors' student reads
  BERT's embeddings through ``.detach()``. The authors use BERT's whole embedding layer (word, position and
  segment embeddings and LayerNorm); the copy here is the word-piece matrix alone. After BERT was trained
  inside IDCM (the authors' stage 2), :meth:`IDCM.refresh_student_embeddings` copies its matrix again.
- **Selection**: the student's top ``select_k`` windows of each document (``torch.topk``; a document with
  fewer windows has all of them scored). Default 4, the authors' published model ("4 × 64-token windows");
  their training command uses 3.
- **Aggregation**: BERT-cat's scores of the selected windows sorted, the best ``aggregate_top`` = 3 (the
  authors' ``top_k_chunks``) weighted by learned weights initialised to 1 (their ``top_k_scoring``) and
  summed; a place with no scored window (fewer than 3) counts 0. BERT-cat scores its ``[CLS]`` vector as
  :class:`lib.models.bert_cat.BertCat` does (the authors' BERT: the pooled output).
- **Training** follows the authors' stages (their documentation): BERT-cat on passages (chapter 2); BERT
  on documents with every window (``select_k = None``: :meth:`IDCM.forward` passes gradients to BERT-cat
  and the aggregation); the student by distillation alone, BERT-cat frozen: :meth:`IDCM.distillation_scores`
  gives the student's window scores with gradients and BERT-cat's of *every* window without gradients or
  dropout (the authors' ``torch.set_grad_enabled(False)`` and ``bert_model.eval()``), and
  :func:`lambda_loss_distillation` compares them.
- **Distillation loss** (:func:`lambda_loss_distillation`): the authors' ``idcm_sample_train_type:
  lambdaloss`` — LambdaLoss with the NDCG-Loss2 weighing (Wang, Li, Golbandi, Bendersky, Najork, "The
  LambdaLoss Framework for Ranking Metric Optimization", CIKM 2018; the authors' copy of allRank's code)
  over each document's windows, with graded labels from BERT-cat: its best ``top_n`` windows get gains
  ``top_n, top_n − 1, …, 1``, the rest 0; σ = 1, base-2 logarithm, summed over window pairs and documents
  (their ``reduction="sum"``). Their alternatives (MSE, KL divergence, soft cross-entropy) are not built.
- **Learning rates** (:meth:`IDCM.optimizer_groups`): BERT and BERT-cat's linear layer at BertCat's rates
  (the book's, :mod:`lib.models.bert_cat`); the aggregation weights at the authors' 7e-4
  (:data:`AGGREGATION_LR`, their ``param_group1``); the student at :data:`lib.models.tk.OTHER_LR` (1e-3, the
  book's rate for Conv-KNRM's convolutions) instead of the authors' default 7e-6 (their ``param_group0``,
  every other parameter), which would hardly move a newly initialised convolution in the book's few steps.
- **Document length**: the authors' loader cuts documents at 2,000 pieces; IDCM takes what it is given.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import BertForMaskedLM, BertModel

from lib.models.bert_cat import BertCat
from lib.models.conv_knrm import NgramMask, ngram_mask
from lib.models.kernels import (
    KERNEL_SIGMA,
    N_KERNELS,
    cosine_match_matrix,
    full_precision,
    kernel_mus,
    kernel_sigmas,
    kernel_sums,
    log_normalise,
)
from lib.models.long_bert import Windows, as_bert_cat, document_windows
from lib.models.tk import OTHER_LR, embed, embedding_layer, param_groups, take_rows

__all__ = [
    "AGGREGATION_LR",
    "IDCM",
    "CKStudent",
    "Cascade",
    "IDCMConfig",
    "IDCMSweep",
    "lambda_loss_distillation",
    "teacher_gains",
]

#: The aggregation weights' rate: the authors' ``param_group1_learning_rate`` for ``top_k_scoring``.
AGGREGATION_LR = 7e-4


@dataclass(frozen=True)
class IDCMConfig:
    """IDCM's hyper-parameters, the authors' by default (``config/train/models/idcm.yaml``, ``sigir21_idcm.py``)."""

    #: Window length in word pieces (``idcm_chunk_size``), also the step between windows.
    chunk_size: int = 50
    #: Context added on each side of a window (``idcm_overlap``).
    overlap: int = 7
    #: Windows the student passes to BERT-cat (``sample_n``; the published model's 4); ``None``: all.
    select_k: int | None = 4
    #: Best BERT-cat window scores aggregated (``idcm_top_k_chunks``).
    aggregate_top: int = 3
    #: N-gram size of the student's convolution (the "ck" module's 3).
    ngram: int = 3
    #: Which n-grams the student counts (:func:`lib.models.conv_knrm.ngram_mask`; the authors' ``"start"``).
    ngram_mask: NgramMask = "start"
    #: The student's kernels, μ = 1.0, 0.9, …, −0.9.
    n_kernels: int = N_KERNELS
    #: Width σ of every student kernel (the μ = 1 one included).
    kernel_sigma: float = KERNEL_SIGMA
    #: Clamp of the scaled kernel sums before the logarithm (the authors' 1e-4).
    log_clamp: float = 1e-4
    #: Keep the student's copy of BERT's word-piece embeddings fixed (the authors' ``.detach()``).
    freeze_student_embeddings: bool = True


def check_select_k(select_k: int | None) -> int | None:
    """``select_k`` if it is ``None`` or an integer >= 1."""
    if select_k is not None and (isinstance(select_k, bool) or not isinstance(select_k, int) or select_k < 1):
        raise ValueError(f"parameter 'select_k' must be None (every window) or an integer >= 1, got {select_k!r}")
    return select_k


class CKStudent(nn.Module):
    """The authors' "ck" student: kernel pooling over convolved 3-grams (module docstring), one score per pair."""

    def __init__(self, embeddings: torch.Tensor, config: IDCMConfig | None = None) -> None:
        super().__init__()
        config = config or IDCMConfig()
        if config.ngram < 1:
            raise ValueError(f"parameter 'ngram' must be >= 1, got {config.ngram}")
        self.embedding = embedding_layer(embeddings, config.freeze_student_embeddings)
        dim = self.embedding.embedding_dim
        self.ngram, self.ngram_mode = config.ngram, config.ngram_mask
        self.conv = nn.Conv1d(dim, dim, config.ngram)
        self.register_buffer("mus", torch.tensor(kernel_mus(config.n_kernels), dtype=torch.float32))
        self.register_buffer(
            "sigmas", torch.tensor(kernel_sigmas(config.n_kernels, sigma=config.kernel_sigma), dtype=torch.float32)
        )
        self.kernel_scale = nn.Parameter(torch.ones(config.n_kernels))
        self.log_clamp = float(config.log_clamp)
        self.dense = nn.Linear(config.n_kernels, 1)
        nn.init.uniform_(self.dense.weight, -0.01, 0.01)

    def encode(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The n-gram vectors ``[B, L, D]`` (0 where masked) and their mask ``[B, L]`` of a text."""
        mask = mask.bool()
        embeddings = embed(self.embedding, ids, mask).transpose(1, 2)
        vectors = F.relu(self.conv(F.pad(embeddings, (0, self.ngram - 1)))).transpose(1, 2)
        valid = ngram_mask(mask, self.ngram, self.ngram_mode)
        return vectors * valid.unsqueeze(-1), valid

    def score(
        self, query: torch.Tensor, query_mask: torch.Tensor, doc: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """One score per pair ``[B]`` from encoded query and passage (:meth:`encode`)."""
        match = cosine_match_matrix(query, doc, query_mask, doc_mask)
        with full_precision(match.device):
            sums = kernel_sums(match, query_mask, doc_mask, self.mus, self.sigmas)
            features = log_normalise(sums * self.kernel_scale.float(), query_mask, math.e, self.log_clamp)
            return self.dense(features).squeeze(-1)

    def forward(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_ids: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """One score per query–passage pair, ``[B]`` float32."""
        return self.score(*self.encode(query_ids, query_mask), *self.encode(doc_ids, doc_mask))


@dataclass(frozen=True)
class Cascade:
    """IDCM's scores of ``B`` documents with at most ``n`` windows each (−inf marks a window not scored)."""

    #: The document scores, ``[B]``.
    scores: torch.Tensor
    #: The student's window scores ``[B, n]``; ``None`` when every window went to BERT-cat (``select_k=None``).
    student: torch.Tensor | None
    #: BERT-cat's scores of the selected windows ``[B, n]``, −inf elsewhere.
    bert: torch.Tensor
    #: The windows BERT-cat scored, ``[B, n]`` bool.
    selected: torch.Tensor
    #: The windows each document has, ``[B, n]`` bool.
    valid: torch.Tensor


@contextmanager
def evaluating(module: nn.Module) -> Iterator[None]:
    """``module`` in evaluation mode (no dropout) for the block, its mode restored after."""
    training = module.training
    module.eval()
    try:
        yield
    finally:
        module.train(training)


class IDCM(nn.Module):
    """IDCM (Hofstätter et al., SIGIR 2021): the "ck" student selects windows, BERT-cat scores them (module docstring).

    Args:
        bert: a :class:`BertCat` (e.g. chapter 2's, trained on passages) or what :class:`BertCat` builds one from.
        config: the hyper-parameters (:class:`IDCMConfig`; the authors' by default).
        num_layers: for a BERT, keep its first ``num_layers`` layers (``None``: all).
        student_lr, aggregation_lr: the student's and the aggregation weights' rates (:meth:`optimizer_groups`).
    """

    def __init__(
        self,
        bert: BertCat | BertModel | BertForMaskedLM | str | os.PathLike,
        config: IDCMConfig | None = None,
        num_layers: int | None = None,
        student_lr: float = OTHER_LR,
        aggregation_lr: float = AGGREGATION_LR,
    ) -> None:
        super().__init__()
        config = config or IDCMConfig()
        self.bert_cat = as_bert_cat(bert, num_layers)
        width = config.chunk_size + 2 * config.overlap
        if config.chunk_size < 1 or config.overlap < 0 or width + 4 > self.bert_cat.max_length:
            raise ValueError(
                f"windows of {config.chunk_size} + 2 × {config.overlap} pieces must fit BERT's "
                f"{self.bert_cat.max_length} positions with a query"
            )
        if config.aggregate_top < 1:
            raise ValueError(f"parameter 'aggregate_top' must be >= 1, got {config.aggregate_top}")
        self.config = config
        self.select_k = config.select_k
        self.student = CKStudent(self.bert_cat.bert.embeddings.word_embeddings.weight, config)
        self.aggregation = nn.Parameter(torch.ones(config.aggregate_top))
        self.student_lr, self.aggregation_lr = student_lr, aggregation_lr

    @property
    def select_k(self) -> int | None:
        """The windows per document BERT-cat scores at inference, the student's best; ``None``: every window."""
        return self._select_k

    @select_k.setter
    def select_k(self, value: int | None) -> None:
        self._select_k = check_select_k(value)

    def windows(self, doc_ids: torch.Tensor, doc_mask: torch.Tensor) -> Windows:
        """The documents' windows (:func:`lib.models.long_bert.document_windows` with the configured sizes)."""
        return document_windows(doc_ids, doc_mask, self.config.chunk_size, self.config.chunk_size, self.config.overlap)

    def student_scores(self, query_ids: torch.Tensor, query_mask: torch.Tensor, windows: Windows) -> torch.Tensor:
        """The student's score of every window with its document's query, ``[N]`` (the query encoded once)."""
        query, query_valid = self.student.encode(query_ids, query_mask)
        rows = windows.document
        return self.student.score(
            take_rows(query, rows), query_valid[rows], *self.student.encode(windows.ids, windows.mask)
        )

    def bert_scores(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, windows: Windows, rows: torch.Tensor | None = None
    ) -> torch.Tensor:
        """BERT-cat's window scores ``[B, n]`` of the windows ``rows`` (``[N]`` bool; ``None``: all), −inf elsewhere."""
        if rows is None:
            rows = torch.ones_like(windows.document, dtype=torch.bool)
        documents = windows.document[rows]
        scores = self.bert_cat(query_ids[documents], query_mask[documents], windows.ids[rows], windows.mask[rows])
        flat = scores.new_full(windows.document.shape, -math.inf)
        flat[rows] = scores
        return windows.per_document(flat, -math.inf)

    def aggregate(self, bert: torch.Tensor) -> torch.Tensor:
        """The document scores ``[B]``: the best ``aggregate_top`` window scores, sorted, weighted and summed."""
        top = min(self.config.aggregate_top, bert.shape[1])
        best = bert.topk(top, dim=1).values
        best = torch.where(torch.isfinite(best), best, torch.zeros_like(best))
        return (best * self.aggregation[:top]).sum(dim=1)

    def cascade(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_ids: torch.Tensor, doc_mask: torch.Tensor
    ) -> Cascade:
        """Score documents: the student's top :attr:`select_k` windows by BERT-cat, the best 3 aggregated."""
        windows = self.windows(doc_ids, doc_mask)
        valid = windows.valid()
        if self.select_k is None:
            student, selected = None, valid
        else:
            student = windows.per_document(self.student_scores(query_ids, query_mask, windows), -math.inf)
            chosen = student.topk(min(self.select_k, student.shape[1]), dim=1).indices
            selected = torch.zeros_like(valid).scatter(1, chosen, True) & valid
        bert = self.bert_scores(query_ids, query_mask, windows, selected[windows.document, windows.number])
        return Cascade(self.aggregate(bert), student, bert, selected, valid)

    def forward(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_ids: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """One score per query–document pair, ``[B]`` (:meth:`cascade`)."""
        return self.cascade(query_ids, query_mask, doc_ids, doc_mask).scores

    def sweep(
        self,
        query_ids: torch.Tensor,
        query_mask: torch.Tensor,
        doc_ids: torch.Tensor,
        doc_mask: torch.Tensor,
        ks: Sequence[int | None],
    ) -> torch.Tensor:
        """The document scores at every ``k`` of ``ks``, ``[B, len(ks)]``, from one pass (module docstring): BERT-cat
        reads every window when ``ks`` holds ``None``, else the student's top ``max(ks)``, a superset of every smaller
        ``k``'s."""
        ks = [check_select_k(k) for k in ks]
        windows = self.windows(doc_ids, doc_mask)
        valid = windows.valid()
        student = None
        if any(k is not None for k in ks):
            student = windows.per_document(self.student_scores(query_ids, query_mask, windows), -math.inf)

        def top(k: int | None) -> torch.Tensor:
            if k is None:
                return valid
            chosen = student.topk(min(k, student.shape[1]), dim=1).indices
            return torch.zeros_like(valid).scatter(1, chosen, True) & valid

        largest = None if None in ks else max(ks)  # BERT-cat reads the windows of the largest k only
        bert = self.bert_scores(query_ids, query_mask, windows, top(largest)[windows.document, windows.number])
        masked = [torch.where(top(k), bert, torch.full_like(bert, -math.inf)) for k in ks]
        return torch.stack([self.aggregate(scores) for scores in masked], dim=1)

    def distillation_scores(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_ids: torch.Tensor, doc_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """What the student learns from: its window scores ``[B, n]`` (with gradients, −inf where no window),
        BERT-cat's scores of every window ``[B, n]`` (no gradients, no dropout) and the windows' mask ``[B, n]``."""
        windows = self.windows(doc_ids, doc_mask)
        student = windows.per_document(self.student_scores(query_ids, query_mask, windows), -math.inf)
        with torch.no_grad(), evaluating(self.bert_cat):
            teacher = self.bert_scores(query_ids, query_mask, windows)
        return student, teacher, windows.valid()

    @torch.no_grad()
    def refresh_student_embeddings(self) -> None:
        """Copy BERT's current word-piece embeddings into the student's (after training BERT inside IDCM)."""
        self.student.embedding.weight.copy_(self.bert_cat.bert.embeddings.word_embeddings.weight)

    def optimizer_groups(
        self,
        bert_lr: float | None = None,
        head_lr: float | None = None,
        student_lr: float | None = None,
        aggregation_lr: float | None = None,
    ) -> list[dict]:
        """Adam groups of the trainable parameters: ``bert``, ``head`` (BERT-cat's linear layer), ``aggregation``
        and ``student`` (``None``: the model's rates; a frozen parameter is left out, an empty group too)."""
        rates = {
            "bert": self.bert_cat.bert_lr if bert_lr is None else bert_lr,
            "head": self.bert_cat.head_lr if head_lr is None else head_lr,
            "aggregation": self.aggregation_lr if aggregation_lr is None else aggregation_lr,
            "student": self.student_lr if student_lr is None else student_lr,
        }
        params = {
            "bert": list(self.bert_cat.bert.parameters()),
            "head": list(self.bert_cat.score.parameters()),
            "aggregation": [self.aggregation],
            "student": list(self.student.parameters()),
        }
        return param_groups({name: (params[name], rates[name]) for name in params})


class IDCMSweep(nn.Module):
    """:meth:`IDCM.sweep` at fixed ``ks`` as a module: ``forward`` gives ``[B, len(ks)]`` document scores."""

    def __init__(self, idcm: IDCM, ks: Sequence[int | None]) -> None:
        super().__init__()
        self.idcm, self.ks = idcm, [check_select_k(k) for k in ks]

    def forward(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_ids: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """The scores of every ``k``, one column each."""
        return self.idcm.sweep(query_ids, query_mask, doc_ids, doc_mask, self.ks)


def teacher_gains(teacher: torch.Tensor, mask: torch.Tensor, top_n: int) -> torch.Tensor:
    """Graded labels ``[B, n]`` from the teacher's window scores: ``top_n − i`` for its ``i``-th best window
    (``i`` from 0), 0 for the others and where ``mask`` is false (the authors' ``bert_gains``)."""
    mask = mask.bool()
    order = teacher.masked_fill(~mask, -math.inf).argsort(dim=1, descending=True, stable=True)
    gain_of_rank = (top_n - torch.arange(teacher.shape[1], device=teacher.device)).clamp(min=0).float()
    gains = torch.zeros(teacher.shape, dtype=torch.float32, device=teacher.device)
    return gains.scatter(1, order, gain_of_rank.expand(teacher.shape).contiguous()) * mask


def ndcg_loss2_weights(gains_in_order: torch.Tensor, ideal_dcg: torch.Tensor) -> torch.Tensor:
    """LambdaLoss's NDCG-Loss2 weights ``[B, n, n]``: ``|1/D(|i−j|) − 1/D(|i−j|+1)| · |G_i − G_j|`` with
    ``D(r) = log2(1 + r)`` and ``G = (2^gain − 1) / IDCG`` of the gains in predicted order."""
    n = gains_in_order.shape[1]
    positions = torch.arange(n, device=gains_in_order.device)
    inverse = 1.0 / torch.log2(positions.float() + 2.0)
    delta = (positions[:, None] - positions[None, :]).abs()
    step = (inverse[(delta - 1).clamp(min=0)] - inverse[delta]).abs().masked_fill(delta == 0, 0.0)
    normalised = (torch.pow(2.0, gains_in_order) - 1) / ideal_dcg[:, None]
    return step[None] * (normalised[:, :, None] - normalised[:, None, :]).abs()


def lambda_loss_distillation(
    student: torch.Tensor,
    teacher: torch.Tensor,
    mask: torch.Tensor,
    top_n: int = 3,
    sigma: float = 1.0,
    eps: float = 1e-6,
) -> torch.Tensor:
    """The student's distillation loss (the authors' ``lambdaloss``; module docstring): LambdaLoss with NDCG-Loss2
    weights of the student's window scores ``[B, n]`` against graded labels from the teacher's ``[B, n]``
    (:func:`teacher_gains`), over the windows ``mask`` ``[B, n]``; summed over pairs and documents. The
    teacher is detached; the loss tends to 0 as the student orders the windows as the teacher, far apart."""
    if student.shape != teacher.shape or student.shape != mask.shape:
        shapes = [tuple(student.shape), tuple(teacher.shape), tuple(mask.shape)]
        raise ValueError(f"student, teacher and mask differ in shape: {shapes}")
    if top_n < 1:
        raise ValueError(f"parameter 'top_n' must be >= 1, got {top_n}")
    with full_precision(student.device):
        mask = mask.bool()
        gains = teacher_gains(teacher.detach().float(), mask, top_n)
        order = student.detach().masked_fill(~mask, -math.inf).argsort(dim=1, descending=True, stable=True)
        predicted = student.float().masked_fill(~mask, 0.0).gather(1, order)
        gains_in_order, valid = gains.gather(1, order), mask.gather(1, order)
        discounts = torch.log2(torch.arange(student.shape[1], device=student.device).float() + 2.0)
        ideal = ((torch.pow(2.0, gains.sort(dim=1, descending=True).values) - 1) / discounts).sum(dim=1)
        weights = ndcg_loss2_weights(gains_in_order, ideal.clamp(min=eps))
        differences = (predicted[:, :, None] - predicted[:, None, :]).clamp(min=-1e4, max=1e4)
        probabilities = (torch.sigmoid(sigma * differences).clamp(min=eps) ** weights).clamp(min=eps)
        pairs = valid[:, :, None] & valid[:, None, :] & (gains_in_order[:, :, None] > gains_in_order[:, None, :])
        return -torch.where(pairs, torch.log2(probabilities), torch.zeros_like(probabilities)).sum()
