"""Re-ranking depth as an experimental variable: every depth from one scoring pass, and choosing a depth.

TK paper §5.2 ("re-ranking depth"): the same scores are re-ranked at depth 0 (the first stage) … N,
and the depth used on the test queries is the one that is best on the validation queries.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from lib.core.types import Qrels, Run, ranking_from_run, run_from_rankings
from lib.evaluation.measures import per_query
from lib.reranking.scoring import rerank_at_depth, scored_depth


def depth_sweep(
    first_stage: Run,
    scores: Run,
    qrels: Qrels,
    depths: Iterable[int] | None = None,
    measures: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Per-query metrics at every re-ranking depth, from one scoring pass.

    ``first_stage`` gives the candidate order, ``scores`` the model's score for (at least) every
    candidate down to the largest depth. Returns a long frame with columns
    ``depth, qid, <measure…>``; ``frame.groupby("depth").mean(numeric_only=True)`` gives the curve.
    """
    orders = {qid: ranking_from_run(candidates) for qid, candidates in first_stage.items()}
    if depths is None:
        depths = range(0, max(len(order) for order in orders.values()) + 1)
    frames = []
    for depth in depths:
        rankings = {qid: rerank_at_depth(order, scores.get(qid, {}), depth) for qid, order in orders.items()}
        frame = per_query(run_from_rankings(rankings), qrels, measures).reset_index()
        frame.insert(0, "depth", depth)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def tune_depth(
    first_stage: Run,
    scores: Run,
    qrels: Qrels,
    metric: str = "MRR@10",
    depths: Sequence[int] | None = None,
) -> tuple[int, pd.DataFrame]:
    """The re-ranking depth whose mean ``metric`` over the (validation) queries is best, and the curve.

    ``depths`` defaults to 0 … :func:`scored_depth` (depth 0 is the first stage). Ties go to the
    smallest depth. The curve is a frame indexed by ``depth`` with the mean of ``metric``, MRR@10
    and nDCG@10 at each depth (queries both judged and in the run, as :func:`lib.evaluation.measures.evaluate`).
    """
    if depths is None:
        depths = range(0, scored_depth(first_stage, scores) + 1)
    depths = sorted(set(depths))
    if not depths:
        raise ValueError("parameter 'depths' is empty")
    measures = list(dict.fromkeys([metric, "MRR@10", "nDCG@10"]))
    frame = depth_sweep(first_stage, scores, qrels, depths, measures)
    if frame.empty:
        raise ValueError("no query of the first stage is judged in the qrels: nothing to tune on")
    curve = frame.drop(columns="qid").groupby("depth").mean()
    values = curve[metric]
    best = int(values.index[values >= values.max() - 1e-12].min())
    return best, curve
