"""The three profiles of the book and every per-profile default, in one table: :data:`PROFILES`.

``smoke`` (a slice of the real data, for CI), ``book`` (the shipped TREC DL subset on 2 CPU cores, the
default) and ``paper`` (full MS MARCO on a GPU). A chapter's papermill ``parameters`` cell names the
profile and may override a knob; ``None`` in a parameters cell means "the profile's default", which
the chapter reads from its section here: ``training`` (chapter 2), ``speed`` (chapter 3), ``clusters``
(chapter 4), ``tilde`` (chapter 6), ``trec`` (chapter 7), ``lecture`` (chapter 8), ``long`` (chapter 9).
:func:`with_overrides` applies a chapter's overrides to its section; :func:`lib.chapters.prologue.start_chapter`
calls it once (the chapter's ``settings``). ARCHITECTURE.md, "Chapters", says how a chapter uses them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lib.core.types import query_order


class _Replaceable:
    """``replace(**changes)``: a copy with fields changed; ``None`` keeps the default; unknown names are errors."""

    def replace(self, **changes: Any) -> Any:
        known = {item.name for item in dataclasses.fields(self)}
        unknown = set(changes) - known
        if unknown:
            raise ValueError(f"unknown {type(self).__name__} setting(s) {sorted(unknown)}; known: {sorted(known)}")
        return dataclasses.replace(self, **{key: value for key, value in changes.items() if value is not None})


#: ``TrainingSettings.teacher_scores`` naming the published teacher file (Hofstätter et al. 2020's T2 ensemble).
PUBLISHED_TEACHER = "published"

#: The teacher-scores file of the paper-shaped miniature (``python -m lib.experiments.miniature``).
MINIATURE_TEACHER = "minilm_msmarcopassage_train_scores_ids.tsv"


@dataclass(frozen=True)
class TrainingSettings(_Replaceable):
    """Chapter 2's knobs (representations, the distillation set, the TK-family and BERT-cat schedules, depths).

    ``embedding_method``: the word vectors of KNRM, Conv-KNRM and TK — ``"glove-6b-50d"`` (pre-trained,
    :func:`lib.representations.pretrained.glove_6b_50d`, the default), ``"glove-42b-300d"`` (the TK
    paper's, :func:`lib.representations.pretrained.glove_42b_300d`) or vectors trained on the book
    corpus (``"word2vec"``, ``"fasttext"``, ``embedding_epochs``). ``piece_vector_dim``: the width of
    the static word-piece vectors distilled from the starting BERT's outputs that the ``pieces`` models
    (KNRM, Conv-KNRM, TK on word pieces) start from (:mod:`lib.representations.piece_vectors`; model2vec's
    256); ``piece_embedding_lr``: the Adam rate of those vectors while the model trains (``None``: the word
    models' rate; the paper's 10⁻⁴ for pre-trained vectors keeps them near what the BERT taught them).
    ``ladder_models``: the registry models chapter 2 trains beyond Table 2's for its ladder of
    pre-training depth (:mod:`lib.chapters.pretraining_ladder`): the kernel models on pieces, TK on the
    starting BERT's first 1, 2, 3 and all layers, ColBERT. ``bert_cat_start``: the BERT that
    BERT-cat fine-tunes — ``"minilm"`` (all-MiniLM-L6-v2, the default), ``"small-bert"`` (the book's
    small BERT, pre-trained here by masked LM: the ``bert_*`` shape and schedule below, which chapter 6's
    TILDE always uses) or ``"bert-base-uncased"`` (``paper``); ``bert_cat_layers`` keeps its first N
    layers (``None``: all), ``bert_cat_lr`` replaces the fine-tuning rate of the BERT models (``None``:
    :data:`lib.models.bert_cat.BOOK_BERT_LR`), ``bert_lr_by_model`` replaces it for the registry models it names
    (a deeper pre-trained stack may want a lower rate than a shallow one), and ``bert_cat_warmup`` > 0 gives them
    a linear warm-up over that many steps and a linear decay (:func:`lib.training.pairwise.warmup_decay`);
    ``bert_cat_patience``: the BERT models' early-stopping patience in validations (``None``: ``patience``).
    ``distill_*``: the teacher-labelled set of :mod:`lib.experiments.distillation_set`
    (dev-small queries — ``None``: all — and pseudo-queries cut from book passages, their number and
    span of words; BM25 and teacher candidates per query — a teacher depth of 0 encodes only the
    BM25 candidates — triples per query, and the fraction of triples whose negative is a random
    corpus passage); ``distill_negatives`` above 1 trains the students on groups of a positive and that many
    negatives with the listwise KL (:func:`lib.training.distillation.listwise_kl`; ``batch_size`` then counts
    groups) instead of triples with Margin-MSE. ``distill_query_set``: the query set whose queries the teacher
    labels (``dev-small``; the ``paper`` profile's MS MARCO ``train`` queries). ``teacher_scores``: ``None`` (the
    book's MiniLM teacher labels the book's candidates, the ``distill_*`` settings above) or the paper's path, a
    teacher-scores file whose triples and margins the students learn instead (:data:`PUBLISHED_TEACHER`: the
    published BERT-cat ensemble's; otherwise a file name in the profile's data folder;
    :func:`lib.experiments.distillation_set.file_distillation_set`). ``validation_set``: the query set
    that validates (early stopping, the tuned re-ranking depth and interpolation weight): DL21's judged queries, or MS
    MARCO dev-small for the ``paper`` profile (as the TK paper and Hofstätter et al. 2020 validate);
    never a test year nor the training queries (:func:`lib.experiments.distillation_protocol.validation_set` refuses
    both). ``validation_metric``: the measure those three choices maximise on it — nDCG@10 for DL21's
    deep graded judgments (the measure Table 2 reports), MRR@10 for dev-small's one shallow judgment
    per query (the TK paper's, §4.3). ``word_learning_rate``: one Adam rate for every
    parameter of the word models instead of the paper's 10⁻⁴ / 10⁻³ (``None``: the paper's). The
    ``book`` defaults are sized for the chapter's budget on 2 CPU cores; the ``paper`` defaults are the
    paper's scale (GPU). ``bucket_batches``: training batches of similar passage lengths
    (:class:`lib.training.pairwise.TrainingConfig`; 1: a plain shuffle). ``compact_start``: where the compact TKs
    (``tk-bert6-d64``, ``tk-bert6-d32``) start — ``"minilm"`` (the registry's build) or ``"tk-bert6"`` (the build's
    trained TK-BERT-6 with its principal directions as the projection; :mod:`lib.experiments.compact_tk`).
    ``sparse_start``: where TK-BERT-6-Sparse (``tk-bert6-sparse``, TK-Sparse's gate on TK-BERT-6) starts — ``"minilm"``
    (the registry's build) or ``"tk-bert6"`` (the build's trained TK-BERT-6 with a fresh gate, which then learns only
    which terms to remove; :mod:`lib.experiments.compact_tk`).
    """

    embedding_method: str = "glove-6b-50d"
    embedding_epochs: int = 5
    piece_vector_dim: int = 256
    piece_embedding_lr: float | None = None
    ladder_models: tuple[str, ...] = (
        "knrm-pieces", "conv-knrm-pieces", "tk1-pieces", "tk2-pieces", "tk3-pieces",
        "tk-bert1", "tk-bert2", "tk-bert3", "tk-bert6", "colbert",
    )  # fmt: skip
    bert_cat_start: str = "minilm"
    compact_start: str = "minilm"
    sparse_start: str = "minilm"
    bert_cat_layers: int | None = None
    bert_cat_lr: float | None = None
    bert_lr_by_model: Mapping[str, float] = field(default_factory=dict)
    bert_cat_warmup: int = 0
    distill_queries: int | None = None
    distill_bm25_depth: int = 30
    distill_teacher_depth: int = 10
    distill_triples_per_query: int = 16
    distill_pseudo_queries: int = 0
    distill_pseudo_span: tuple[int, int] = (3, 8)
    distill_random_negatives: float = 0.0
    distill_negatives: int = 1
    distill_query_set: str = "dev-small"
    teacher_scores: str | None = None
    validation_set: str = "dl21"
    validation_metric: str = "nDCG@10"
    bert_layers: int = 2
    bert_hidden: int = 128
    bert_heads: int = 2
    bert_intermediate: int = 512
    bert_steps: int = 250
    bert_batch_size: int = 32
    bert_seq_len: int = 128
    batch_size: int = 16
    max_steps: int = 200
    validate_every: int = 40
    patience: int = 3
    word_learning_rate: float | None = None
    bert_cat_batch_size: int = 16
    bert_cat_max_steps: int = 200
    bert_cat_validate_every: int = 40
    bert_cat_patience: int | None = None
    validation_depth: int = 20
    candidate_depth: int = 100
    throughput_documents: int = 256
    bucket_batches: int = 8


@dataclass(frozen=True)
class SpeedSettings(_Replaceable):
    """Chapter 3's timing knobs (see :mod:`lib.evaluation.speed_benchmark`); ``batch_sizes`` per tokenizer family.

    ``architectures`` are the paper-size models the chapter times (BERT-Large takes minutes to build
    and time on 2 cores, so the smoke profile leaves it out; ``bert-cat-book``, the book's small BERT,
    can be added).

    The ``regime_*`` knobs time the book's trained models in the two regimes (:mod:`lib.evaluation.regimes`): the
    first ``regime_queries`` DL19 queries, ``regime_counts`` candidates each, ``regime_repetitions`` timed runs per
    query after an untimed warm-up, a count estimated instead when its timing would take more than
    ``regime_max_seconds``, and the stored indexes in each of ``regime_dtypes``, every model on one clock (the same
    repetition rule and precision, :mod:`lib.evaluation.clock`).
    """

    batch_sizes: Mapping[str, int] = field(default_factory=lambda: {"word": 256, "wordpiece": 32})
    probe_documents: int = 8
    min_documents: int = 8
    max_documents: int = 2048
    target_seconds: float = 2.0
    repetitions: int = 3
    warmup: int = 1
    latency_counts: tuple[int, ...] = (100, 1000)
    max_latency_seconds: float = 20.0
    #: Batches of similar passage lengths, each cut to its longest (as the book re-ranks); False: rank order.
    bucketed: bool = True
    #: The autocast dtypes every architecture is timed in (``float32``: none), by name.
    dtypes: tuple[str, ...] = ("float32",)
    #: ``torch.compile`` each model before timing it (eager where it fails).
    compile_model: bool = False
    #: Measure the matmul peak of each dtype and each row's FLOPs against it (:mod:`lib.evaluation.roofline`).
    roofline: bool = True
    architectures: tuple[str, ...] = (
        "knrm",
        "conv-knrm",
        "tk1",
        "tk2",
        "tk3",
        "bert-base",
        "bert-large",
    )
    regime_queries: int = 10
    regime_counts: tuple[int, ...] = (10, 100, 1000)
    regime_repetitions: int = 3
    #: Half a minute: TK on MiniLM's first layer run whole on 1,000 candidates (10 queries × 3.4 s) is estimated too.
    regime_max_seconds: float = 30.0
    regime_dtypes: tuple[str, ...] = ("float16", "int8")
    #: The TK whose stored vectors chapter 3 also product-quantises (a compact index without training,
    #: :mod:`lib.experiments.compact_tk`; "" none, and none when chapter 2 did not train it) into one-byte codes per
    #: stored vector: as many as the smallest of ``regime_pq_subspaces`` (each at most the TK's width, MiniLM's 384;
    #: one that does not divide it cuts subspaces of two widths, lib.reranking.product_quantisation) whose validation
    #: nDCG@10 is within ``regime_pq_tolerance`` of the unquantised index's (96 codes keep a passage of about 86
    #: stored pieces at about 8.3 kB, 80 at 6.9 kB, 64 at 5.5 kB, 32 at 2.8 kB, 16 at 1.4 kB; 80 does not divide 384:
    #: it is a step between 64 and 96, where a passage's bytes pass 8 kB). Its sparse twin
    #: (``<model>-sparse``, TK-Sparse's gate) is quantised the same way when chapter 2 trained it.
    regime_pq_model: str = "tk-bert6"
    regime_pq_subspaces: tuple[int, ...] = (16, 24, 32, 48, 64, 80, 96)
    regime_pq_tolerance: float = 0.005

    def __post_init__(self) -> None:
        for name in ("probe_documents", "min_documents", "max_documents", "repetitions", "regime_queries"):
            if getattr(self, name) < 1:
                raise ValueError(f"speed setting {name!r} must be >= 1, got {getattr(self, name)}")
        if not self.regime_pq_subspaces or min(self.regime_pq_subspaces) < 1 or not self.regime_pq_tolerance >= 0:
            raise ValueError(f"speed settings 'regime_pq_subspaces' must be positive numbers and 'regime_pq_tolerance' "
                             f">= 0, got {self.regime_pq_subspaces}, {self.regime_pq_tolerance}")  # fmt: skip
        if self.min_documents > self.max_documents:
            raise ValueError(f"speed settings: min_documents {self.min_documents} > max_documents {self.max_documents}")
        if self.target_seconds <= 0 or self.max_latency_seconds < 0:
            raise ValueError("speed settings 'target_seconds' must be > 0 and 'max_latency_seconds' >= 0")
        if any(size < 1 for size in self.batch_sizes.values()):
            raise ValueError(f"speed setting 'batch_sizes' must all be >= 1, got {dict(self.batch_sizes)}")


@dataclass(frozen=True)
class ClusterSettings(_Replaceable):
    """Chapter 4's knobs: how many dev-small queries to embed (``None``: all), the k to try, k-means restarts."""

    dev_queries: int | None = None
    ks: tuple[int, ...] = tuple(range(2, 41, 2))
    n_init: int = 3


@dataclass(frozen=True)
class TrecSettings(_Replaceable):
    """Chapter 7's knobs (the TU Wien TREC 2019 passage runs): the seeds of TUW19-p1's inits, TUW19-p2's vectors.

    ``inits``: one TK-2 is trained per seed (chapter 2's schedule and triples); p1 is the best on
    validation, p3 their ensemble. The first is chapter 2's default seed, 42: that init is chapter 2's
    own model, resumed from its checkpoint instead of trained again. ``p2_vectors``: the word vectors of
    TUW19-p2, trained on the book corpus, over a vocabulary of every word seen ``p2_min_count`` times
    (fastText gives each a vector).
    """

    inits: tuple[int, ...] = (42, 1, 2)
    p2_vectors: str = "fasttext"
    p2_min_count: int = 1

    def __post_init__(self) -> None:
        if not self.inits or len(set(self.inits)) != len(self.inits):
            raise ValueError(f"trec setting 'inits' must be distinct seeds, at least one, got {self.inits}")
        if self.p2_min_count < 1:
            raise ValueError(f"trec setting 'p2_min_count' must be >= 1, got {self.p2_min_count}")


@dataclass(frozen=True)
class LectureSettings(_Replaceable):
    """Chapter 8's knobs (the lecture's models side by side).

    ``models``: the registry models chapter 8 trains with chapter 2's protocol and schedule (PreTTR,
    ColBERT, TK-Sparse); ``latency_counts``: the candidates per query whose re-ranking is timed for PreTTR's table
    of splits; ``latency_queries``: how many test queries it times (the median is reported);
    ``latency_repetitions``: its timed runs per query (the comparison of slide 27 is timed with chapter 3's
    ``speed.regime_*`` settings, :mod:`lib.experiments.regime_costs`); ``stopword_passages``: the test passages whose
    terms TK-Sparse's gate is read on; ``prettr_min_saving``: the share of BERT-cat's per-candidate
    layers a PreTTR split must save to be fine-tuned (``k ≥ ⌈share · L⌉``; the split is chosen among
    those on validation, :func:`lib.evaluation.split_sweep.choose_split`); ``removal_targets``: the shares of
    passage terms TK-Sparse's gate is trained to remove in its sweep (slide 32;
    :data:`lib.models.tk_sparse.REMOVAL_TARGET`, the ``tk2-sparse`` of ``models``, among them or not), the one used
    chosen on validation. Mono-duo (slide 12,
    :mod:`lib.experiments.mono_duo`): the duo model re-ranks mono BERT-cat's top ``duo_top_k``, trained for at most
    ``duo_max_steps`` steps of ``duo_batch_size`` triples (both orders of each), validated every
    ``duo_validate_every`` steps, stopped after ``duo_patience`` validations without improvement — a budget: each
    step reads two passages per row, and each validation ``k (k − 1)`` pairs per validation query.
    ``stop_at`` (by registry name) and ``duo_stop_at``: the last step a model trains, its learning-rate schedule
    still the one of its whole run (``duo_max_steps`` for the duo; :attr:`lib.training.pairwise.TrainingConfig.stop_at`;
    none: the whole run) — a budget cut of chapter 8's trainings (the runs of the removal sweep and the stopword
    baseline stop where ``tk2-sparse`` does).
    """

    models: tuple[str, ...] = ("prettr", "colbert", "tk2-sparse")
    removal_targets: tuple[float, ...] = (0.1, 0.3, 0.5)
    latency_counts: tuple[int, ...] = (100, 1000)
    latency_queries: int = 3
    latency_repetitions: int = 3
    stopword_passages: int = 3000
    prettr_min_saving: float = 0.5
    duo_top_k: int = 10
    duo_batch_size: int = 4
    duo_max_steps: int = 60
    duo_validate_every: int = 20
    duo_patience: int = 2
    stop_at: Mapping[str, int] = field(default_factory=dict)
    duo_stop_at: int | None = None

    def __post_init__(self) -> None:
        for name, step in self.stop_at.items():
            if name not in self.models or not isinstance(step, int) or step < 1:
                raise ValueError(
                    f"lecture setting 'stop_at' must map models of 'models' {self.models} to steps >= 1, "
                    f"got {name!r}: {step!r}"
                )
        if self.duo_stop_at is not None and not 1 <= self.duo_stop_at <= self.duo_max_steps:
            raise ValueError(
                f"lecture setting 'duo_stop_at' must be in [1, duo_max_steps = {self.duo_max_steps}], "
                f"got {self.duo_stop_at}"
            )
        for name in ("duo_batch_size", "duo_max_steps", "duo_validate_every", "duo_patience"):
            if getattr(self, name) < 1:
                raise ValueError(f"lecture setting {name!r} must be >= 1, got {getattr(self, name)}")
        if self.duo_top_k < 2:
            raise ValueError(
                f"lecture setting 'duo_top_k' must be >= 2 (the duo model compares pairs), got {self.duo_top_k}"
            )
        if not self.latency_counts or min(self.latency_counts) < 1:
            raise ValueError(f"lecture setting 'latency_counts' must be positive counts, got {self.latency_counts}")
        for name in ("latency_queries", "latency_repetitions", "stopword_passages"):
            if getattr(self, name) < 1:
                raise ValueError(f"lecture setting {name!r} must be >= 1, got {getattr(self, name)}")
        if not 0 <= self.prettr_min_saving < 1:
            raise ValueError(f"lecture setting 'prettr_min_saving' must be in [0, 1), got {self.prettr_min_saving}")
        if not self.removal_targets or not all(0 < target < 0.99 for target in self.removal_targets):
            raise ValueError(f"lecture setting 'removal_targets' must be in (0, 0.99), got {self.removal_targets}")


@dataclass(frozen=True)
class LongSettings(_Replaceable):
    """Chapter 9's knobs (long documents; lecture 8, slides 13 and 34–40).

    TIME (:mod:`lib.data.time_collection`, evaluation only): every model re-ranks BM25's top ``time_depth``
    documents of each query, each read up to its first ``time_max_pieces`` word pieces (or words, for the word
    models; the authors of TKL and IDCM read 2,000). An assembled document is read up to its first ``max_pieces``.
    BERT-cat on documents: FirstP reads the first ``first_pieces`` word pieces, MaxP windows of ``window`` pieces
    every ``stride`` (:mod:`lib.models.long_bert`). Assembled documents (:mod:`lib.data.assembled_documents`):
    ``relevant_per_query`` relevant and ``others_per_query`` non-relevant documents per query, each holding
    ``own_per_document`` of the query's own non-relevant passages (the same for both kinds). The position sweep
    moves one relevant passage through one document of ``2 · max_pieces`` pieces, to each of ``sweep_offsets`` (word
    pieces) and to the end, beyond what any model reads. ``timed_documents``: how many of DL19's assembled documents
    each model's speed is measured on. Training (TKL; IDCM's student): the documents assembled around the teacher's
    best passage of the first ``train_queries`` teacher-labelled queries (chapter 2's), ``train_steps`` steps of
    ``train_batch`` (TKL: pairs; the student: documents), validated every ``validate_every`` steps on DL21's assembled
    documents, stopped after ``patience`` validations without improvement. ``idcm_ks``: the windows per document
    BERT-cat scores in IDCM's cascade, swept (slide 40). The cost per query in both regimes
    (:mod:`lib.evaluation.regimes`, chapter 3's clock): the first ``regime_queries`` TIME queries re-ranking
    ``regime_counts`` of their BM25 documents, ``regime_repetitions`` timed runs each. The defaults are the ``book``
    profile's, set by a budget (chapter 9 ≤ 35 minutes on 2 cores): a first book run with BM25's top 50 on TIME and
    documents read to 2,048 pieces spent 23 minutes on FirstP alone and did not finish MaxP within 30 more (2 cores,
    shared with a test run); with the top 20 and 1,024 pieces, the timings of the chapter's parts added up to an
    estimated 47 minutes (TKL's 150 steps 7 of them, IDCM's student 6, its cascade 8), so MaxP's windows no longer
    overlap (``stride`` = ``window``: Dai and Callan's stride is half a window) and both trainings stop at 100 steps
    (the best validation of IDCM's student came at step 50 in that run, TKL's at 150 by 0.007).
    """

    time_depth: int = 20
    time_max_pieces: int = 2048
    max_pieces: int = 1024
    first_pieces: int = 512
    window: int = 150
    stride: int = 150
    relevant_per_query: int = 2
    others_per_query: int = 8
    own_per_document: int = 2
    sweep_offsets: tuple[int, ...] = (0, 128, 256, 384, 512, 768)
    timed_documents: int = 64
    train_queries: int = 400
    train_steps: int = 100
    train_batch: int = 8
    validate_every: int = 50
    patience: int = 2
    idcm_ks: tuple[int, ...] = (1, 2, 4)
    regime_queries: int = 5
    regime_counts: tuple[int, ...] = (5, 10)
    regime_repetitions: int = 1

    def __post_init__(self) -> None:
        if not self.idcm_ks or min(self.idcm_ks) < 1:
            raise ValueError(f"long-document setting 'idcm_ks' must be positive window counts, got {self.idcm_ks}")
        if len(self.regime_counts) < 2 or min(self.regime_counts) < 1:
            raise ValueError(f"long-document setting 'regime_counts' needs two or more positive document counts, got "
                             f"{self.regime_counts}")  # fmt: skip
        if not self.sweep_offsets or min(self.sweep_offsets) < 0 or max(self.sweep_offsets) >= self.max_pieces:
            raise ValueError(f"long-document setting 'sweep_offsets' must lie in [0, max_pieces = {self.max_pieces}), "
                             f"got {self.sweep_offsets}")  # fmt: skip
        if self.own_per_document < 0:
            raise ValueError(f"long-document setting 'own_per_document' must be >= 0, got {self.own_per_document}")
        names = ("time_depth", "time_max_pieces", "max_pieces", "first_pieces", "window", "stride",
                 "relevant_per_query", "others_per_query", "timed_documents", "train_queries", "train_steps",
                 "train_batch", "validate_every", "patience", "regime_queries", "regime_repetitions")  # fmt: skip
        for name in names:
            if getattr(self, name) < 1:
                raise ValueError(f"long-document setting {name!r} must be >= 1, got {getattr(self, name)}")
        if self.stride > self.window:
            raise ValueError(f"long-document setting 'stride' ({self.stride}) must not exceed 'window' ({self.window})")


@dataclass(frozen=True)
class TildeSettings(_Replaceable):
    """Chapter 6's knobs: TILDE's and TILDEv2's fine-tuning schedules and the latency repetitions.

    TILDE: ``steps`` of ``batch_size`` examples, Adam at ``lr`` for the encoder and ``head_lr`` for the
    new masked-LM head (``None``: ``lr``), ``trainable_layers`` the encoder's top layers fine-tuned
    (``None``: all; ``0``: the head alone on a frozen encoder), ``reconstruction`` passages that also
    learn to predict their own pieces (:func:`lib.training.tilde.with_reconstruction`), a checkpoint
    every ``checkpoint_every`` steps (a head-only step is cheap, its checkpoint is not). The paper's
    rate for bert-base-uncased is 2e-5 on everything, batch 128, 10 epochs of MS MARCO's 533k pairs
    (about 42k steps; the ``paper`` profile). On two CPU cores the book trains MiniLM's head alone,
    with many cheap steps (sweep on DL21's validation queries; chapter 6 names it).
    TILDEv2: ``v2_steps`` of ``v2_batch_size`` groups of ``v2_group_size`` passages, Adam at ``v2_lr``,
    the encoder's top ``v2_trainable_layers`` layers fine-tuned. ``variants``: the ablation's TILDE
    models (:data:`lib.training.tilde_variants.VARIANTS`), the paper's Table 3 rows by default.
    ``train_set``: where the judged training pairs come from — ``None``: the judged years of the test
    fold that are not test years (DL21, :func:`lib.training.tilde.fold_training_data`); ``"train"`` (the
    ``paper`` profile): MS MARCO's training queries and judgments, validated on ``training.validation_set``
    (:func:`lib.training.tilde.msmarco_training_data`).
    """

    train_set: str | None = None
    steps: int = 300
    batch_size: int = 16
    lr: float = 1e-4
    head_lr: float | None = 1e-3
    trainable_layers: int | None = 2
    reconstruction: int = 0
    checkpoint_every: int = 50
    v2_steps: int = 300
    v2_batch_size: int = 4
    v2_group_size: int = 8
    v2_lr: float = 1e-4
    v2_trainable_layers: int | None = 2
    variants: tuple[str, ...] = ("biqdl", "ql", "dl", "ql-full")
    latency_repetitions: int = 5


@dataclass(frozen=True)
class Profile:
    """One profile: its name, query slice, description, and every chapter's defaults.

    Attributes:
        name: ``smoke``, ``book``, ``paper`` or ``paper-mini``.
        query_limit: evaluate and train on at most this many queries per query set (``None``: all).
            The smoke profile takes the first queries of each set in query order, so that every
            chapter runs in CI within minutes on a slice of the real data.
        description: one line for tables and logs.
        data_folder: the folder under the data folder (:func:`lib.core.paths.converted_dir`) whose standard
            MS MARCO / TREC files the profile's chapters read: ``converted`` (the book subset, ``make data``)
            or ``msmarco`` (full MS MARCO, ``python -m lib.data.msmarco``).
        paper_path: the profile takes the ``paper`` profile's code path: bert-base-uncased's folder where
            :attr:`TrainingSettings.bert_cat_start` names it, and no small BERT pre-trained in the book
            (chapter 6's TILDE starts from the paper's BERT).
        substitutions: what the profile puts in place of a ``paper`` part that cannot be had here, one line
            each; every chapter prints them (:func:`lib.chapters.prologue.start_chapter`), so none is silent.
        training, speed, clusters, tilde, trec, lecture, long: the per-chapter sections (see the module doc).
    """

    name: str
    query_limit: int | None
    description: str
    data_folder: str = "converted"
    paper_path: bool = False
    substitutions: tuple[str, ...] = ()
    training: TrainingSettings = TrainingSettings()
    speed: SpeedSettings = SpeedSettings()
    clusters: ClusterSettings = ClusterSettings()
    tilde: TildeSettings = TildeSettings()
    trec: TrecSettings = TrecSettings()
    lecture: LectureSettings = LectureSettings()
    long: LongSettings = LongSettings()


PROFILES: dict[str, Profile] = {
    "smoke": Profile(
        "smoke",
        8,
        "a slice of the real book data, for CI and tests",
        training=TrainingSettings(
            embedding_epochs=1, bert_layers=2, bert_hidden=64, bert_heads=2, bert_intermediate=256, bert_steps=20,
            bert_batch_size=16, batch_size=8, max_steps=6, validate_every=3, patience=2, word_learning_rate=1e-3,
            bert_cat_batch_size=4, bert_cat_max_steps=6, bert_cat_validate_every=3, bert_cat_layers=1,
            validation_depth=20, candidate_depth=30, throughput_documents=64, distill_teacher_depth=0,
            distill_triples_per_query=4, distill_pseudo_queries=8, distill_random_negatives=0.5,
            piece_vector_dim=64, ladder_models=("tk1-pieces", "tk-bert1", "tk-bert1-sparse"),
        ),
        speed=SpeedSettings(
            probe_documents=2, min_documents=2, max_documents=32, target_seconds=0.2, repetitions=1,
            latency_counts=(100, 1000), max_latency_seconds=2.0,
            architectures=("knrm", "conv-knrm", "tk1", "tk2", "tk3", "bert-base"),
            regime_queries=2, regime_counts=(10, 100), regime_repetitions=1, regime_max_seconds=5.0,
            regime_pq_model="tk-bert1", regime_pq_subspaces=(16, 64),
        ),
        clusters=ClusterSettings(dev_queries=1000, ks=tuple(range(2, 21, 2)), n_init=1),
        tilde=TildeSettings(
            steps=4, batch_size=4, lr=1e-2, head_lr=None, trainable_layers=0, reconstruction=8,
            v2_steps=2, v2_batch_size=2, v2_group_size=4, latency_repetitions=2,
        ),
        trec=TrecSettings(inits=(42, 1)),
        lecture=LectureSettings(
            latency_counts=(10, 100), latency_queries=1, latency_repetitions=1, stopword_passages=200,
            removal_targets=(0.1, 0.5), duo_top_k=3, duo_batch_size=2, duo_max_steps=2, duo_validate_every=1,
        ),
        long=LongSettings(
            time_depth=10, time_max_pieces=1024, relevant_per_query=1, others_per_query=3, sweep_offsets=(0, 512),
            timed_documents=8,
            train_queries=8, train_steps=4, train_batch=2, validate_every=2, idcm_ks=(1, 2), regime_queries=2,
            regime_counts=(2, 4),
        ),
    ),
    "book": Profile(
        "book",
        None,
        "the full shipped TREC DL subset (the default)",
        # Every setting below that differs from its section's default was decided on DL21 validation alone, on a
        # budget or on a measured cost; lib.core.decisions records each one with the values it was compared with
        # (the "Build times and decisions" page's table; tests/core/test_decisions.py keeps the record complete).
        # Word models: 1,000 steps of 32 triples at one Adam rate for every parameter; BERT-cat (and every MiniLM
        # model) all 6 layers at 1e-4 with a 30-step warm-up and a linear decay to step 500, patience 2, TK-BERT-6
        # and its compact d=64 / d=32 / sparse variants at 3e-5; half of the negatives random book passages; dev-small
        # questions and 7,000 pseudo-queries; 64-d piece vectors; the ladder's rungs that fit chapter 2's budget on
        # 2 CPU cores.
        training=TrainingSettings(
            batch_size=32, max_steps=1000, validate_every=200, patience=4, word_learning_rate=1e-3,
            bert_cat_lr=1e-4,
            bert_lr_by_model={"tk-bert6": 3e-5, "tk-bert6-d64": 3e-5, "tk-bert6-d32": 3e-5, "tk-bert6-sparse": 3e-5},
            bert_cat_warmup=30, bert_cat_max_steps=500,
            bert_cat_patience=2, sparse_start="tk-bert6",
            distill_pseudo_queries=7000, distill_random_negatives=0.5, piece_vector_dim=64,
            ladder_models=(
                "knrm-pieces", "conv-knrm-pieces", "tk2-pieces", "tk-bert1", "tk-bert6", "tk-bert6-d64", "tk-bert6-d32",
                "tk-bert6-sparse",
            ),
        ),
        speed=SpeedSettings(target_seconds=2.0, repetitions=3, max_latency_seconds=15.0),
        # TILDE: the head alone on frozen MiniLM, untied, with passages predicting their own pieces, 1,500 steps at
        # 1e-2; TILDEv2 200 steps on its top 2 layers; the ablation keeps BiQDL and L_QL (lib.core.decisions).
        tilde=TildeSettings(
            steps=1500, batch_size=128, lr=1e-2, head_lr=None, trainable_layers=0, reconstruction=10_000,
            checkpoint_every=500, v2_steps=200, variants=("biqdl", "ql"),
        ),
        # Chapter 8's PreTTR split latencies: one timed run per query (a measured cost); its MiniLM models (ColBERT,
        # PreTTR, the duo) train 40 steps of their schedules, validated once (a budget; lib.core.decisions), the
        # TK-Sparse runs TK-2's whole 1,000 (their gates start removing after 800); TK-Sparse's sweep spans five λ
        # over two decades (validation probe).
        lecture=LectureSettings(
            latency_repetitions=1, stop_at={"colbert": 40, "prettr": 40}, duo_validate_every=40,
            duo_stop_at=40, removal_targets=(0.1, 0.2, 0.3, 0.4, 0.5, 0.6),
        ),
    ),
    "paper": Profile(
        "paper",
        None,
        "full MS MARCO passage, GloVe and bert-base-uncased (GPU + internet)",
        data_folder="msmarco",
        paper_path=True,
        # The exported official top-1000 runs carry no BM25 order (lib.data.msmarco): chapter 1 retrieves a
        # scored BM25 top-1000 (candidate_depth) in their place (lib.experiments.first_stage_runs), so
        # validation_depth and the tuned depth cut a ranking; the tests re-rank all 1,000, the paper's setting.
        training=TrainingSettings(
            embedding_method="glove-42b-300d", bert_cat_start="bert-base-uncased", bert_steps=0, batch_size=64,
            max_steps=100_000, validate_every=4_000,
            patience=5, bert_cat_batch_size=32, bert_cat_max_steps=100_000, bert_cat_validate_every=4_000,
            validation_depth=100, candidate_depth=1000, distill_query_set="train", teacher_scores=PUBLISHED_TEACHER,
            validation_set="dev-small", validation_metric="MRR@10",
        ),
        speed=SpeedSettings(max_documents=4096, target_seconds=2.0, repetitions=5, max_latency_seconds=60.0),
        clusters=ClusterSettings(ks=tuple(range(2, 61, 2)), n_init=10),
        tilde=TildeSettings(
            train_set="train", steps=42_000, batch_size=128, lr=2e-5, head_lr=None, trainable_layers=None,
            v2_steps=50_000, v2_lr=2e-5, v2_trainable_layers=None,
        ),
        trec=TrecSettings(inits=(1, 2, 3, 4, 5)),
    ),
}  # fmt: skip

#: ``paper-mini``'s named substitutions for ``paper`` parts that cannot be had here (:attr:`Profile.substitutions`).
PAPER_MINI_SUBSTITUTIONS: tuple[str, ...] = (
    "all-MiniLM-L6-v2 (its first layer for BERT-cat) stands in for bert-base-uncased, which cannot be downloaded here",
    "GloVe 6B-50d (a pinned package) stands in for GloVe 42B-300d, which cannot be downloaded here",
    "the zero-shot MiniLM bi-encoder's scores of the miniature's triples stand in for the published BERT-cat "
    "ensemble's scores of MS MARCO's (the same file format)",
)


def paper_miniature(paper: Profile) -> Profile:
    """``paper-mini``: the ``paper`` profile's code path on the paper-shaped miniature, with schedules of seconds.

    Everything ``paper`` reads and decides stays (the MS MARCO export's layout and formats, ``train`` queries
    labelled by the teacher-scores file, dev-small validation by MRR@10, TILDE on MS MARCO's training
    judgments, every ``paper`` branch); what changes is the data folder (``msmarco-mini``, written by
    ``python -m lib.experiments.miniature``), the first 8 queries of each set, the schedules and sizes (the
    ``smoke`` profile's; TILDE's too, on ``paper``'s MS MARCO training judgments; one rung of the ladder beyond
    Table 2's models), and :data:`PAPER_MINI_SUBSTITUTIONS`, printed by every chapter.
    """
    smoke = PROFILES["smoke"]
    return dataclasses.replace(
        paper,
        name="paper-mini",
        query_limit=smoke.query_limit,
        description="the paper's code path on a paper-shaped miniature of MS MARCO, for CI",
        data_folder="msmarco-mini",
        substitutions=PAPER_MINI_SUBSTITUTIONS,
        training=paper.training.replace(
            embedding_method="glove-6b-50d", teacher_scores=MINIATURE_TEACHER, bert_cat_start="minilm",
            bert_cat_layers=1, batch_size=8, max_steps=6,
            validate_every=3, patience=2, bert_cat_batch_size=4, bert_cat_max_steps=6, bert_cat_validate_every=3,
            validation_depth=20, candidate_depth=30, throughput_documents=64, piece_vector_dim=64,
            ladder_models=("tk-bert1",),
        ),
        speed=smoke.speed,
        clusters=smoke.clusters,
        tilde=smoke.tilde.replace(train_set=paper.tilde.train_set),
        trec=paper.trec.replace(inits=(1, 2)),
        lecture=smoke.lecture,
        long=smoke.long,
    )  # fmt: skip


PROFILES["paper-mini"] = paper_miniature(PROFILES["paper"])


#: The sections of a :class:`Profile` a chapter may take as its own settings.
SECTIONS: tuple[str, ...] = ("training", "speed", "clusters", "tilde", "trec", "lecture", "long")


def get_profile(name: str) -> Profile:
    """Return the profile called ``name``; an unknown name is a ``ValueError`` naming the parameter."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"parameter 'profile' is {name!r}; expected one of {sorted(PROFILES)}") from None


def with_overrides(profile: Profile, section: str, overrides: Mapping[str, Any]) -> Profile:
    """``profile`` with the parameters cell's ``overrides`` applied to its section ``section`` (:data:`SECTIONS`).

    ``None`` keeps the profile's value; a list becomes a tuple (papermill passes lists). An unknown section, or an
    override that is not a field of the section, is a ``ValueError`` naming the parameter.
    """
    if section not in SECTIONS:
        raise ValueError(f"parameter 'section' is {section!r}; expected one of {SECTIONS}")
    settings = getattr(profile, section)
    known = {item.name for item in dataclasses.fields(settings)}
    for name in overrides:
        if name not in known:
            raise ValueError(f"parameter {name!r} is not a setting of the profile's section {section!r}")
    changes = {name: tuple(value) if isinstance(value, list) else value for name, value in overrides.items()}
    return dataclasses.replace(profile, **{section: settings.replace(**changes)})


def limit_queries(qids: list[str], profile: Profile) -> list[str]:
    """The profile's slice of a query set: all ids, or the first ``query_limit`` in query order."""
    ordered = sorted(qids, key=query_order)
    return ordered if profile.query_limit is None else ordered[: profile.query_limit]
