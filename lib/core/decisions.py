"""Why each setting of the ``book`` and ``paper`` profiles is what it is: one structured record, :data:`DECISIONS`.

Every setting of a profile section (:mod:`lib.core.profiles`) that differs from its default has an entry here: the
value adopted, the alternatives tried and what each measured, the kind of evidence, and the date. The kinds
(:data:`EVIDENCE`):

- ``validation`` — chosen by comparing runs on the profile's validation set (DL21's judged queries for ``book``,
  MS MARCO dev-small for ``paper``): the only effectiveness evidence a setting may rest on. A test year (DL19,
  DL20) is never evidence, not even for a rejected alternative; ``tests/core/test_decisions.py`` fails on an entry
  that names one;
- ``paper`` — the paper's stated setting (the section is named);
- ``budget`` — sized to fit the profile's time budget, not tuned on any effectiveness;
- ``cost`` — chosen on a measured cost (time), no effectiveness involved.

The "Build times and decisions" page shows :func:`decisions_table`, which :func:`lib.book.build.stage` writes for the
book.
Validation values are nDCG@10 on DL21 unless an entry's ``measure`` says otherwise ("at the top 20": the model
re-ranks BM25's top 20, the validation depth; "all 100": all of BM25's top 100).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: The kinds of evidence an entry may rest on (module doc).
EVIDENCE: tuple[str, ...] = ("validation", "paper", "budget", "cost")

#: The profiles whose settings the record covers (``smoke`` and ``paper-mini`` are CI sizes, not decisions).
AUDITED_PROFILES: tuple[str, ...] = ("book", "paper")


#: A mention of a test year (DL19, DL20, TREC DL 2019 / 2020, "test year"): never evidence for a setting.
_TEST_YEAR = re.compile(
    r"\b(?:trec[ -]?)?dl[ -]?(?:19|20|2019|2020)\b|\btrec[ -]2019\b|\btrec[ -]2020\b|test[ -]years?\b", re.I
)


def names_a_test_year(text: str) -> bool:
    """Whether ``text`` mentions a test year (DL19, DL20, TREC DL 2019 / 2020, "test year")."""
    return _TEST_YEAR.search(text) is not None


@dataclass(frozen=True)
class Decision:
    """One adopted setting and its evidence.

    Attributes:
        profile: ``book`` or ``paper``.
        section: the profile section (``training``, ``speed``, ``clusters``, ``tilde``, ``trec``, ``lecture``).
        setting: the field of the section.
        value: the adopted value, exactly as the profile holds it (a test compares them).
        evidence: one of :data:`EVIDENCE`.
        measure: what decided it: the validation measure and its set, the paper's section, or the budget.
        results: ``(setting tried, what it measured)`` pairs, the adopted one first.
        date: when the evidence was measured (ISO date).
        note: anything a reader needs besides (a tie broken by cost, a run that was not repeated).
    """

    profile: str
    section: str
    setting: str
    value: Any
    evidence: str
    measure: str
    results: tuple[tuple[str, str], ...] = ()
    date: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        if self.evidence not in EVIDENCE:
            raise ValueError(f"decision {self.setting!r}: evidence {self.evidence!r} is not one of {EVIDENCE}")
        if self.evidence == "validation" and not self.results:
            raise ValueError(f"decision {self.setting!r}: a validation decision lists the values it compared")

    def text(self) -> str:
        """Every word the entry says (what the test-year check reads)."""
        return " ".join([self.measure, self.note, *(" ".join(pair) for pair in self.results)])


_DL21 = "DL21 validation nDCG@10"
_TOP20 = f"{_DL21} at the top 20"

BOOK: tuple[Decision, ...] = (
    Decision(
        "book", "training", "word_learning_rate", 1e-3, "validation",
        f"{_TOP20}: each word model's best validation (1,000 steps of 32 triples, chapter 2's protocol, seed 42); "
        "the rate with the higher mean over KNRM, Conv-KNRM, TK-1, TK-2 and TK-3",
        (
            (
                "1e-3 for every parameter",
                "mean 0.4244: KNRM 0.3688, Conv-KNRM 0.4188, TK-1 0.4417, TK-2 0.4453, TK-3 0.4474",
            ),
            (
                "the paper's groups (1e-4 embeddings and contextualisation, 1e-3 the rest)",
                "mean 0.4219: KNRM 0.3718, Conv-KNRM 0.4265, TK-1 0.4354, TK-2 0.4372, TK-3 0.4388",
            ),
            (
                "the same two on the piece models (the setting is theirs too), 1e-3 / the groups",
                "KNRM 0.4356 / 0.4325, Conv-KNRM 0.4538 / 0.4475, TK-2 0.4883 / 0.4802 (means 0.4592 / 0.4534)",
            ),
        ),
        "2026-11-27",
        "Re-taken on validation alone (python -m lib.experiments.setting_probe --setting word_learning_rate --values "
        "1e-3 none --models knrm conv-knrm tk1 tk2 tk3); first adopted on an earlier probe whose evidence was not "
        "validation. A near tie on words (0.0025 apart): every TK validates higher at 1e-3, KNRM and Conv-KNRM at the "
        "groups; on pieces all three models validate higher at 1e-3.",
    ),
    Decision(
        "book", "training", "batch_size", 32, "budget",
        "the word models' batch on 2 CPU cores (the paper's 64 halves the steps the budget allows)",
        date="2026-11-23",
    ),
    Decision(
        "book", "training", "max_steps", 1000, "validation",
        f"{_TOP20}, the validation curve of a 2,000-step run",
        (
            ("1,000 steps", "TK-2 peaked by step 1,000, TK-3 earlier"),
            ("2,000 steps", "only TK-1 gained after step 1,000"),
        ),
        "2026-11-23",
    ),
    Decision(
        "book", "training", "validate_every", 200, "budget",
        "five validations in the word models' 1,000 steps (each re-ranks DL21's top 20)",
        date="2026-11-23",
    ),
    Decision(
        "book", "training", "patience", 4, "budget",
        "the word models stop after four validations without a new best: at most the whole 1,000-step schedule",
        date="2026-11-22",
    ),
    Decision(
        "book", "training", "bert_cat_lr", 1e-4, "validation",
        f"{_DL21} re-ranking all 100 (at the top 20 in brackets); BM25 0.446, the teacher 0.577",
        (
            ("all 6 MiniLM layers, 1e-4, 30-step warm-up and linear decay", "0.470 (0.487)"),
            ("all 6 layers, constant 3e-5", "0.454 (0.477)"),
            ("the first 3 layers, constant 3e-5", "0.351 (0.437)"),
            ("all 6 layers, 3e-5 with the schedule", "best 0.497 at step 220 (top 20), below 1e-4's 0.521"),
        ),
        "2026-11-24",
    ),
    Decision(
        "book", "training", "bert_cat_warmup", 30, "validation",
        f"{_DL21} re-ranking all 100: the schedule came with the rate (bert_cat_lr's entry)",
        (("1e-4 with a 30-step warm-up and decay", "0.470"), ("constant 3e-5", "0.454")),
        "2026-11-24",
    ),
    Decision(
        "book", "training", "bert_cat_max_steps", 500, "validation",
        f"{_TOP20}: best validation of BERT-cat under each schedule",
        (("500 steps", "0.517 at step 240"), ("300 steps", "0.513 at step 240")),
        "2026-11-25",
    ),
    Decision(
        "book", "training", "bert_cat_patience", 2, "validation",
        f"{_TOP20}: the best step each patience keeps (the chapter-2 build's validation curves)",
        (
            ("patience 2", "the same best steps as 4: BERT-cat 240, TK-BERT-1 200"),
            ("patience 4", "four validations past each peak (BERT-cat about 10 minutes more)"),
            ("patience 1", "BERT-cat stops early: 0.491 instead of 0.521"),
        ),
        "2026-11-26",
    ),
    Decision(
        "book", "training", "bert_lr_by_model",
        {"tk-bert6": 3e-5, "tk-bert6-d64": 3e-5, "tk-bert6-d32": 3e-5, "tk-bert6-sparse": 3e-5},
        "validation",
        f"{_TOP20}: TK-BERT-6's best validation at each rate (BERT-cat's schedule)",
        (
            ("3e-5", "0.524 / 0.527 / 0.538 at steps 40 / 60 / 80, then 0.538 / 0.532; book build 0.544 at step 80"),
            ("1e-4 (BERT-cat's rate)", "peaked at step 40: 0.505, then 0.500, 0.498"),
            ("3e-5 for TK-BERT-1, TK-BERT-2", "below their 1e-4 runs (0.437 at step 40; 0.453 at step 220)"),
        ),
        "2026-11-26",
        "The compact TK-BERT-6 (a projection to d = 64 / 32 before the kernels) and TK-BERT-6 with TK-Sparse's gate "
        "take TK-BERT-6's validated rate without a probe of their own (budget: a probe is two MiniLM fine-tunings per "
        "rate).",
    ),
    Decision(
        "book", "training", "sparse_start", "tk-bert6", "validation",
        f"{_TOP20}: TK-BERT-6-Sparse's best eligible validation (a 30 % target after a 120-step ramp; the share "
        "removed on the validation passages in brackets; TK-BERT-6 itself 0.544 at step 80)",
        (
            (
                "chapter 2's trained TK-BERT-6 with a new gate (TKBertSparse.from_trained; chapter 2's own run)",
                "0.527 / 0.528 during the ramp (27 % / 20 % removed, steps 40 / 80); 0.535 at step 120 (20 %), its "
                "best, then 0.513 (36 %), 0.510 (35 %); stopped at 200. An earlier probe of the same start, before "
                "chapter 2 took the setting: 0.509 at step 120 (31 %), its best",
            ),
            (
                "MiniLM (the registry's build)",
                "0.492 / 0.510 during the ramp (13 % / 16 %); 0.503 at step 120 (26 %), 0.504 at step 160 (30 %), "
                "its best when the run was stopped there",
            ),
        ),
        "2026-12-02",
        "The higher best: chapter 2's run from the trained TK-BERT-6 is 0.009 below TK-BERT-6 at 20 % removed, the "
        "MiniLM start 0.040 below at 30 %. The two bests remove different shares, so part of the 0.031 lead may be "
        "the share and not the start; at comparable shares the earlier probe of the TK start (0.509 at 31 %) and "
        "the MiniLM start (0.504 at 30 %) are 0.005 apart, still the TK start's way. The TK start reaches its best "
        "in 120 steps and stops at 200; the MiniLM run had not stopped at 160 (not run on: the budget).",
    ),
    Decision(
        "book", "training", "compact_start", "minilm", "validation",
        f"{_TOP20}: the compact TK-BERT-6 at d = 64 (best validation; TK-BERT-6 itself 0.544)",
        (
            ("MiniLM, P a random orthogonal map (the registry's build)", "d = 64: 0.499 at step 80; d = 32: 0.501"),
            (
                "chapter 2's trained TK-BERT-6, P its 64 principal directions (lib.experiments.compact_tk)",
                "0.490 before any step (P from 1,000 book passages); trained: 0.497 at step 40, then 0.491, 0.484",
            ),
            ("the same at d = 32", "0.461 before any step; not trained (budget: d = 64 had already lost)"),
        ),
        "2026-11-27",
        "The section's default, kept. The full TK's ranking does not survive the projection to its leading "
        "directions (0.490 against its 0.544 before any step), and fine-tuning from there does not recover it.",
    ),
    Decision(
        "book", "training", "distill_pseudo_queries", 7000, "validation",
        "DL21 validation MRR@10 at the top 20 / nDCG@10 all 100, TK-2 (1,000 steps) and BERT-cat (nDCG@10 top 20 / "
        "all 100)",
        (
            ("dev-small questions and 7,000 pseudo-queries", "TK-2 0.64 / 0.39; BERT-cat 0.50 / 0.49"),
            ("pseudo-queries alone", "TK-2 0.57 / 0.37; BERT-cat 0.49 / 0.47"),
            ("dev-small questions alone", "TK-2 MRR@10 0.61"),
        ),
        "2026-11-24",
        "Chapter 2 re-runs TK-2 on each source alone in every build.",
    ),
    Decision(
        "book", "training", "distill_random_negatives", 0.5, "validation",
        f"{_DL21} re-ranking all 100",
        (
            ("half of the negatives a random book passage", "BERT-cat 0.35 (300 steps); TK-2 0.37"),
            ("none", "BERT-cat 0.14 (150 steps); TK-2 0.34"),
            ("half random, BM25's top 100 as candidates", "TK-2 0.34; BERT-cat 0.35"),
        ),
        "2026-11-24",
    ),
    Decision(
        "book", "training", "piece_vector_dim", 64, "validation",
        f"{_TOP20}, TK-2 on pieces (best validation); docs/ms on 2 threads",
        (
            ("64-d", "0.488 at step 400; 0.71 docs/ms"),
            ("128-d", "0.475 at step 300; 0.32 docs/ms"),
            ("256-d", "0.488 at step 200; 0.103 docs/ms"),
        ),
        "2026-11-25",
        "A tie on validation between 64-d and 256-d, broken by cost (64-d is 7x faster to score).",
    ),
    Decision(
        "book", "training", "ladder_models",
        (
            "knrm-pieces", "conv-knrm-pieces", "tk2-pieces", "tk-bert1", "tk-bert6", "tk-bert6-d64", "tk-bert6-d32",
            "tk-bert6-sparse",
        ),
        "budget",
        "the rungs that fit chapter 2's budget: the kernel models on pieces, TK on MiniLM's first layer and on "
        f"all six ({_TOP20}: TK-BERT-6 0.538, the best TK on validation; TK-BERT-2 0.478, TK-BERT-1 0.474), "
        "TK-BERT-6 projected to 64 and 32 dimensions, and TK-BERT-6 with TK-Sparse's stopword gate, for compact "
        "stored indexes (chapter 3's stored regime)",
        date="2026-11-29",
        note="TK-1/3 on pieces, TK-BERT-2/3 and ColBERT are the full ladder (the section's default), a chapter "
        "parameter; ColBERT is trained in chapter 8.",
    ),
    Decision(
        "book", "training", "distill_bm25_depth", 30, "validation",
        f"{_TOP20}, TK-2 on 64-d pieces (best validation); the section's default, kept",
        (
            ("BM25's top 30 as candidates", "0.488 at step 400"),
            ("BM25's top 100", "0.488 at step 1,000; 3,000 steps peaked at step 1,000 with 0.488"),
        ),
        "2026-11-25",
        "A tie on validation: the triples every model learns from stay as they were.",
    ),
    Decision(
        "book", "training", "distill_negatives", 1, "validation",
        f"{_TOP20}, TK-2 on 64-d pieces (best validation); the section's default, kept",
        (
            ("Margin-MSE on triples", "0.488"),
            ("listwise KL, groups of a positive and 3 negatives", "0.477 at step 400"),
            ("listwise KL, groups of a positive and 7 negatives", "0.485 at step 1,000"),
        ),
        "2026-11-25",
    ),
    Decision(
        "book", "training", "piece_embedding_lr", None, "validation",
        f"{_TOP20}, TK-2 on 64-d pieces (best validation); the section's default (word_learning_rate), kept",
        (
            ("the piece vectors at the word models' rate, 1e-3", "0.488"),
            ("the piece vectors at the paper's 1e-4", "0.480"),
            ("every rate 3e-4", "0.475"),
            ("every rate 3e-3", "0.489"),
        ),
        "2026-11-25",
        "3e-3 and 1e-3 tie on validation (0.001 apart on 53 queries): the word models' one rate is kept.",
    ),
    Decision(
        "book", "speed", "max_latency_seconds", 15.0, "budget",
        "the longest single latency measurement chapter 3 waits for on 2 CPU cores",
        date="2026-11-22",
    ),
    Decision(
        "book", "tilde", "trainable_layers", 0, "validation",
        "DL21 validation nDCG@10 of TILDE-QL re-ranking BM25's top 100 (BM25 0.53)",
        (
            ("the head alone on frozen MiniLM, untied, with passages' own pieces", "0.44 after 6,000 steps"),
            ("frozen encoder, tied head", "0.25 after 1,000 steps"),
            ("top 2 layers fine-tuned, tied head, 100 steps of 16", "0.16-0.17"),
        ),
        "2026-11-23",
    ),
    Decision(
        "book", "tilde", "reconstruction", 10_000, "validation",
        "DL21 validation nDCG@10 of TILDE-QL re-ranking BM25's top 100 (trainable_layers' runs)",
        (("10,000 passages predicting their own pieces, untied head", "0.44"), ("none, tied head", "0.25")),
        "2026-11-23",
    ),
    Decision(
        "book", "tilde", "lr", 1e-2, "validation",
        "DL21 validation nDCG@10 of TILDE-QL over training steps, the head on cached vectors",
        (
            ("1e-2", "rose with the rate and levelled off after 1,000-1,500 steps"),
            ("3e-3", "needed about 6,000 steps for the same"),
        ),
        "2026-11-23",
    ),
    Decision(
        "book", "tilde", "head_lr", None, "validation",
        "DL21 validation nDCG@10 of TILDE-QL (lr's runs): with a frozen encoder the head is all that trains",
        (("the head at lr", "lr's runs"),),
        "2026-11-23",
    ),
    Decision(
        "book", "tilde", "steps", 1500, "validation",
        "DL21 validation nDCG@10 of TILDE-QL at 1e-2 (lr's runs)",
        (("1,500 steps", "levelled off after 1,000-1,500"), ("6,000 steps at 3e-3", "the same level, 4x the steps")),
        "2026-11-23",
    ),
    Decision(
        "book", "tilde", "batch_size", 128, "paper",
        "TILDE §4.1: batch 128", date="2026-11-23",
    ),
    Decision(
        "book", "tilde", "checkpoint_every", 500, "cost",
        "a head-only step is cheap, its checkpoint is not: three checkpoints in 1,500 steps", date="2026-11-23",
    ),
    Decision(
        "book", "tilde", "v2_steps", 200, "budget",
        "TILDEv2's schedule on 2 CPU cores (the top 2 layers fine-tuned)",
        date="2026-11-23",
        note="DL21 validation nDCG@10 re-ranking BM25's top 100: 100 steps at 1e-4 0.535 (BM25 0.532), 200 steps "
        "at 5e-4 0.505 (the rate kept at 1e-4); 200 against 100 steps at 1e-4 was not compared.",
    ),
    Decision(
        "book", "tilde", "variants", ("biqdl", "ql"), "budget",
        "the ablation keeps the paper's model (BiQDL) and L_QL to fit 2 CPU cores (the paper's Table 3 has four)",
        date="2026-11-23",
    ),
    Decision(
        "book", "lecture", "latency_repetitions", 1, "cost",
        "chapter 8's query latencies, one timed run per query against three (2 CPU cores): no effectiveness involved",
        (
            ("1 run per query", "chapter 8 43 min; medians 0.80-1.09 of three runs' (median 0.97)"),
            ("3 runs per query", "chapter 8 56 min, 29 of them timing"),
        ),
        "2026-11-26",
    ),
    Decision(
        "book", "lecture", "removal_targets", (0.1, 0.2, 0.3, 0.4, 0.5, 0.6), "validation",
        "python -m lib.experiments.sparsity_sweep on DL21 validation alone (nothing else scored), TK-2's whole 1,000 "
        "steps, gate rate 1e-3: every penalty on the gates acted as a switch (below), so the gate is trained to a "
        "share of removed terms (lib.models.tk_sparse: the share's quantile of each batch's scores, straight-through); "
        "six targets from 10 % to 60 % around slide 32's 20-40 %; chapter 8 chooses among them the sparsest within "
        "0.01 of TK-2's validation value (lib.experiments.sparsity_sweep.chosen_target); the module default, "
        "REMOVAL_TARGET 0.3, is the probe's",
        (
            ("a target share, straight-through (adopted)", "target 0.3 / 0.5: 0.439 / 0.430 at their best steps "
             "(800 / 800), terms removed there 30.8 % / 54.6 %, removed at every validation 20-31 % / 30-55 %: "
             "the share follows the target; TK-2: 0.448"),
            ("the same, the threshold not differentiated", "target 0.3: 0.2 % of the validation terms removed at "
             "400 while 30 % of each training batch's: the ranking pushed every score up together and the running "
             "threshold lagged behind, rejected"),
            ("L1 on the authors' ReLU gate, gate rate 1e-3", "lambda 1 / 3 / 10 / 30 / 100: 0.450 / 0.444 / 0.449 / "
             "0.452 / 0.434 at their best steps, terms removed there 0.03 % / 0 / 25.7 % / 0 / 0; lambda 30 removed "
             "41.5 % at 1,000 (0.401): not monotone, the gates closing late and together"),
            ("L1 on the ReLU gate, gate rates 1e-4 / 3e-3 / 1e-2, 600 steps", "at most 4.8 % / 0.5 % removed; 1e-2: "
             "every term removed at 400 (the switch)"),
            ("expected L0 on a hard-concrete gate (Louizos et al., 2018)", "lambda 0.1 / 0.3 / 1 / 3 / 10: nothing "
             "removed at any validation but lambda 1's last, 92.3 % at 1,000"),
            ("a quadratic pull of the expected removed share to a target", "target 0.3 (weight 100): nothing removed "
             "at scoring (the training noise's expected share met with every gate open); on the noise-free gate, 8 % "
             "at 200 and nothing after"),
            ("the penalty relative to each passage's largest gate; the log path alone", "nothing removed, rejected"),
        ),
        "2026-11-29",
        "validation is nDCG@10 at the top 20, removal the share of the validation candidates' terms at the running "
        "threshold. TK's log path barely changes when all of a passage's gates shrink together, so any penalty moved "
        "them together until they shut; a share fixes how many go and leaves the gate only which",
    ),
    Decision(
        "book", "lecture", "stop_at", {"colbert": 40, "prettr": 40}, "budget",
        "chapter 8 within 50 min on 2 CPU cores (76.6 min from scratch with every schedule run whole): each MiniLM "
        "fine-tuning trains the first 40 steps of its 500-step schedule (one validation), every learning-rate "
        "schedule unchanged, so the weights are those the whole run passes through. TK-Sparse and the other runs of "
        "slides 31-32 train TK-2's whole 1,000 steps: their gates start closing only after step 800 (the probe of "
        "removal_targets), so the earlier cut at 600 left nothing removed",
        (
            ("ColBERT", "0.520 at 40 (kept); the whole run: 0.523 at 80 (best), 0.511 at 120, 0.515 at 160, "
             "stopped; training 764 s of which 40 steps about 175 s"),
            ("PreTTR (split 3)", "0.488 at 40 (kept); the whole run: 0.481 at 80, 0.496 at 120 (best), 0.489 at 160, "
             "0.471 at 200, stopped; training 875 s"),
            ("TK-Sparse cut at 600 (before)", "lambda 10 with the new gate: 0.1 % of the terms removed at 600, 25.7 % "
             "at 1,000 (validation 0.449 there); each TK-Sparse run of 1,000 steps about 1.5 min"),
        ),
        "2026-11-28",
        "validation is nDCG@10 at the top 20; ColBERT's cut costs 0.003 of validation, PreTTR's 0.008",
    ),
    Decision(
        "book", "lecture", "duo_stop_at", 40, "budget",
        "chapter 8 within 50 min: the duo model trains the first 40 steps of its 60-step schedule, like the other "
        "MiniLM models of the chapter",
        (("duo, validation nDCG@10 of mono's top 10", "0.494 at 20, 0.506 at 40 (kept; the whole run's best), "
          "0.502 at 60"),),
        "2026-11-27",
        "each validation scores 90 pairs per validation query, about 140 s on 2 CPU cores",
    ),
    Decision(
        "book", "lecture", "duo_validate_every", 40, "budget",
        "with the duo stopped at step 40, one validation (at 40) records its value: one at 20 cost about 140 s and "
        "could not change the weights kept",
        date="2026-11-27",
    ),
)  # fmt: skip

_SCALE = "the paper profile's GPU scale on full MS MARCO (not run here; sized, not tuned)"

PAPER: tuple[Decision, ...] = (
    Decision("paper", "training", "embedding_method", "glove-42b-300d", "paper", "TK §4.3: GloVe 42B 300-d"),
    Decision("paper", "training", "bert_cat_start", "bert-base-uncased", "paper", "TK §4.2: BERT-Base"),
    Decision("paper", "training", "bert_steps", 0, "paper", "the paper pre-trains no BERT of its own"),
    Decision("paper", "training", "batch_size", 64, "paper", "TK §4.3: training batch size 64"),
    Decision("paper", "training", "max_steps", 100_000, "budget", _SCALE),
    Decision("paper", "training", "validate_every", 4_000, "budget", _SCALE),
    Decision("paper", "training", "patience", 5, "budget", _SCALE),
    Decision("paper", "training", "bert_cat_batch_size", 32, "budget", _SCALE),
    Decision("paper", "training", "bert_cat_max_steps", 100_000, "budget", _SCALE),
    Decision("paper", "training", "bert_cat_validate_every", 4_000, "budget", _SCALE),
    Decision("paper", "training", "validation_depth", 100, "budget", "validation re-ranks dev-small's BM25 top 100"),
    Decision("paper", "training", "candidate_depth", 1000, "paper", "TK §4: the official top-1000 re-ranked"),
    Decision(
        "paper", "training", "distill_query_set", "train", "paper",
        "Hofstätter et al. 2020 (Margin-MSE): MS MARCO's training queries",
    ),
    Decision(
        "paper", "training", "teacher_scores", "published", "paper",
        "Hofstätter et al. 2020: the published BERT-cat ensemble's scores of MS MARCO's training triples",
    ),
    Decision("paper", "training", "validation_set", "dev-small", "paper", "TK §4.3: early stopping on MS MARCO dev"),
    Decision("paper", "training", "validation_metric", "MRR@10", "paper", "TK §4.3: the best MRR@10 on validation"),
    Decision("paper", "speed", "max_documents", 4096, "budget", "a GPU's larger batches (chapter 3's timing)"),
    Decision("paper", "speed", "repetitions", 5, "budget", "a GPU's timing repeated more often"),
    Decision("paper", "speed", "max_latency_seconds", 60.0, "budget", "BERT-Large's latency at 1,000 candidates"),
    Decision("paper", "clusters", "ks", tuple(range(2, 61, 2)), "paper", "TK §5.3: k = 30 by the elbow, inside 2-60"),
    Decision("paper", "clusters", "n_init", 10, "budget", "k-means restarts on the full dev set"),
    Decision("paper", "tilde", "train_set", "train", "paper", "TILDE §4.1: MS MARCO's training judgments"),
    Decision("paper", "tilde", "steps", 42_000, "paper", "TILDE §4.1: 10 epochs of 533k pairs in batches of 128"),
    Decision("paper", "tilde", "batch_size", 128, "paper", "TILDE §4.1: batch 128"),
    Decision("paper", "tilde", "lr", 2e-5, "paper", "TILDE §4.1: Adam 2e-5"),
    Decision("paper", "tilde", "head_lr", None, "paper", "TILDE §4.1: one rate for the whole model"),
    Decision("paper", "tilde", "trainable_layers", None, "paper", "TILDE §4.1: all of BERT fine-tuned"),
    Decision("paper", "tilde", "v2_steps", 50_000, "budget", _SCALE),
    Decision("paper", "tilde", "v2_lr", 2e-5, "paper", "TILDE's rate for BERT (§4.1), kept for TILDEv2"),
    Decision("paper", "tilde", "v2_trainable_layers", None, "paper", "TILDEv2 fine-tunes all of BERT"),
    Decision("paper", "trec", "inits", (1, 2, 3, 4, 5), "paper", "TUW19-p1 and -p3: TK-2 trained from several inits"),
)  # fmt: skip

#: Every decision of the audited profiles.
DECISIONS: tuple[Decision, ...] = BOOK + PAPER


def decisions_of(profile: str, decisions: Sequence[Decision] = DECISIONS) -> list[Decision]:
    """The entries of ``profile``, in the record's order."""
    return [decision for decision in decisions if decision.profile == profile]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _shown(value: Any) -> str:
    if isinstance(value, tuple):
        return ", ".join(str(item) for item in value) if len(value) <= 6 else f"{value[0]} … {value[-1]}"
    if isinstance(value, dict):
        return ", ".join(f"{key}: {item}" for key, item in value.items())
    return "the default of another setting" if value is None else str(value)


def decisions_table(profile: str, decisions: Sequence[Decision] = DECISIONS) -> str:
    """A Markdown table of ``profile``'s decisions: setting, value, evidence, what decided it, what was tried, date."""
    rows = [
        "| setting | adopted | evidence | what decided it | tried: what each measured | date |",
        "|---|---|---|---|---|---|",
    ]
    for decision in decisions_of(profile, decisions):
        tried = "; ".join(f"{name}: {measured}" for name, measured in decision.results)
        if decision.note:
            tried = f"{tried} ({decision.note})" if tried else decision.note
        cells = [
            f"`{decision.section}.{decision.setting}`",
            _shown(decision.value),
            decision.evidence,
            decision.measure,
            tried or "—",
            decision.date or "—",
        ]
        rows.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return "\n".join(rows) + "\n"


__all__ = [
    "AUDITED_PROFILES",
    "DECISIONS",
    "EVIDENCE",
    "Decision",
    "decisions_of",
    "decisions_table",
    "names_a_test_year",
]
