"""Chapter 8's mono-duo (lecture 8, slide 12): chapter 2's BERT-cat as the mono model, a duo model on its top ``k``.

The duo model (:class:`lib.models.duo_bert.DuoBert`) starts from the mono model's fine-tuned encoder (a new head),
trains on chapter 2's teacher-labelled triples and margins (:func:`lib.training.duo.train_duo`) with BERT-cat's
rates, validated on the validation set's mono ranking (DL21 in the ``book`` profile; never a test year), and
re-ranks the mono ranking's top ``LectureSettings.duo_top_k`` of every test year with SUM
(:func:`lib.reranking.mono_duo.duo_rerank`). Mono's ranking is BERT-cat re-ranking all of BM25's candidates, its
scores read from the score cache chapter 2 filled (:func:`lib.experiments.model_runs.candidate_scores`).
:func:`run_mono_duo` writes ``<set>__mono-duo.trec`` into the profile's runs folder and returns both rankings and
the duo's time per query; :func:`mono_duo_table` tests mono-duo against mono per year.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import statistics
from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch

from lib.core import paths
from lib.core.profiles import LectureSettings, TrainingSettings
from lib.core.run_context import RunContext
from lib.core.types import JudgedSet, Run
from lib.evaluation import comparison
from lib.evaluation.measures import write_trec_run
from lib.experiments.distillation_protocol import Protocol
from lib.experiments.model_runs import candidate_scores, checkpoint_folder
from lib.experiments.model_setup import training_config
from lib.models.bert_cat import BertCat
from lib.models.duo_bert import DuoBert
from lib.reranking.mono_duo import duo_rerank
from lib.reranking.scoring import ScoringOptions
from lib.training.duo import train_duo
from lib.training.pairwise import TrainingResult

#: The run name of the re-ranked test years (``<set>__mono-duo.trec``) and of the duo model's checkpoint.
RUN_NAME = "mono-duo"


@dataclass
class MonoDuo:
    """What :func:`run_mono_duo` gives: the duo's training, per test year the ``mono`` and ``mono-duo`` runs and the
    duo's seconds per query, and the ``top_k`` it re-ranked."""

    training: TrainingResult
    runs: dict[str, dict[str, Run]]
    seconds: dict[str, dict[str, float]]
    top_k: int


def weights_digest(model: torch.nn.Module) -> str:
    """A sha256 of ``model``'s weights (names, shapes and values): the duo's starting point in its fingerprint."""
    hasher = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        hasher.update(f"{name}:{tuple(tensor.shape)}".encode())
        hasher.update(tensor.detach().cpu().float().numpy().tobytes())
    return hasher.hexdigest()[:16]


def run_mono_duo(
    mono: BertCat,
    tokenizer: Any,
    protocol: Protocol,
    settings: TrainingSettings,
    lecture: LectureSettings,
    context: RunContext,
) -> MonoDuo:
    """Train the duo model from ``mono``'s encoder, re-rank every test year's mono top ``lecture.duo_top_k``, write
    the runs (module docstring). Resumes the duo's checkpoint in ``context``'s chapter folder."""
    profile, device = context.profile, context.device
    config = dataclasses.replace(
        training_config("bert-cat", settings, context.seed, str(device)),
        batch_size=lecture.duo_batch_size, max_steps=lecture.duo_max_steps, validate_every=lecture.duo_validate_every,
        patience=lecture.duo_patience, stop_at=lecture.duo_stop_at, rerank_depth=lecture.duo_top_k, bucket_batches=1,
        start=weights_digest(mono),
    )  # fmt: skip

    def mono_ranking(judged: JudgedSet) -> Run:
        return candidate_scores(mono, tokenizer, protocol, profile, judged.queries, judged.run, config.eval_batch_size)

    duo = DuoBert(copy.deepcopy(mono.bert)).to(device)
    validation = dataclasses.replace(protocol.validation, run=mono_ranking(protocol.validation))
    checkpoint = checkpoint_folder(profile, context.chapter, RUN_NAME)
    training = train_duo(
        duo, tokenizer, protocol.triples, protocol.margins, protocol.queries, protocol.texts, validation, config,
        checkpoint,
    )  # fmt: skip
    options = ScoringOptions(config.eval_batch_size, config.max_query_length, config.max_doc_length, progress=True)
    runs, seconds = {}, {}
    for name, test in protocol.tests.items():
        ranking = mono_ranking(test)
        reranked, seconds[name] = duo_rerank(
            training.model, tokenizer, test.queries, protocol.texts, ranking, lecture.duo_top_k, options, device
        )
        write_trec_run(reranked, paths.run_path(profile.name, name, RUN_NAME), tag=RUN_NAME)
        runs[name] = {"mono": ranking, RUN_NAME: reranked}
    return MonoDuo(training, runs, seconds, lecture.duo_top_k)


def mono_duo_table(result: MonoDuo, tests: dict[str, JudgedSet], measure: str = "nDCG@10") -> pd.DataFrame:
    """Per test year: mono's and mono-duo's ``measure``, the paired two-tailed t-test of mono-duo against mono (one
    test per year, so no correction), the duo passes per query (``k (k − 1)``) and the duo's median ms per query."""
    rows = []
    for name, runs in result.runs.items():
        frame = comparison.compare(runs, tests[name], [measure], baseline="mono")
        rows.append({
            "year": name.upper(), f"mono {measure}": frame.loc["mono", measure],
            f"mono-duo {measure}": frame.loc[RUN_NAME, measure], "delta": frame.loc[RUN_NAME, f"{measure} delta"],
            "p": frame.loc[RUN_NAME, f"{measure} p"],
            "significant": bool(frame.loc[RUN_NAME, f"{measure} significant"]),
            "queries": int(frame.loc[RUN_NAME, "queries"]), "duo passes / query": result.top_k * (result.top_k - 1),
            "duo ms / query": 1000 * statistics.median(result.seconds[name].values()),
        })  # fmt: skip
    return pd.DataFrame(rows)


__all__ = ["RUN_NAME", "MonoDuo", "mono_duo_table", "run_mono_duo", "weights_digest"]
