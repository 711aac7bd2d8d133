# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Re-ranking on a time budget
#
# A search engine answers within a fixed time, so a re-ranker has a budget: some milliseconds per
# query. TK {cite}`hofstaetter2020tk` was designed for that situation (§5.2 of the paper; lecture 8,
# slides 25–27): a model that scores more documents per millisecond re-ranks more of the first
# stage's candidates in the same time, and may end up more effective than a slower, stronger model
# that only gets through the first few. This chapter measures both halves of that trade-off and
# puts them together as the paper's **Figure 2**:
#
# 1. **speed** — documents scored per millisecond (Table 2's "Docs./ms" column) and the latency of
#    re-ranking 100 and 1,000 candidates, for the book's models and for the paper's sizes of every
#    architecture, BERT-Base and BERT-Large included, on the machine that builds this book;
# 2. **effectiveness at every re-ranking depth**, from chapter 2's one scoring pass over the test
#    candidates;
# 3. the **time-budget curves**: under a budget of `T` ms a model of speed `r` re-ranks the top
#    `min(D, ⌊T·r⌋)` candidates (`D` the deepest it has scores for: 100 in the `book` profile), so its
#    effectiveness under `T` is its effectiveness at that depth.
#
# Then it asks the question the paper leaves open: what if the passage side is computed once, when the collection is
# indexed, and only read at query time? TK can do that and BERT-cat cannot, so the same curves are drawn a second
# time with every storable model's passages stored, and a compact index of the chosen TK is put to the same test:
# how fast can it answer, from how few bytes per passage, and what does it keep of its effectiveness?
#
# ```{admonition} Terms used in this chapter
# :class: tip
# - **Teacher, test years, validation**: chapter 2's zero-shot MiniLM bi-encoder, whose scores every model learned
#   from (labelled "(teacher)": a reference, not a contestant); DL19 and DL20, only tested on; DL21, on which every
#   setting is chosen.
# - **Chosen TK, ladder**: chapter 2 trains TKs on ever deeper pre-trained word vectors (GloVe, BERT's static
#   pieces, BERT's first 1–6 layers: the ladder) and chooses one on validation: the chosen TK.
# - **Docs/ms**: documents scored per millisecond, the paper's Table 2 measure of speed.
# - **Roofline**: the machine's arithmetic rate measured in practice; a model's achieved rate divided by it says how
#   much of the machine the model uses.
# - **bf16**: a 16-bit number format with float32's range and 2–3 significant digits, twice as fast where the
#   hardware has it.
# - **Run whole, stored, resident**: the three regimes of a re-ranker's passage side — computed at query time;
#   read from an index on disk (float16, int8, or product-quantised: each vector replaced by a few bytes of codes);
#   held in the GPU's memory.
# - **Sparse TK**: a TK with TK-Sparse's stopword gate (slides 30–33), whose index stores only the pieces the gate
#   keeps.
# - **p, `*`**: a paired two-tailed t-test over the year's judged queries, corrected for the comparisons made;
#   `*` marks p < 0.05. An order between two models is claimed only where it is significant.
# ```

# %% tags=["parameters"]
profile = "book"  # smoke | book | paper
device = "auto"  # "auto" times on a CUDA GPU when there is one
seed = 42
sets = ["dl19", "dl20"]  # chapter 2's test years
models = ["bi-encoder", "knrm", "conv-knrm", "tk1", "tk2", "tk3", "bert-cat"]  # chapter 2's Table 2 models
chosen_tk = None  # None: the TK chapter 2 chose on validation (added to `models`); or a registry name
architectures = None  # None: the profile's list (lib.core.profiles, section `speed`)
measures = ["MRR@10", "R@10", "nDCG@10"]
speed_target_seconds = None  # None: the profile's (lib.core.profiles, section `speed`)

# %% tags=["hide-input"]
import json
import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from IPython.display import Markdown, display
from myst_nb import glue

from lib.chapters import regimes_reading, speed_report
from lib.chapters.prologue import start_chapter
from lib.chapters.tables import plain
from lib.chapters.time_budget_figure import plot_budget_curves, plot_regimes
from lib.core import paths
from lib.core.atomic import write_csv, write_json
from lib.core.plotting import save_figure
from lib.core.profiles import limit_queries
from lib.data import book_texts, load_qrels, load_queries
from lib.evaluation import cold_reads, regimes, speed_benchmark, speedup_steps, time_budget
from lib.evaluation.precision_effect import precision_effect
from lib.evaluation.roofline import roofline_table
from lib.evaluation.speed_benchmark import BenchmarkInputs, run_benchmark
from lib.experiments import artifacts, comparison_tables, first_stage_runs, regime_costs, settings_record
from lib.experiments.model_setup import CROSS_ENCODERS
from lib.experiments.tk_choice import is_tk
from lib.models.paper_size import ARCHITECTURES
from lib.models.registry import MODELS
from lib.models.tk_bert_sparse import BERT_RAMP_STEPS, BERT_REMOVAL_TARGET
from lib.models.tk_sparse import fitted_ramp

# %% tags=["hide-input"]
speed_overrides = {
    "target_seconds": speed_target_seconds and float(speed_target_seconds),
    "architectures": architectures or None,
}
chapter = start_chapter(
    "03_time_budget", profile, seed, device, section="speed", overrides=speed_overrides, precision=4
)
out, running_on, speed_settings = chapter.out, chapter.device, chapter.settings
chosen_tk = artifacts.chosen_tk(chapter.profile) if chosen_tk is None else chosen_tk
models = list(dict.fromkeys([*models, chosen_tk]))
#: The TKs every budget reading follows: the paper's TK-2 (GloVe) and the TK chosen on validation.
followed_tks = list(dict.fromkeys(["tk2", chosen_tk]))
glue("chosen_tk_label", MODELS[chosen_tk].label, display=False)
timed = list(speed_settings.architectures)
#: The paper-size architecture whose speed each chapter-2 model has in the paper's situation (TK at
#: 300-d, BERT-cat on BERT-Base; None: the model as it is): the model registry says.
PAPER_SPEED_OF = {name: spec.paper_architecture for name, spec in MODELS.items()}
LABELS = {**{name: spec.label for name, spec in MODELS.items()}, "bm25": "BM25"}
LABELS["bi-encoder"] += " (teacher)"  # every student of chapter 2 learned from its scores

