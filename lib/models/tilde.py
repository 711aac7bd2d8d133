"""TILDE: BERT's masked-LM head read at the first position, one distribution per text (TILDE paper §3.2).

TILDE maps a text — a passage *or* a query, alone — to a likelihood for every word piece of the
vocabulary: BERT encodes the text, and the masked-LM head (transform + decoder tied to the word
embeddings) applied to the output vector at position 0 gives one logit ``z_t`` per piece ``t``.
The same network gives ``P(t|d)`` from a passage (used by TILDE-QL, eq. 4) and ``P(t|q)`` from a
query (used by TILDE-DL, eq. 5). The book starts it from all-MiniLM-L6-v2
(:func:`lib.representations.pretrained.minilm_folder`; its vocabulary is bert-base-uncased's), the
``paper`` profile from ``bert-base-uncased``, and the book's small pre-trained BERT (a folder of
:func:`lib.training.masked_lm.pretrain_mlm`) remains a named alternative.

**The head of an encoder without one.** all-MiniLM-L6-v2 ships its encoder only. Loading it as a
``BertForMaskedLM`` adds BERT's masked-LM head: the transform (dense 384 → 384, GELU, LayerNorm)
initialised as transformers initialises new BERT weights (normal, σ = 0.02; LayerNorm 1 and 0), the
decoder *tied* to the input word-piece embeddings (so it starts as "similarity of the output vector
to each piece's embedding") and a zero bias. Fine-tuning (:mod:`lib.training.tilde`) trains the head
with the encoder; :meth:`Tilde.train_only_top` limits it to the top layers for CPU budgets, or — with
no layer — to the head alone on a frozen encoder. A frozen encoder freezes the word-piece embeddings,
and a decoder tied to them could then learn only its bias: so the head-only setting first *unties*
the decoder (:meth:`Tilde.untie_decoder`: its own copy of the embeddings, trained, saved and loaded
separately), a stated deviation from BERT's tied head.

Choices the paper leaves open (named here, constructor arguments where an alternative is plausible):

- **Likelihood = sigmoid, not softmax.** ``P(t|text) = σ(z_t)``: an independent Bernoulli per
  vocabulary piece, the model that the binary cross-entropy of eq. 7 trains (a multi-label task,
  §3.3) and the one the authors' code scores with. Log-probabilities are natural logarithms
  (``log σ(z) = logsigmoid(z)``); the authors' code stores base-10 logarithms, which only rescales
  every score by the same factor (rankings, also of eq. 6, are unchanged).
- **Direction markers.** Position 0 holds a marker instead of ``[CLS]``, as in the authors' code:
  :data:`PASSAGE_MARKER_ID` = 1 (``[unused0]``, their ``[DOC]``) before a passage and
  :data:`QUERY_MARKER_ID` = 2 (``[unused1]``, their ``[QRY]``) before a query, so that one network
  knows which way it predicts. The input is ``marker pieces [SEP]``, one segment (token type 0).
  Passing ``passage_marker_id = query_marker_id = lib.representations.bert.CLS_ID`` gives the paper's text literally
  ("a language modelling head on top of the [CLS] token") without markers.
- **Input caps.** At most ``max_passage_length`` (200) and ``max_query_length`` (30) word pieces go
  into BERT, the book's caps for every model (:mod:`lib.representations.text`); the authors cut at BERT's 512. The
  *targets* and the scored terms are always the whole text (:mod:`lib.models.tilde_vocabulary`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn
from transformers import BertForMaskedLM

from lib.core.atomic import write_json
from lib.models.tilde_pooled_cache import PooledCache
from lib.representations.bert import SEP_ID, WordPieceTokenizer, load_bert, staged_folder
from lib.representations.text import DOC_MAX_LENGTH, QUERY_MAX_LENGTH

#: ``[unused0]`` of bert-base-uncased: marks a passage input (the authors' ``[DOC]``).
PASSAGE_MARKER_ID = 1
#: ``[unused1]`` of bert-base-uncased: marks a query input (the authors' ``[QRY]``).
QUERY_MARKER_ID = 2
#: The two input directions: a passage predicts query terms (QL), a query predicts passage terms (DL).
DIRECTIONS: tuple[str, ...] = ("passage", "query")
#: What the head reads: the output vector at position 0 (the paper), the mean over the input's tokens, or
#: that mean scaled to unit length (``unit-mean``: a sentence-transformers bi-encoder's own vector).
POOLINGS: tuple[str, ...] = ("first", "mean", "unit-mean")
#: The settings file that :meth:`Tilde.save` writes beside the BERT checkpoint.
SETTINGS_NAME = "tilde.json"


class Tilde(nn.Module):
    """TILDE's network: ``logits = MLM-head(BERT(marker text [SEP])[0])``, ``FloatTensor[B, vocab]``.

    Args:
        bert: a ``BertForMaskedLM``, or a folder / hub name for :func:`lib.representations.bert.load_bert` (LM head).
        passage_marker_id, query_marker_id: the ids put at position 0 (see the module doc).
        max_passage_length, max_query_length: word pieces of the text fed to BERT, markers excluded.
        sep_id: the ``[SEP]`` id closing every input.
    """

    def __init__(
        self,
        bert: BertForMaskedLM | str | os.PathLike,
        passage_marker_id: int = PASSAGE_MARKER_ID,
        query_marker_id: int = QUERY_MARKER_ID,
        max_passage_length: int = DOC_MAX_LENGTH,
        max_query_length: int = QUERY_MAX_LENGTH,
        sep_id: int = SEP_ID,
        pooling: str = "first",
    ) -> None:
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"parameter 'pooling' must be one of {list(POOLINGS)}, got {pooling!r}")
        if isinstance(bert, str | os.PathLike):
            bert = load_bert(bert, lm_head=True)
        if not isinstance(bert, BertForMaskedLM):
            raise TypeError(f"parameter 'bert' must be a BertForMaskedLM or a path, got {type(bert).__name__}")
        positions = int(bert.config.max_position_embeddings)
        for name, value in (("max_passage_length", max_passage_length), ("max_query_length", max_query_length)):
            if not 1 <= value <= positions - 2:
                raise ValueError(
                    f"parameter {name!r} must be in [1, {positions - 2}] (BERT's positions - 2), got {value}"
                )
        vocab = int(bert.config.vocab_size)
        for name, value in (("passage_marker_id", passage_marker_id), ("query_marker_id", query_marker_id)):
            if not 0 <= value < vocab:
                raise ValueError(f"parameter {name!r} must be a word-piece id below {vocab}, got {value}")
        self.bert = bert
        self.markers = {"passage": passage_marker_id, "query": query_marker_id}
        self.max_lengths = {"passage": max_passage_length, "query": max_query_length}
        self.sep_id = sep_id
        self.pooling = pooling
        self.pooled_cache: PooledCache | None = None
        self._fingerprint_state: tuple = ()
        self._fingerprint = ""

    @property
    def vocab_size(self) -> int:
        return int(self.bert.config.vocab_size)

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    @property
    def decoder_tied(self) -> bool:
        """Whether the head's decoder is the input word-piece embedding matrix itself (BERT's tied head)."""
        return self.bert.cls.predictions.decoder.weight is self.bert.bert.embeddings.word_embeddings.weight

    def untie_decoder(self) -> None:
        """Give the decoder its own copy of the word-piece embeddings (same values), saved and loaded as its own.

        The encoder's input embeddings then stay what they are while the decoder learns (module doc).
        """
        if not self.decoder_tied:
            return
        decoder = self.bert.cls.predictions.decoder
        decoder.weight = nn.Parameter(decoder.weight.detach().clone())
        self.bert.config.tie_word_embeddings = False

    def train_only_top(self, layers: int | None) -> list[nn.Parameter]:
        """Freeze all but the top ``layers`` Transformer layers and the head; the parameters left to train.

        ``None`` (or the model's depth) trains everything. When ``layers`` is smaller, the word-piece
        embeddings freeze with the lower layers, and with them a decoder tied to them: the head then
        learns its transform and bias. ``0`` freezes the whole encoder and unties the decoder
        (:meth:`untie_decoder`), which then trains with the transform and bias. Freezing saves the
        backward pass through the frozen layers.
        """
        depth = len(self.bert.bert.encoder.layer)
        if layers is not None and not 0 <= layers <= depth:
            raise ValueError(f"parameter 'layers' must be in [0, {depth}] or None, got {layers}")
        if layers == 0:
            self.untie_decoder()
        frozen = 0 if layers is None else depth - layers
        for parameter in self.parameters():
            parameter.requires_grad = frozen == 0
        for layer in self.bert.bert.encoder.layer[frozen:]:
            for parameter in layer.parameters():
                parameter.requires_grad = True
        for parameter in self.bert.cls.predictions.transform.parameters():
            parameter.requires_grad = True
        self.bert.cls.predictions.bias.requires_grad = True
        if not self.decoder_tied:
            self.bert.cls.predictions.decoder.weight.requires_grad = True
        return [parameter for parameter in self.parameters() if parameter.requires_grad]

    def settings(self) -> dict[str, int | str]:
        """The constructor arguments besides ``bert`` (what :meth:`save` records)."""
        return {
            "pooling": self.pooling,
            "passage_marker_id": self.markers["passage"],
            "query_marker_id": self.markers["query"],
            "max_passage_length": self.max_lengths["passage"],
            "max_query_length": self.max_lengths["query"],
            "sep_id": self.sep_id,
        }

    def rows(self, pieces: Sequence[Sequence[int]], direction: str) -> list[list[int]]:
        """The ids the encoder reads for each text: ``marker pieces[:cap] [SEP]``."""
        if direction not in DIRECTIONS:
            raise ValueError(f"parameter 'direction' must be one of {list(DIRECTIONS)}, got {direction!r}")
        marker, cap = self.markers[direction], self.max_lengths[direction]
        return [[marker, *list(ids)[:cap], self.sep_id] for ids in pieces]

    def inputs(self, pieces: Sequence[Sequence[int]], direction: str) -> tuple[torch.Tensor, torch.Tensor]:
        """``(input_ids, attention_mask)`` of :meth:`rows`, right-padded with 0."""
        return _padded(self.rows(pieces, direction))

    def pool(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """What the head reads (``pooling``): output 0, the mean, or the unit-length mean, ``[B, hidden]``."""
        hidden = self.bert.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        if self.pooling == "first":
            return hidden[:, 0]
        weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
        mean = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1)
        return nn.functional.normalize(mean, dim=-1) if self.pooling == "unit-mean" else mean

    def head(self, pooled: torch.Tensor) -> torch.Tensor:
        """The masked-LM head on pooled vectors: the vocabulary logits ``z``, ``FloatTensor[B, vocab]`` (fp32)."""
        return self.bert.cls(pooled).float()

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """The vocabulary logits ``z`` of the pooled output, ``FloatTensor[B, vocab]`` (fp32 also under autocast)."""
        return self.head(self.pool(input_ids, attention_mask))

    def logits(self, pieces: Sequence[Sequence[int]], direction: str) -> torch.Tensor:
        """:meth:`forward` on word-piece lists (moved to the model's device)."""
        input_ids, attention = self.inputs(pieces, direction)
        return self(input_ids.to(self.device), attention.to(self.device))

    def encoder_fingerprint(self) -> str:
        """A digest of the encoder's weights and pooling: what the vectors :meth:`pooled` gives depend on.

        Recomputed only when an encoder tensor was replaced or changed in place since the last call.
        """
        tensors = self.bert.bert.state_dict(keep_vars=True)
        state = tuple((name, id(tensor), tensor._version) for name, tensor in tensors.items())
        if self._fingerprint_state != state:
            hasher = hashlib.sha256(self.pooling.encode("utf-8"))
            for name, tensor in tensors.items():
                hasher.update(name.encode("utf-8"))
                hasher.update(tensor.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
            self._fingerprint_state, self._fingerprint = state, hasher.hexdigest()[:20]
        return self._fingerprint

    def use_pooled_cache(self, cache: PooledCache | None) -> Tilde:
        """Read and keep :meth:`pooled` vectors in ``cache`` (``None``: compute every time); returns ``self``."""
        self.pooled_cache = cache
        return self

    @torch.inference_mode()
    def pooled(self, pieces: Sequence[Sequence[int]], direction: str, batch_size: int = 64) -> torch.Tensor:
        """:meth:`pool` of texts in word pieces, in eval mode (the mode restored after): ``[len(pieces), hidden]``.

        Texts go through the encoder in batches of similar length; with a :meth:`use_pooled_cache`
        cache, only those it does not hold, which it then keeps. With a frozen encoder these vectors
        are all the head ever sees, so training computes them once.
        """
        if batch_size < 1:
            raise ValueError(f"parameter 'batch_size' must be at least 1, got {batch_size}")
        rows = self.rows(pieces, direction)
        out = torch.zeros((len(rows), int(self.bert.config.hidden_size)), device=self.device)
        missing = list(range(len(rows)))
        if self.pooled_cache is not None:
            fingerprint = self.encoder_fingerprint()
            found, missing = self.pooled_cache.get(fingerprint, rows)
            for position, vector in found.items():
                out[position] = vector.to(self.device)
        was_training = self.training
        self.eval()
        order = sorted(missing, key=lambda position: len(rows[position]))
        for start in range(0, len(order), batch_size):
            chosen = order[start : start + batch_size]
            input_ids, attention = _padded([rows[position] for position in chosen])
            out[chosen] = self.pool(input_ids.to(self.device), attention.to(self.device)).float()
        self.train(was_training)
        if self.pooled_cache is not None and missing:
            self.pooled_cache.put(fingerprint, [rows[position] for position in missing], out[missing])
        return out

    def log_probs(
        self, tokenizer: WordPieceTokenizer, texts: Sequence[str], direction: str, batch_size: int = 64
    ) -> torch.Tensor:
        """``log P(t|text) = log σ(z_t)`` for every piece ``t``: ``FloatTensor[len(texts), vocab]`` on the CPU.

        ``direction`` is ``"passage"`` (P(t|d), TILDE-QL's table) or ``"query"`` (P(t|q), TILDE-DL's).
        """
        if isinstance(texts, str):
            raise TypeError("parameter 'texts' must be a list of strings, not one string")
        return self.piece_log_probs(tokenizer.pieces(texts), direction, batch_size)

    @torch.inference_mode()
    def piece_log_probs(self, pieces: Sequence[Sequence[int]], direction: str, batch_size: int = 64) -> torch.Tensor:
        """:meth:`log_probs` of texts already cut into word pieces: the head on :meth:`pooled`, in eval mode."""
        if batch_size < 1:
            raise ValueError(f"parameter 'batch_size' must be at least 1, got {batch_size}")
        pooled = self.pooled(pieces, direction, batch_size)
        out = [
            nn.functional.logsigmoid(self.head(pooled[start : start + batch_size])).cpu()
            for start in range(0, len(pieces), batch_size)
        ]
        return torch.cat(out) if out else torch.zeros((0, self.vocab_size))

    def save(self, path: str | os.PathLike, tokenizer: WordPieceTokenizer | None = None) -> Path:
        """Write BERT (``save_pretrained``), :data:`SETTINGS_NAME` and the tokenizer into ``path``, atomically."""
        with staged_folder(path) as staging:
            self.bert.save_pretrained(staging)
            if tokenizer is not None:
                tokenizer.save_files(staging)
            write_json(staging / SETTINGS_NAME, self.settings())
        return Path(path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Tilde:
        """A model written by :meth:`save` (its markers and caps from :data:`SETTINGS_NAME`)."""
        path = Path(path)
        settings = path / SETTINGS_NAME
        if not settings.is_file():
            raise FileNotFoundError(f"{settings}: no such file, so {path} is not a saved TILDE model")
        return cls(load_bert(path, lm_head=True), **json.loads(settings.read_text(encoding="utf-8")))


def _padded(rows: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """``(input_ids, attention_mask)`` of id rows, right-padded with 0."""
    length = max((len(row) for row in rows), default=2)
    input_ids = torch.zeros((len(rows), length), dtype=torch.long)
    attention = torch.zeros((len(rows), length), dtype=torch.long)
    for index, row in enumerate(rows):
        input_ids[index, : len(row)] = torch.tensor(row, dtype=torch.long)
        attention[index, : len(row)] = 1
    return input_ids, attention


__all__ = ["DIRECTIONS", "PASSAGE_MARKER_ID", "POOLINGS", "QUERY_MARKER_ID", "SETTINGS_NAME", "Tilde"]
