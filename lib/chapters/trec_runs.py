"""Chapter 7: the TU Wien TREC Deep Learning 2019 passage runs, as the chapter describes and judges them.

Source: Hofstätter, Zlabinger, Hanbury, *TU Wien @ TREC Deep Learning '19 – Simple Contextualization
for Re-ranking* (the TREC notebook), Table 1 (the runs) and §3.3.1 (its claims). The runs, their table
and Table 3 are :mod:`lib.experiments.tuw19_runs`'s; :func:`run_descriptions` says what each run is and
:func:`verdicts` gives the measured verdict on each of the notebook's three claims, from the run table,
:func:`lib.evaluation.comparison.pairwise_tests` and :func:`lib.analyses.query_types.type_test`.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from lib.experiments.tuw19_runs import GLOVE_RUN


def run_descriptions(tk_label: str) -> dict[str, str]:
    """What each run is (the notebook's Table 1, and how the book builds it), p1 and p3 being ``tk_label``."""
    return {
        "p1": f"{tk_label}, the best of several inits on validation",
        "p2": "TK-2 on fastText vectors trained on the book corpus (no out-of-vocabulary word)",
        "p3": f"ensemble of the p1 inits of {tk_label} (mean of per-query z-scored scores)",
    }


def verdicts(
    table: pd.DataFrame, tests: pd.DataFrame, type_tests: Mapping[str, Mapping[str, float]], glove_run: str = "p1"
) -> list[str]:
    """One generated sentence per claim of the notebook (§3.3.1), each with its measured verdict.

    ``table`` is :func:`lib.experiments.tuw19_runs.run_table`'s frame, ``tests``
    :func:`lib.evaluation.comparison.pairwise_tests` on nDCG@10 with a ``set`` column, ``type_tests``
    :func:`lib.analyses.query_types.type_test` per test set, ``glove_run`` the TK-2-on-GloVe run that p2's
    fastText is compared with (p1 when p1 is that model, else :data:`GLOVE_RUN`).
    """

    def mean(query_set: str, run: str, measure: str = "nDCG@10") -> float:
        return float(table[(table["set"] == query_set) & (table["run"] == run)][measure].iloc[0])

    def test(query_set: str, first: str, second: str) -> pd.Series:
        """The test of the pair, in whichever order the pairwise tests put it."""
        pair = {first, second}
        rows = tests[(tests["set"] == query_set) & tests["run"].isin(pair) & tests["against"].isin(pair)]
        return rows.iloc[0]

    sets = list(dict.fromkeys(table["set"]))
    lines = []
    glove = [test(s, glove_run, "p2") for s in sets]
    glove_label = glove_run if glove_run == GLOVE_RUN else f"{glove_run} (GloVe)"
    same = not any(row["significant"] for row in glove)
    details = "; ".join(
        f"{s.upper()} {mean(s, glove_run):.3f} vs {mean(s, 'p2'):.3f}, p = {row['p_bonferroni']:.2g}"
        for s, row in zip(sets, glove, strict=True)
    )
    lines.append(
        f"**GloVe ≈ fastText: {'holds' if same else 'does not hold'}.** nDCG@10 of {glove_label} against p2 "
        f"(fastText): {details} (Bonferroni-corrected); "
        + ("no difference is significant." if same else "the difference is significant.")
    )
    gains = {s: mean(s, "p3") - mean(s, "p1") for s in sets}
    significant = [s for s in sets if test(s, "p1", "p3")["significant"]]
    helps = all(gain >= 0 for gain in gains.values())
    # round first, so that a change of less than 0.0005 reads +0.000, not -0.000
    changes = ", ".join(f"{round(gain, 3) + 0.0:+.3f} on {s.upper()}" for s, gain in gains.items())
    if helps and not significant:
        verdict = "holds"
    elif helps:
        verdict = "holds, and by more than a little"
    else:
        verdict = "does not hold"
    lines.append(
        f"**The ensemble helps a little: {verdict}.** p3 against p1, nDCG@10: {changes}"
        + (f" (significant on {', '.join(s.upper() for s in significant)})." if significant else " (not significant).")
    )
    separated = [s for s in sets if type_tests[s]["p"] < 0.05]
    pieces = "; ".join(f"{s.upper()} p = {type_tests[s]['p']:.2g}" for s in sets)
    lines.append(
        f"**No clear query type separates best from worst: {'does not hold' if separated else 'holds'}.** "
        f"A Kruskal–Wallis test of p3's AP across query types ({pieces}) "
        + (f"finds a difference on {', '.join(s.upper() for s in separated)}." if separated else "finds none.")
    )
    return lines
