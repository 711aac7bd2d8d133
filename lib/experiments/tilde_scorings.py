"""TILDE's three scorings, TILDE-QL, -DL and -QDL (TILDE eq. 4–6), and the runs they make of first-stage candidates."""

from __future__ import annotations

from lib.core.types import Run
from lib.reranking.tilde_scoring import TildeScores

#: The three scorings of the paper and the α of eq. 6 each uses (TILDE-QDL: α = 0.5, as Table 2).
SCORINGS: dict[str, float] = {"TILDE-QL": 1.0, "TILDE-DL": 0.0, "TILDE-QDL": 0.5}


def scoring_runs(scores: TildeScores, first_stage: Run) -> dict[str, dict[str, dict[str, float]]]:
    """The first stage re-ranked by each of :data:`SCORINGS` (TILDE-DL and -QDL need DL scores)."""
    names = SCORINGS if scores.dl is not None else {"TILDE-QL": 1.0}
    return {name: scores.rerank(first_stage, alpha) for name, alpha in names.items()}