# %% [markdown]
# ## How fast is each model?
#
# The paper's Table 2 gives each model's speed as documents scored per millisecond on its GPUs of 2019, and §3.3
# turns two of them into its headline: TK-2 is 40 times faster than BERT-Base. This section measures the same
# column on the machine that builds the book — for the book's own models and for the paper's sizes of every
# architecture, BERT-Base and BERT-Large included, with random weights (speed does not depend on them) — and
# the latency of re-ranking 100 and 1,000 candidates of one query.
#
# ```{admonition} How the book times a model
# :class: dropdown
# The paper times "solely the time spent computing the scores on the GPU", excluding pre-processing. The book's
# harness (`lib.evaluation.efficiency`) does the same on whatever device it runs on: the (query, passage) pairs are
# real BM25 candidates of DL19 in rank order, tokenised beforehand at the paper's caps (30 query and 200 passage
# tokens) and moved to the device; one warm-up pass is excluded; GPU work is synchronised before every clock read;
# the median of several repetitions is reported — the same rule for every model, here and below. Batches hold 256
# pairs for the non-BERT models (the paper's setting) and 32 for BERT, and are **bucketed by passage length** as
# the book re-ranks: pairs are sorted by passage length and each batch is padded only to its own longest passage
# (the remaining padding is part of the cost, as in any real batch). TK contextualises each distinct query of a
# batch once and shares it with all of its passages (`lib.models.tk.TK.forward`).
#
# The paper's sizes are TK with 1–3 layers and the kernel-pooling baselines at 300-d (16 heads of 32, FF 100, 11
# kernels; the book's chapter-2 models are narrower, on 50-d GloVe) and BERT-cat on BERT-Base (12 layers, 768
# wide) and BERT-Large (24, 1,024), which the book cannot train. The speed of the book's own models was measured
# in chapter 2, right after training, and is shown below the table. Every architecture is timed on the same
# candidates; how many of their batches are timed adapts to each model's speed (a probe first), so that
# BERT-Large on a CPU takes seconds, not hours, and the timed batches are spread evenly over the length-sorted
# ones, so that a slow model is timed on passages as long as a fast one's. The latency of one query re-ranking
# 1,000 candidates repeats its 100 candidates ten times (the book has 100 per query); a latency that would take
# longer than the profile allows to measure is estimated from the throughput, and the table says which.
# ```

