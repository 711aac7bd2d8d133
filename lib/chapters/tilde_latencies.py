"""Chapter 6's table of chapter 3's latencies, beside TILDE's (measured by :mod:`lib.experiments.tilde_timings`).

- :func:`paper_size_latencies` — chapter 3's latencies of the paper-size BERT-Base, BERT-Large and TK-2.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

#: Chapter 3's paper-size architectures shown beside TILDE.
PAPER_SIZE_MODELS: tuple[str, ...] = ("bert-base", "bert-large", "tk2")


def paper_size_latencies(speed: Mapping[str, Any]) -> pd.DataFrame:
    """Chapter 3's latencies (``speed.json``, :func:`lib.experiments.artifacts.speeds`) of :data:`PAPER_SIZE_MODELS`."""
    return pd.DataFrame(
        [
            {
                "model (chapter 3, random weights)": row["label"],
                "ms for 100": row["latency_100_ms"],
                "measured": row["latency_100_measured"],
                "ms for 1,000": row["latency_1000_ms"],
                "measured ": row["latency_1000_measured"],
                "device": row["device"],
            }
            for row in speed["results"]
            if row["model"] in PAPER_SIZE_MODELS
        ]
    )