# %%
dl19_run = first_stage_runs.bm25_run(chapter.profile, "dl19")
speed_inputs = {qid: dl19_run[qid] for qid in list(dl19_run)[: max(2, speed_settings.max_documents // 100 + 1)]}
speed_pairs = BenchmarkInputs(speed_inputs, load_queries("dl19"), book_texts())
speed = run_benchmark(timed, speed_pairs, running_on, speed_settings)
speed["inputs"] = {"set": "dl19", "first_stage": comparison_tables.FIRST_STAGE, "queries": len(speed_inputs)}
write_json(out / "speed.json", speed)
speed_table = pd.DataFrame(speed["results"]).set_index("model")
docs_per_ms = speed_table["docs_per_ms"].to_dict()


# %% [markdown]
# Each architecture's throughput and query latency, beside the paper's throughput on its GPUs of 2019:

# %%
docs_ms_table = speed_report.docs_per_ms_table(
    speed_table, {name: ARCHITECTURES[name].paper_docs_per_ms for name in speed_table.index}
)
write_csv(out / "docs_per_ms.csv", docs_ms_table.reset_index())
glue("speed_device", speed["device"], display=False)
print(f"measured on {speed['device']}, torch {speed['environment']['torch']}, {speed['environment']['date']}")
docs_ms_table

# %% [markdown]
# *Docs./ms on {glue:text}`speed_device`. "est.": estimated from the throughput (too slow to
# measure in the profile's time); "rep.": the query's 100 candidates repeated. The paper's column
# is its Table 2 (GPUs of 2019).*
#
# The book's own models, as chapter 2 trained them, were timed right after training on the same
# kind of real candidates (fewer of them, so the numbers are rougher), next to the paper-size
# architecture that stands for each in the paper's situation:

# %% tags=["hide-input"]
book_speed = artifacts.table2(chapter.profile).dropna(subset=["docs/ms"]).groupby("model")["docs/ms"].mean()
book_speed_table = pd.DataFrame(
    {
        "model (chapter 2)": [LABELS[name] for name in models],
        "docs/ms (chapter 2)": [book_speed.get(name, np.nan) for name in models],
        "paper-size architecture": [
            ARCHITECTURES[PAPER_SPEED_OF[name]].label if PAPER_SPEED_OF[name] else "(itself)" for name in models
        ],
        "its docs/ms (here)": [docs_per_ms.get(PAPER_SPEED_OF[name] or "", np.nan) for name in models],
    }
)
write_csv(out / "book_model_speeds.csv", book_speed_table)
plain(book_speed_table)


# %% tags=["hide-input"]
figure = speed_report.plot_docs_per_ms(docs_ms_table)
save_figure(figure, out / "docs_per_ms.png")
plt.show()

# %% [markdown]
# ### TK-2 against BERT-Base: the "40 times faster"
#
# §3.3 of the paper: "the query-time inference of TK with 2 layers [is] 40 times faster than
# BERT-Base with 12 layers" (Table 2: 4 against 0.1 documents per ms). The same ratio, measured in
# the same run on this machine:

# %% tags=["hide-input"]
ratio = docs_per_ms["tk2"] / docs_per_ms["bert-base"] if {"tk2", "bert-base"} <= set(docs_per_ms) else math.nan
glue("tk2_bert_ratio", f"{ratio:.0f}", display=False)
glue("tk2_docs_ms", f"{docs_per_ms.get('tk2', math.nan):.3g}", display=False)
glue("bert_base_docs_ms", f"{docs_per_ms.get('bert-base', math.nan):.3g}", display=False)
verdict = "reaches" if ratio >= 40 else "falls short of"
glue("ratio_verdict", verdict, display=False)
display(Markdown(f"TK-2 scores **{ratio:.0f}×** as many documents per millisecond as BERT-Base here."))

# %% [markdown]
# TK-2 scores {glue:text}`tk2_docs_ms` documents per ms and BERT-Base {glue:text}`bert_base_docs_ms`:
# a ratio of {glue:text}`tk2_bert_ratio`×, which {glue:text}`ratio_verdict` the paper's 40×. The
# ratio follows from the architectures: a BERT-Base pass over `[CLS] q [SEP] d [SEP]` costs about
# 2 × 85 M multiply-adds per word piece, while TK-2's contextualisation works on 300-d vectors with
# two small layers and scores query and passage with one cheap match matrix and kernel pooling.
# Whether the ratio of time reaches the ratio of floating-point work depends on how well each model
# keeps the machine busy: small models pay for element-wise work, memory traffic and (on a GPU)
# kernel launches that large ones hide. The roofline reading below measures exactly that.

# %% [markdown]
# ### Measurements committed with the book
#
# `python -m benchmarks.throughput` writes the same measurements as JSON into `benchmarks/results/`:
# on a GPU (`--device cuda`, fp32 and bf16/fp16, several batch sizes) or on a CPU. The files
# committed there are shown here with where and when they were measured, so that a book built on one
# machine also shows the numbers of others (a GPU's in particular, which is the paper's setting).

# %% tags=["hide-input"]
results_dir = paths.REPO_ROOT / "benchmarks" / "results"
committed, committed_results = [], {}
for path in sorted(results_dir.glob("*.json")):
    result = committed_results[path.name] = json.loads(path.read_text())
    for row in result["results"]:
        committed.append(
            {
                "file": path.name,
                "device": result["device"],
                "date": result["environment"]["date"][:10],
                **speed_benchmark.setting_of(row),
                **{key: row[key] for key in ("model", "label", "docs_per_ms", "latency_1000_ms")},
            }
        )
committed_table = pd.DataFrame(committed)
if committed:
    display(plain(committed_table))
else:
    display(Markdown("*No benchmark result is committed under `benchmarks/results/` yet.*"))

# %% [markdown]
# *"batching": `rank order` pads every batch to the longest passage of all (how the benchmark batched
# before bucketing); `bucketed` as described above. "execution": eager PyTorch or `torch.compile`.*
#
# ### Before and after: TK-2 against BERT-Base in every committed run
#
# The paper's "40 times faster" is a ratio, so it is only meaningful between two models timed alike:
# same machine, same run, same dtype, batching and execution. Every committed file that timed both:

# %% tags=["hide-input"]
ratio_table = speed_benchmark.ratio_table(committed_results)
write_csv(out / "committed_ratios.csv", ratio_table)
if ratio_table.empty:
    display(Markdown("*No committed run timed both TK-2 and BERT-Base.*"))
else:
    display(plain(ratio_table))
    display(Markdown(speed_report.ratio_reading(ratio_table)))

# %% [markdown]
# ## Where the time goes: a roofline reading
#
# A model's speed is bounded by the machine's arithmetic rate. The benchmark measures that roof in
# practice — a large matrix product in the same dtype — and counts the floating-point work of each
# model per document on the timed batches (`lib.evaluation.roofline`; matrix products and attention,
# the work that can run at the roof). Achieved GFLOP/s divided by the roof says how much of the
# machine a model uses; the rest of its time goes to memory traffic, element-wise operations
# (kernel pooling, layer norms, masks, softmax) and per-operation overheads.

# %%
roofline = roofline_table(speed["results"])
write_csv(out / "roofline.csv", roofline.reset_index())
display(roofline)
figure = speed_report.plot_roofline(roofline, speed["peak_gflops"])
save_figure(figure, out / "roofline.png")
plt.show()
display(Markdown(speed_report.roofline_reading(roofline)))

# %% [markdown]
# ### bf16: what the faster number format costs the ranking
#
# On GPUs, and on CPUs with bf16 instructions, matrix products in bf16 run about twice as fast as in
# float32 and move half the bytes. bf16 keeps float32's range but only 2–3 significant digits. The
# book keeps kernel pooling and scoring in float32 and lets only the Transformer's products run in
# bf16 (`lib.models.kernels`); what that does to chapter 2's TK-2, re-ranking all 100 candidates of
# each test year (`lib.evaluation.precision_effect`):

# %%
tk2 = artifacts.trained_model(chapter.profile, "tk2", running_on)
bf16_rows = {}
for query_set in sets:
    run = first_stage_runs.bm25_run(chapter.profile, query_set)
    run = {qid: run[qid] for qid in limit_queries(list(run), chapter.profile)}  # the profile's queries
    bf16_rows[query_set] = precision_effect(
        tk2.model, tk2.tokenizer, load_queries(query_set), book_texts(), run, load_qrels(query_set),
        depth=chapter.profile.training.candidate_depth, batch_size=MODELS["tk2"].eval_batch_size,
    )  # fmt: skip
bf16_table = pd.DataFrame(bf16_rows).T
write_csv(out / "bf16_effect.csv", bf16_table.reset_index(names="set"))
display(bf16_table)
display(Markdown(speed_report.bf16_reading(bf16_table)))

# %% [markdown]
# ## Effectiveness at every re-ranking depth
#
# Chapter 2 scored every test candidate once and stored the scores. Re-ranking the top `N` and
# leaving the rest in BM25's order gives the effectiveness at depth `N`, for every `N` from 0 (BM25
# itself) to 100, from that one pass — as the paper did ("we evaluated each model once and then
# pruned the documents, based on their first stage rank, to obtain results for every re-ranking
# depth"). One difference: the paper draws Figure 2 on its validation sets; the book's curves are
# on the test years, because nothing is tuned on them here (the curves only report).

# %%
#: Chapter 2's Table 2 models, and the compact TKs of its ladder (timed stored below: run whole, each is its full TK).
curve_models = list(dict.fromkeys(
    [*models, *(name for name in chapter.profile.training.ladder_models if regime_costs.is_compact(name))]
))  # fmt: skip
curves: dict[str, dict[str, pd.DataFrame]] = {}
first_stage_values: dict[str, dict[str, float]] = {}
for query_set in sets:
    qrels = load_qrels(query_set)
    bm25 = first_stage_runs.bm25_run(chapter.profile, query_set)
    curves[query_set] = {}
    for name in curve_models:
        scores = artifacts.candidate_scores(chapter.profile, query_set, name)
        first_stage = {qid: bm25[qid] for qid in scores}
        curves[query_set][name] = time_budget.depth_curve(first_stage, scores, qrels, measures)
    first_stage_values[query_set] = curves[query_set][models[0]].loc[0].to_dict()
depth_frames = pd.concat(
    [
        curve.reset_index().assign(set=s, model=LABELS[m])
        for s, by in curves.items()
        for m, curve in by.items()
        if m in models
    ]
)
write_csv(out / "depth_curves.csv", depth_frames)
max_depth = int(depth_frames["depth"].max())
glue("max_depth", max_depth, display=False)

# %% tags=["hide-input"]
grid = sns.relplot(data=depth_frames, x="depth", y="nDCG@10", hue="model", col="set", kind="line", height=3.6,
                   aspect=1.3, drawstyle="steps-post")  # fmt: skip
for ax, query_set in zip(grid.axes.flat, sets, strict=True):
    ax.axhline(first_stage_values[query_set]["nDCG@10"], color="0.45", linestyle="--", linewidth=1.2)
    ax.set_title(query_set.upper())
grid.set_axis_labels("re-ranking depth (candidates re-ranked)", "nDCG@10")
save_figure(grid.figure, out / "depth_curves.png")
plt.show()

# %% [markdown]
# The dashed line is BM25 (depth 0). Where a curve falls below it, re-ranking that many candidates
# hurts; the paper's models, trained on MS MARCO, gained most deep in the candidate list (their tuned
# depths in Table 2 are close to 1,000), while the book's learned from a teacher's labels for MS
# MARCO dev-small questions and pseudo-queries cut from book passages (chapter 2). The reading at the end of the chapter
# counts how the book's curves end.
#
# ## Figure 2 at book scale: the models as they are (slides 25–26)
#
# Each model keeps the speed chapter 2 measured on this machine (the second table above). For a
# budget `T`, `depth(T) = min({glue:text}`max_depth`, ⌊T·r⌋)`. The curves are
# step functions that change only at budgets `k / r`; they are evaluated exactly at those
# breakpoints (`lib.evaluation.time_budget`). As in the paper, a filled marker shows each model's best result with
# the number of documents it re-ranks there, and the curve continues dotted where more time brings nothing better.
# That best is read off the test year itself — hindsight, which the paper's figure also uses — so a hollow diamond
# beside it marks the operating point a reader could have chosen in advance: the re-ranking depth chapter 2 tuned on
# validation (its Table 2's "depth"), at the smallest budget that reaches it.


# %%
def speeds_for(view: str) -> dict[str, float]:
    """Each model's speed: "book" — as chapter 2 measured it; "paper" — its paper-size architecture's, timed here."""
    chosen = {name: float(book_speed[name]) for name in models if name in book_speed}
    if view == "paper":  # one clock for all: only the models with a paper-size twin timed here
        return {name: docs_per_ms[PAPER_SPEED_OF[name]] for name in chosen if PAPER_SPEED_OF[name] in docs_per_ms}
    return chosen


def budget_frame(query_set: str, view: str) -> pd.DataFrame:
    """Every model's effectiveness at every breakpoint budget, with BM25 as the never-re-ranking model."""
    speeds = speeds_for(view)
    chosen = {name: curves[query_set][name] for name in speeds}
    budgets = time_budget.breakpoints(speeds, {name: int(c.index.max()) for name, c in chosen.items()})
    chosen["bm25"] = time_budget.first_stage_curve(curves[query_set][models[0]])
    return time_budget.budget_curves(chosen, speeds, budgets)


frames = {(s, view): budget_frame(s, view) for s in sets for view in ("book", "paper")}
for (query_set, view), frame in frames.items():
    write_csv(out / f"budget_curves_{view}_{query_set}.csv", frame)


# %% [markdown]
# With the speeds chapter 2 measured for the book's own models, each test year's Figure 2:

# %% tags=["hide-input"]


validation_depths = {
    row.model: int(row.depth) for row in artifacts.table2(chapter.profile).itertuples() if not pd.isna(row.depth)
}


def show_budget_figure(query_set: str, view: str, title: str) -> None:
    frame = frames[query_set, view]
    figure = plot_budget_curves(
        frame[frame["model"] != "bm25"], measures, first_stage_values[query_set], labels=LABELS, title=title,
        chosen_depths=validation_depths,
    )  # fmt: skip
    save_figure(figure, out / f"figure2_{view}_{query_set}.png")
    plt.show()


for query_set in sets:
    show_budget_figure(query_set, "book", f"{query_set.upper()}: book-scale models, speeds measured here")

# %% [markdown]
# ## Figure 2 in the paper's situation: TK-2 against a BERT-Base-sized BERT-cat
#
# The book's models are smaller than the paper's: TK on 50-d instead of 300-d vectors, BERT-cat on
# MiniLM (384 wide) instead of BERT-Base (768 wide, 12 layers). The paper's question is TK against
# BERT-Base at the paper's sizes. The second view keeps every curve's *effectiveness* from the book
# but gives each model the speed of its paper-size architecture measured above: TK and the
# kernel-pooling models at 300-d, BERT-cat at BERT-Base. The models without a paper-size twin (the teacher,
# the TK on MiniLM) are left out of this view rather than keep their own, smaller clock. It shows the
# mechanism of the paper's Figure 2 — how many candidates each model reaches in a given time — with
# the caveat that a real BERT-Base fine-tuned on MS MARCO would be more effective than the book's
# BERT-cat, so its curve is a lower bound on what BERT would achieve.

# %% tags=["hide-input"]
for query_set in sets:
    show_budget_figure(query_set, "paper", f"{query_set.upper()}: BERT-cat at BERT-Base's measured speed")

# %% [markdown]
# ## Which model is best under which budget
#
# The table gives, for budgets from 1 ms upwards, the model(s) with the best effectiveness (ties
# listed together; "BM25" among them means no re-ranker beats the first stage at that budget) and
# how many candidates TK-2 and BERT-cat re-rank in that time.

# %% tags=["hide-input"]
budget_grid = time_budget.budget_grid(max(frame["budget_ms"].max() for frame in frames.values()))


def leader_table(query_set: str, view: str, measure: str) -> pd.DataFrame:
    speeds = speeds_for(view)
    table = time_budget.best_per_budget(frames[query_set, view], measure, budget_grid)
    table["best model(s)"] = [" = ".join(LABELS[m] for m in tied) for tied in table["leaders"]]
    depths = [f"{LABELS[name]} depth" for name in (*followed_tks, "bert-cat") if name in speeds]
    for name in (*followed_tks, "bert-cat"):
        if name in speeds:
            table[f"{LABELS[name]} depth"] = [
                time_budget.depth_at_budget(b, speeds[name], int(curves[query_set][name].index.max()))
                for b in table["budget_ms"]
            ]
    return table[["budget_ms", "best model(s)", "best", *depths]].rename(
        columns={"budget_ms": "budget (ms)", "best": measure}
    )


leader_tables = {
    (s, view, measure): leader_table(s, view, measure)
    for s in sets
    for view in ("book", "paper")
    for measure in measures
}
for (query_set, view, measure), table in leader_tables.items():
    write_csv(out / f"best_per_budget_{view}_{query_set}_{measure.replace('@', '')}.csv", table)
display(Markdown(f"**{sets[0].upper()}, nDCG@10, BERT-cat at BERT-Base's speed**"))
plain(leader_tables[sets[0], "paper", "nDCG@10"])

# %% [markdown]
# ### Crossovers
#
# The paper summarises Figure 2 as "TK is the best choice up to X ms". The book's analogue, exact
# because the curves are evaluated at every breakpoint: the budget ranges over which each model is
# (among) the best, and the budget from which BERT-cat stays ahead of a TK for good (if it ever does
# within {glue:text}`max_depth` candidates) — for the paper's TK-2 on GloVe and for the TK chapter 2
# chose on validation, {glue:text}`chosen_tk_label`.


# %%
def overall_best(frame: pd.DataFrame, measure: str) -> str:
    """The model(s) reaching the best value of ``measure`` at any budget (ties joined with "=")."""
    table = time_budget.leaders(frame, measure)
    at_best = table[table["best"] >= table["best"].max() - 1e-12]
    return " = ".join(LABELS[m] for m in dict.fromkeys(m for tied in at_best["leaders"] for m in tied))


def crossover_rows(view: str) -> list[dict]:
    rows = []
    for query_set in sets:
        frame = frames[query_set, view]
        for measure in measures:
            spans = time_budget.leading_spans(frame, measure)
            row = {"view": view, "set": query_set.upper(), "measure": measure}
            for name in (tk for tk in followed_tks if tk in set(frame["model"])):  # the paper view: twins only
                overtakes = time_budget.crossover(frame, measure, name, "bert-cat")
                row[f"{LABELS[name]} (among the) best (ms)"] = speed_report.leading_ranges(spans, name)
                row[f"BERT-cat ahead of {LABELS[name]} for good from (ms)"] = (
                    "never" if overtakes is None else f"{overtakes:,.0f}"
                )
            rows.append({**row, "best at any budget": overall_best(frame, measure)})
    return rows


crossover_table = pd.DataFrame(crossover_rows("book") + crossover_rows("paper"))
write_csv(out / "crossovers.csv", crossover_table)
plain(crossover_table)

# %% [markdown]
# ## Two regimes: run whole, or passages stored
#
# Every curve so far charges a model for all of its work at query time. BERT-cat has no choice: it reads
# query and passage together. TK does (§3 of the paper; lecture 8, slides 16–27): it contextualises a passage
# without the query, so an index can hold each passage's vectors, computed once when the collection is
# indexed, and a query pays only for encoding itself, reading its candidates' stored vectors, the match
# matrix and the kernels. ColBERT, PreTTR and the bi-encoder are built for the same split. The paper's time
# budgets (§5.2) were measured with the passage side computed at query time too, so this section measures
# both **regimes** with one clock (`lib.evaluation.regimes`):
#
# - *whole*: everything at query time, as above;
# - *stored*: the candidates' vectors read from an on-disk index — memory-mapped float16, or int8 with a scale
#   per vector — and **the read is timed**; the query is encoded once, then scored against its candidates and
#   sorted. A model whose design cannot store passages (BERT-cat, KNRM, Conv-KNRM) runs whole in both.
#
# Every model chapter 2 trained is timed on the first {glue:text}`regime_queries` DL19 queries with
# {glue:text}`regime_count_list` candidates each (a query's BM25 candidates repeated when it has fewer): the
# median over the queries of each query's median run, after one untimed warm-up. Every model is on **one clock**
# (`lib.evaluation.clock`): the same repetitions, threads and harness, and one precision — bfloat16 for every model
# where the device has native bfloat16 arithmetic (a GPU, or a CPU whose flags say so: run whole under bf16
# autocast, stored with its encoders in bfloat16 and the kernels in float32), float32 for every model where it
# has not. The clock of this run, above the table, is {glue:text}`clock_precision`; the models' nDCG@10 come
# from their float32 runs (chapter 2), except the PQ TK's, scored as it is served (what bf16 does to a
# ranking: the bf16 section above). So is TK-BERT-6 with its
# vectors projected to 64 and 32 dimensions before the kernels, a compact index chapter 2 trains on its ladder
# when the profile has it — stored only: run whole, a compact TK is TK-BERT-6 plus one small projection, whose
# row is already there — and TK-BERT-6's own vectors product-quantised ("PQ", a compact index without training,
# below). A latency whose timing would take longer than the profile allows is estimated on the line
# through the smaller counts and marked "est.". An index's build time is scaled to the book's whole collection.

# %%
#: The TKs of chapter 2's ladder of pre-training depth beyond those (timed for the ladder's verdict below).
ladder_tks = [name for name in chapter.profile.training.ladder_models if is_tk(name) and name not in curve_models]
regime_models = [*curve_models, *ladder_tks]
regime_counts = list(speed_settings.regime_counts)
glue("regime_queries", speed_settings.regime_queries, display=False)
glue("regime_count_list", " / ".join(f"{count:,}" for count in regime_counts), display=False)
clock = regime_costs.clock(chapter.profile, running_on)
write_json(out / "clock.json", clock)
glue("clock_precision", clock["precision"], display=False)
pq = regime_costs.pq_variant(chapter.profile, speed_settings.regime_pq_model, regime_models, running_on, out)
sparse_pq = regime_costs.pq_variant(chapter.profile, regime_costs.sparse_of(speed_settings.regime_pq_model),
                                    regime_models, running_on, out, robustness=False)  # fmt: skip
pqs = [variant for variant in (pq, sparse_pq) if variant is not None]
for variant in pqs:
    LABELS[variant.name] = regime_costs.pq_label(LABELS[variant.source], clock["precision"])
regime_table = regime_costs.regime_table(chapter.profile, regime_models, running_on, out, pqs)
write_csv(out / "regimes.csv", regime_table)
display(plain(pd.DataFrame([clock]).rename(columns={"rule": "repetitions"})))
plain(regimes_reading.cost_display(regime_table, regime_counts, LABELS), precision=1)

# %% [markdown]
# *Bytes / passage: what the index stores per passage (0: nothing stored). Index build: seconds to index the
# whole collection at the measured rate. "est.": estimated, not measured.*
#
# The same measurement on a GPU, committed with the book (`python -m benchmarks.regimes --device cuda`: untrained
# weights of the same architectures, whose speed does not depend on them; bf16 autocast), with the peak GPU memory
# torch held while each row was timed — the weights, a batch's activations and the stored vectors read:

# %%
gpu_regimes = regimes.committed_regimes(paths.REPO_ROOT / "benchmarks" / "results" / "regimes", LABELS)
if gpu_regimes.empty:
    display(Markdown("*No GPU cost table is committed under `benchmarks/results/regimes/` yet.*"))
else:
    display(plain(gpu_regimes, precision=1))
    display(Markdown(regimes_reading.stored_slower(gpu_regimes)))

# %% [markdown]
# Where a stored index loses on a GPU, the reason is the read: a model run whole is a few large matrix products the
# GPU is built for, while a stored index is read from the host's memory-mapped file and copied to the GPU, the
# bytes per passage above for every candidate. The smaller the index, the less the stored regime pays for it.
#
# A server would not read its index from the host for every query: it loads the index into the GPU's memory once
# and gathers the candidates' vectors there (the regime *resident*, `--resident`; ColBERT's and PreTTR's way of
# serving). Where a device timed it, each stored model's three regimes side by side at the largest count, and how
# many times faster than BERT-cat run whole the resident index answers — the thesis's comparison on a GPU:

# %%
resident = regimes.resident_table(gpu_regimes, LABELS["bert-cat"]) if not gpu_regimes.empty else pd.DataFrame()
if resident.empty:
    display(Markdown("*No committed GPU cost table timed the resident regime yet.*"))
else:
    display(plain(resident, precision=1))

# %% [markdown]
# ### When the index no longer sits in memory
#
# The stored rows above read an index of the timed candidates alone, written just before and warmed by the warm-up
# run: its pages are in memory. At MS MARCO's 8.8 million passages an index is tens to hundreds of gigabytes, and a
# query's candidates are scattered over it. `python -m benchmarks.cold_reads` asks what a cold read costs: the book's
# passages encoded for real and the index padded with copies of them to a collection's size (`--passages`, a million
# by default; for timing only), each query's candidates mapped to random copies, timed warm and with the index's
# pages evicted before every run (`posix_fadvise(POSIX_FADV_DONTNEED)`, checked with `mincore`), read three ways:
# through the kernel's default memory map, whose page faults read its read-ahead window around each page (*cold*);
# mapped for random access, one page a fault, one fault after the other (*cold-random*); and as this chapter's stored
# regime reads its index (*cold-prefetched*): mapped for random access, with every candidate's rows asked for at once
# (`madvise(MADV_WILLNEED)`) before the query is encoded, so that the disk reads them in parallel while the query is
# encoded. Untrained weights of the same architectures, timed by this chapter's clock rule on the benchmark's own
# machine (its precision named in each bullet below); the committed results:

# %% tags=["hide-input"]
cold = cold_reads.committed_cold_reads(paths.REPO_ROOT / "benchmarks" / "results" / "cold", labels=LABELS
                                       | {"tk-bert6-pq": f"{LABELS.get('tk-bert6', 'TK-BERT-6')} (PQ)"})  # fmt: skip
if not cold.empty:
    display(plain(cold.drop(columns=["device", "date"]), precision=1))
display(Markdown(regimes_reading.cold_reading(cold, 100)))

# %% [markdown]
# Each model's cost in each regime, read off the table as a fixed cost per query (what a query costs before its
# first candidate: above all encoding the query when passages are stored) plus a cost per candidate — the line
# through its latencies at
# {glue:text}`regime_low` and {glue:text}`regime_high` candidates (`lib.evaluation.regimes.query_cost`); in the
# stored regime the cheaper of its two indexes:

# %% tags=["hide-input"]
costs = regime_costs.regime_costs(regime_table, regime_counts)
glue("regime_low", f"{sorted(regime_counts)[0]:,}", display=False)
glue("regime_high", f"{sorted(regime_counts)[1]:,}", display=False)
cost_table = pd.DataFrame(
    [
        {"model": LABELS[name], "regime": regime, "index": cost.dtype, "fixed ms / query": round(cost.fixed_ms, 2),
         "docs / ms": round(cost.docs_per_ms, 3)}
        for regime, by_model in costs.items()
        for name, cost in by_model.items()
    ]
)  # fmt: skip
write_csv(out / "regime_costs.csv", cost_table)
cost_table.pivot(index="model", columns="regime", values=["fixed ms / query", "docs / ms"])

# %% [markdown]
# ### Figure 2 in both regimes
#
# The same effectiveness curves as above, each model at its cost in each regime, and in the stored regime the
# product-quantised TK ("A compact TK index" below), at its index's cost and with its runs scored from that index. The
# teacher — the MiniLM bi-encoder whose scores every student learned from (chapter 2) — is drawn dashed: a
# reference line, not a contestant.

# %%
TEACHER = "bi-encoder"
regime_curve_models = [*curve_models, *([pq.name] if pq is not None else [])]
for query_set in sets if pq is not None else []:
    bm25, runs = first_stage_runs.bm25_run(chapter.profile, query_set), pq.runs[query_set]
    curves[query_set][pq.name] = time_budget.depth_curve(
        {qid: bm25[qid] for qid in runs}, runs, load_qrels(query_set), measures
    )

# %% [markdown]
# Each regime's budgets are the breakpoints where some model's depth changes; BM25 is the model that never re-ranks.


# %%
def regime_frame(query_set: str, regime: str) -> pd.DataFrame:
    """Every model's effectiveness at every breakpoint budget of ``regime``, BM25 as the never-re-ranking model."""
    cost = {name: item for name, item in costs[regime].items() if name in regime_curve_models}
    speeds = {name: item.docs_per_ms for name, item in cost.items()}
    fixed = {name: item.fixed_ms for name, item in cost.items()}
    chosen = {name: curves[query_set][name] for name in cost}
    budgets = time_budget.breakpoints(speeds, {name: int(c.index.max()) for name, c in chosen.items()}, fixed)
    chosen["bm25"] = time_budget.first_stage_curve(curves[query_set][models[0]])
    return time_budget.budget_curves(chosen, speeds, budgets, fixed)


regime_frames = {(s, regime): regime_frame(s, regime) for s in sets for regime in regime_costs.REGIMES}
for (query_set, regime), frame in regime_frames.items():
    write_csv(out / f"budget_curves_{regime}_{query_set}.csv", frame)
for query_set in sets:
    figure = plot_regimes(
        {regime: regime_frames[query_set, regime].query("model != 'bm25'") for regime in regime_costs.REGIMES},
        "nDCG@10", first_stage_values[query_set]["nDCG@10"], LABELS, teacher=TEACHER,
        title=f"{query_set.upper()}: nDCG@10 under a time budget, passages computed at query time or stored",
    )  # fmt: skip
    save_figure(figure, out / f"figure2_regimes_{query_set}.png")
    plt.show()

# %% [markdown]
# ### The best student under each budget, in each regime
#
# Among the students (every model but the teacher; BM25 counts, "BM25" among the best means no student beats
# the first stage there), with the teacher's value beside them:

# %% tags=["hide-input"]
regime_grid = time_budget.budget_grid(max(frame["budget_ms"].max() for frame in regime_frames.values()))
student_tables = {
    s: time_budget.student_leaders(
        {regime: regime_frames[s, regime] for regime in regime_costs.REGIMES}, TEACHER, regime_grid, LABELS, "nDCG@10"
    )
    for s in sets
}
for query_set, table in student_tables.items():
    write_csv(out / f"best_student_per_budget_{query_set}.csv", table)
    display(Markdown(f"**{query_set.upper()}, nDCG@10**"))
    display(plain(table))

# %% [markdown]
# ### Tested: {glue:text}`chosen_tk_label` against BERT-cat under each budget
#
# Where two curves cross, a point estimate over a few dozen queries says little. Each cell is the difference of
# nDCG@10 ({glue:text}`chosen_tk_label` − BERT-cat), the depths each re-ranks under that budget, and the paired
# two-tailed t-test's p over the year's judged queries, Bonferroni-corrected over the budgets of the column;
# `*`: significant at 0.05.

# %%
regime_tests = {}
for query_set in sets:
    bm25 = first_stage_runs.bm25_run(chapter.profile, query_set)
    pair = {name: artifacts.candidate_scores(chapter.profile, query_set, name) for name in (chosen_tk, "bert-cat")}
    first_stage = {qid: bm25[qid] for qid in pair[chosen_tk]}
    for regime in regime_costs.REGIMES:
        pair_costs = {name: (costs[regime][name].fixed_ms, costs[regime][name].docs_per_ms) for name in pair}
        regime_tests[query_set, regime] = time_budget.paired_at_budgets(
            first_stage, pair, pair_costs, load_qrels(query_set), regime_grid, "nDCG@10"
        )
write_csv(
    out / "regime_tests.csv",
    pd.concat([frame.assign(set=s, regime=r) for (s, r), frame in regime_tests.items()], ignore_index=True),
)
plain(regimes_reading.tests_display(regime_tests))

# %% [markdown]
# ### A compact TK index
#
# TK-BERT-6 stores MiniLM's 384 numbers for every word piece of a passage: in float16, tens of kilobytes per
# passage, more than the passage's text. ColBERT's answer is a smaller vector per piece (its dimension
# ablation {cite}`khattab2020colbert`); the book gives TK the same: a learned linear projection of the
# contextualised vectors to 64 or 32 dimensions before the kernels, trained on chapter 2's protocol (its
# ladder). Where that training starts is a setting decided on validation (`compact_start`, in the decisions
# table, {doc}`../build_times_and_decisions`): MiniLM with a random orthogonal projection, or chapter 2's trained
# TK-BERT-6 with the projection set to the leading directions of its own unit vectors over training passages (the
# best rank-d approximation of their inner products).
#
# A projection must be trained, and changes the model. **Product quantisation** {cite}`jegou2011pq` changes only
# the index: it cuts each of the full TK's stored vectors into {glue:text}`pq_subspaces` sub-vectors (runs of two
# widths where that number does not divide the vector's) and stores, for
# each, the number of the nearest of 256 centroids learned for its subspace by k-means — {glue:text}`pq_subspaces`
# bytes per vector instead of 2 × {glue:text}`pq_width` in float16 (ColBERTv2 compresses ColBERT's vectors in the
# same spirit {cite}`santhanam2022colbertv2`). How many sub-vectors is chosen on validation, never on a test year: a
# quantiser is fitted for each of {glue:text}`pq_grid`, and the smallest whose nDCG@10 on the validation queries'
# top BM25 candidates is within {glue:text}`pq_tolerance` of the unquantised (float16) index's is kept (the table
# below the compact indexes). At query time the codes are never decoded: TK reads a stored vector
# only through its cosine with each query vector (eq. 4), so the query's dot products with all 256 centroids of
# every subspace are tabulated once, and a stored vector's cosine is a sum of {glue:text}`pq_subspaces` table
# entries over the root of a sum of its centroids' squared lengths — the cosine of the decoded vector, computed
# without it (the *asymmetric distance computation* of the PQ paper). The codebooks are fitted, without a label, on
# the vectors of {glue:text}`pq_fit_count` of chapter 2's training passages (their ids in `pq_fit_passages.txt` of
# the chapter's artifacts): they come from the book corpus, the pool of every query set's candidates, and
# {glue:text}`pq_fit_in_pools` of them are also candidates a test year re-ranks — an index's codebooks are fitted on
# the collection it indexes (ColBERTv2 fits its centroids so), and the book's index is the test years' candidates.
# The test years' candidates are then scored from the index,
# so the table's nDCG@10 is what the compressed index ranks (fitting and scoring both years took
# {glue:text}`pq_minutes` minutes). A stored query's largest cost is then encoding the query: MiniLM layers whose
# weights are all read for a handful of pieces. The PQ TK is served on the table's clock, in
# {glue:text}`clock_precision` (`lib.models.bfloat16_encoders`: where that is bfloat16, its encoders run from a
# bfloat16 copy of its weights and the kernels stay in float32), its codebooks are fitted on the vectors it
# indexes, and its runs are scored as it is served.
#
# A third way stores **fewer vectors**: contextualised stopwords (TK-Sparse, slides 30–33; chapter 8 sweeps the
# share it removes on TK-2). {glue:text}`sparse_label` is the same TK with TK-Sparse's gate after the
# contextualisation, trained in chapter 2 on the same protocol, {glue:text}`sparse_start` (the training setting
# `sparse_start`), to remove {glue:text}`sparse_target` of the passage pieces it sees (the share chapter 8's sweep
# chose for TK-2 on validation, ramped in over its first
# {glue:text}`sparse_ramp` steps). A removed piece adds nothing to the score and is not stored; a kept one is stored
# and scored as the full TK's, in every precision ({glue:text}`sparse_pq_subspaces` codes product-quantised, chosen
# on validation by the same rule). The table's *vectors / passage* counts what each index stores for a timed
# passage.
#
# Each compact index beside the full one, with each year's nDCG@10 re-ranking all candidates and paired t-tests
# (Bonferroni over the year's pairs; `*`: significant) against BM25, against the full TK and against BERT-cat, each
# read with its sign ("above", "below" or "no difference"):

# %% tags=["hide-input"]
glue("pq_subspaces", str(pq.quantiser.subspaces if pq is not None else "m"), display=False)
glue("pq_grid", ", ".join(map(str, speed_settings.regime_pq_subspaces)), display=False)
glue("pq_tolerance", f"{speed_settings.regime_pq_tolerance:g}", display=False)
glue("pq_width", str(pq.quantiser.dim if pq is not None else "d"), display=False)
glue("pq_minutes", f"{pq.seconds / 60:.1f}" if pq is not None else "–", display=False)
glue("pq_fit_count", f"{pq.fit_passages:,}" if pq is not None else "–", display=False)
glue("pq_fit_in_pools", f"{pq.fit_in_test_pools:,}" if pq is not None else "–", display=False)
glue("pq_fit_outside", f"{pq.fit_outside:,}" if pq is not None else "–", display=False)
glue("sparse_label", LABELS[regime_costs.sparse_of(speed_settings.regime_pq_model)], display=False)
glue("sparse_target", f"{BERT_REMOVAL_TARGET:.0%}", display=False)
training = settings_record.read_settings(artifacts.training_settings(chapter.profile))[0]
glue("sparse_ramp", f"{fitted_ramp(BERT_RAMP_STEPS, training.bert_cat_max_steps):,}", display=False)
sparse_starts = {"minilm": "from MiniLM's weights", "tk-bert6": "from the trained TK-BERT-6 with a new gate"}
glue("sparse_start", sparse_starts[training.sparse_start], display=False)
glue("sparse_pq_subspaces", str(sparse_pq.quantiser.subspaces) if sparse_pq is not None else "–", display=False)

# %%
full_tk = pq.source if pq is not None else "tk-bert6"
compact = [name for name in regime_models if regime_costs.is_compact(name)]
compact_names = [full_tk, *compact, *(variant.name for variant in pqs)]
rivals = ("bert-cat",) if "bert-cat" in regime_models else ()
if full_tk in regime_models and len(compact_names) > 1:
    compact_values = {}
    for query_set in sets:
        bm25, qrels = first_stage_runs.bm25_run(chapter.profile, query_set), load_qrels(query_set)
        runs = {
            name: artifacts.candidate_scores(chapter.profile, query_set, name) for name in [full_tk, *compact, *rivals]
        }
        runs.update({variant.name: variant.runs[query_set] for variant in pqs})
        first_stage = {qid: bm25[qid] for qid in runs[full_tk]}
        by_model = {
            name: time_budget.per_query_at_depth(first_stage, scores, qrels, max_depth, "nDCG@10")
            for name, scores in runs.items()
        }
        by_model["bm25"] = time_budget.per_query_at_depth(first_stage, runs[full_tk], qrels, 0, "nDCG@10")
        compact_values[query_set] = by_model
    compact_frame = regimes.compact_table(regime_table, compact_values, compact_names, full_tk, LABELS, rivals)
    write_csv(out / "compact_tk.csv", compact_frame)
    exact = {column: 3 if "nDCG" in column else 0 for column in compact_frame if "nDCG" in column or "bytes" in column}
    display(plain(compact_frame, precision=1, decimals=exact))
    rival_ms = float(regime_table.query("model == 'bert-cat' and regime == 'whole'")["ms_100"].iloc[0])
    compact_costs = regimes.compact_costs(compact_frame, LABELS[full_tk], rival_ms, 100, LABELS["bert-cat"])
    display(Markdown(regimes_reading.compact_reading(compact_costs, LABELS[full_tk], LABELS["bert-cat"])))
else:
    display(Markdown(f"*The `{chapter.profile.name}` profile has no compact TK (chapter 2's `ladder_models`).*"))

# %% [markdown]
# How many codes, chosen on validation — for each product-quantised TK, each number of sub-vectors tried, its
# validation nDCG@10 against the unquantised index's, and the one kept (the smallest within
# {glue:text}`pq_tolerance`):

# %%
if pqs:
    pq_choice = pd.concat([
        regimes_reading.pq_choice(LABELS[variant.source], variant.validation, variant.quantiser.subspaces,
                                  speed_settings.regime_pq_tolerance)
        for variant in pqs
    ])  # fmt: skip
    write_csv(out / "pq_choice.csv", pq_choice)
    display(plain(pq_choice, decimals={"validation nDCG@10": 3, "difference": 3}))

# %% [markdown]
# Does the book's fit, {glue:text}`pq_fit_in_pools` of whose passages a test year re-ranks, flatter the index? The
# same index read through codebooks of as many codes fitted on {glue:text}`pq_fit_outside` training passages that
# no test year re-ranks (`lib.experiments.compact_tk.passages_outside`), each year's nDCG@10 beside the book's with a
# paired t-test:

# %%
if pq is not None:
    robustness_values = {}
    for query_set in sets:
        bm25, qrels = first_stage_runs.bm25_run(chapter.profile, query_set), load_qrels(query_set)
        robustness_values[query_set] = {
            key: time_budget.per_query_at_depth({qid: bm25[qid] for qid in by_set[query_set]}, by_set[query_set], qrels,
                                                max_depth, "nDCG@10")
            for key, by_set in pq.index_runs.items() if key in (regime_costs.PQ_OUTSIDE, "pq")
        }  # fmt: skip
    robustness = regimes_reading.fit_robustness(robustness_values, "pq", regime_costs.PQ_OUTSIDE)
    write_csv(out / "pq_fit_robustness.csv", robustness)
    display(plain(robustness, decimals={c: 3 for c in robustness.select_dtypes("number").columns}))

# %% [markdown]
# ### Where the speed-up comes from
#
# The PQ TK's factor over BERT-cat — here a {glue:text}`rival_name`, not the paper's BERT-Base — is several
# effects in one number. One step a row, on the table's clock: the PQ TK's own full TK run whole
# (the architecture), then its passages stored at index time in float16, then int8, then product-quantised (the
# index). Each row's nDCG@10 re-ranks every candidate — the stored rows' runs scored from their own index, encoded
# as served — with paired t-tests against the step before and against the cross-encoder (Bonferroni over every
# pair of steps; "above" / "below" read from the sign and the test together):

# %%
glue("rival_name", CROSS_ENCODERS[chapter.profile.training.bert_cat_start], display=False)
if pq is not None and "bert-cat" in regime_models:
    rival = CROSS_ENCODERS[chapter.profile.training.bert_cat_start]
    steps = speedup_steps.chain(rival, full_tk, pq.name, list(speed_settings.regime_dtypes), LABELS)
    step_values = {}
    for query_set in sets:
        bm25, qrels = first_stage_runs.bm25_run(chapter.profile, query_set), load_qrels(query_set)
        step_runs = {"bert-cat": artifacts.candidate_scores(chapter.profile, query_set, "bert-cat"),
                     full_tk: artifacts.candidate_scores(chapter.profile, query_set, full_tk),
                     **{f"{full_tk}-{dtype}": runs[query_set] for dtype, runs in pq.index_runs.items()}}  # fmt: skip
        step_values[query_set] = {
            name: time_budget.per_query_at_depth({qid: bm25[qid] for qid in run}, run, qrels, max_depth, "nDCG@10")
            for name, run in step_runs.items()
        }
    step_frame = speedup_steps.step_table(regime_table, steps, step_values, regime_counts[-2:])
    write_csv(out / "speedup_steps.csv", step_frame)
    display(plain(step_frame, precision=1, decimals={c: 3 for c in step_frame if "nDCG" in c}))
    figure = speedup_steps.plot_steps(step_frame, regime_counts[-2], "From the cross-encoder run whole to the PQ TK")
    save_figure(figure, out / "speedup_steps.png")
    plt.show()
else:
    display(Markdown(f"*The `{chapter.profile.name}` profile has no PQ TK or no BERT-cat to decompose.*"))

# %% [markdown]
# ### The ladder's verdict in both regimes
#
# Chapter 2 asked whether a TK that beats BM25 is fast enough to be worth having — at least 5× BERT-cat's
# documents per millisecond — and measured it run whole. Each TK of its ladder at 100 candidates per query, run
# whole and with its passages stored, against BERT-cat (which can only run whole), on this table's clock:

# %%
verdict = regimes.ladder_verdict(regime_table, [n for n in regime_models if is_tk(n)], "bert-cat", LABELS)
write_csv(out / "ladder_verdict.csv", verdict)
plain(verdict, precision=1)

# %% [markdown]
# What the two regimes say, year by year:

# %%
regime_tks = [*(name for name in regime_models if is_tk(name)), *([pq.name] if pq is not None else [])]
display(Markdown(regimes_reading.regimes_reading(regime_frames, regime_tests, TEACHER, regime_tks, LABELS)))

# %% [markdown]
# ## What holds at book scale, and what does not

# %%
paper_speeds = {name: ARCHITECTURES[name].paper_docs_per_ms for name in timed if ARCHITECTURES[name].paper_docs_per_ms}
architecture_labels = {name: ARCHITECTURES[name].label for name in paper_speeds}
order_sentence = speed_report.speed_order_sentence(paper_speeds, docs_per_ms, architecture_labels)
speeds_paper = speeds_for("paper")
depth_100 = {name: time_budget.depth_at_budget(100.0, speeds_paper[name], max_depth) for name in ("tk2", "bert-cat")}
below_at_full = [
    f"{LABELS[name]} on {query_set.upper()}"
    for query_set in sets
    for name in models
    if curves[query_set][name]["nDCG@10"].iloc[-1] < first_stage_values[query_set]["nDCG@10"]
]
strictly_better = {
    (s, m): bool(time_budget.leaders(frames[s, "book"], m)["leaders"].map(lambda t: "bm25" not in t).any())
    for s in sets
    for m in measures
}
never = [f"{m} on {s.upper()}" for (s, m), beats in strictly_better.items() if not beats]
best_models = {(s, m): overall_best(frames[s, "book"], m) for s in sets for m in measures}
headline = leader_tables[sets[0], "paper", "nDCG@10"].set_index("budget (ms)")
at_100 = headline.loc[100, "best model(s)"] if 100 in headline.index else "–"
chosen_leads = {s: speed_report.leading_ranges(time_budget.leading_spans(frames[s, "book"], "nDCG@10"), chosen_tk)
                for s in sets}  # fmt: skip

# %%
#: The paper's order of effectiveness, weakest first, with the chosen TK as TK; tested on per-query nDCG@10.
order_models = [name for name in ("knrm", "conv-knrm", chosen_tk, "bert-cat") if name in models]
order_values = {
    s: [
        time_budget.per_query_at_depth(
            {qid: first_stage_runs.bm25_run(chapter.profile, s)[qid] for qid in scores},
            scores,
            load_qrels(s),
            max_depth,
            "nDCG@10",
        )
        for scores in (artifacts.candidate_scores(chapter.profile, s, name) for name in order_models)
    ]
    for s in sets
}

# %% [markdown]
# What this run's numbers say, one finding of the paper at a time:

# %%
reading = [
    speed_report.speed_finding(order_sentence, ratio, depth_100),
    speed_report.depth_finding(below_at_full, len(sets) * len(models), max_depth),
    speed_report.budget_finding(never, sets[0], best_models[sets[0], "nDCG@10"], at_100),
    speed_report.chosen_tk_finding(LABELS[chosen_tk], chosen_leads),
    speed_report.order_finding(max_depth, LABELS[chosen_tk], order_values, [LABELS[m] for m in order_models]),
    regimes_reading.thesis_finding(
        student_tables[sets[0]],
        {r: regime_tests[sets[0], r] for r in regime_costs.REGIMES},
        sets[0],
        [10, 50, 100, 500],
        LABELS,
    ),
    speed_report.MECHANISM_FINDING,
]
display(Markdown("\n".join(reading)))

# %% tags=["hide-input"]
summary = {
    "profile": chapter.profile.name,
    "device": speed["device"],
    "tk2_bert_base_ratio": ratio,
    "docs_per_ms": docs_per_ms,
    "crossovers": crossover_table.to_dict(orient="records"),
    "chosen_tk": chosen_tk,
    "chosen_tk_leads_ms": chosen_leads,
}
chapter.finish(summary)
