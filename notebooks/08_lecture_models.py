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
# # BERT-cat, PreTTR, ColBERT, TK and TK-Sparse, side by side
#
# Lecture 8 of the TU Wien course *Advanced Information Retrieval* {cite}`hofstaetter2021lecture8`
# tells one story: BERT re-ranks well, but it runs once for every (query, passage) pair, and a search
# engine has milliseconds per query ({cite}`nogueira2019passage` for BERT-cat). Every model after
# BERT-cat in the lecture moves work away from query time. **PreTTR** {cite}`macavaney2020prettr`
# runs BERT's first layers on the passage alone, so they can run at indexing time; **ColBERT**
# {cite}`khattab2020colbert` runs all of BERT on the passage alone and compares token vectors at query
# time; **TK** {cite}`hofstaetter2020tk` drops BERT for two small Transformer layers and kernel
# pooling; **TK-Sparse** {cite}`hofstaetter2020tksparse` learns which passage words need not be
# stored at all. Slide 27 compares them by effectiveness, query latency and
# what they need.
#
# This chapter builds that comparison on the book's data, one section per block of slides, in the lecture's order.
# Every model learns from the same teacher with the protocol of {doc}`02_training` (Margin-MSE on the same
# teacher-labelled triples, early stopping on chapter 2's validation queries) and is tested on DL19 and DL20,
# re-ranking the official BM25 top-100 — but not for the same number of steps: chapter 2's BERT-cat and TKs ran
# their whole schedules, while ColBERT trains for {glue:text}`colbert_budget`, PreTTR for
# {glue:text}`prettr_budget` and TK-Sparse for {glue:text}`tk2-sparse_budget` (a budget sized for two CPU cores;
# the protocol below). Query latency is measured on this machine, with real
# candidates, both running the whole model at query time and with the passage side stored where the architecture
# allows. Each section ends with questions for students; cells marked as exercises become a student notebook with
# `make exercises`.
#
# ```{admonition} Terms from other chapters
# :class: tip
# - **Teacher**: the zero-shot MiniLM bi-encoder whose scores every model here learns from ({doc}`02_training`);
#   it is labelled "(teacher)" wherever it appears: a reference, not a contestant.
# - **Test years, validation**: DL19 and DL20 are only tested on; every setting is chosen on DL21's judged queries
#   (validation).
# - **Run whole, passages stored**: the two regimes of {doc}`03_time_budget` — every layer computed at query time,
#   or the passage side computed at indexing time and read from an index (float16, int8 or product-quantised).
# - **Chosen TK, ladder**: chapter 2 trains TKs on ever deeper pre-trained word vectors (GloVe, BERT's static
#   pieces, BERT's first 1–6 layers: the ladder) and chooses one on validation: the chosen TK.
# - **Decisions table**: every setting that differs from its profile's default, with the evidence that set it
#   (validation, the paper, a budget or a cost): {doc}`../build_times_and_decisions`.
# - **p, `*`**: a paired two-tailed t-test over the year's judged queries, Bonferroni-corrected over the models
#   compared; `*` marks p < 0.05. An order between two models is claimed only where it is significant.
# ```

# %% tags=["parameters"]
profile = "book"  # smoke | book | paper
device = "auto"  # "auto" takes a CUDA GPU when there is one; latency is then measured on it
seed = 42  # seeds the models trained here
# None keeps the profile's default (lib.core.profiles.PROFILES, section `lecture`)
latency_counts = None  # candidates per query timed for PreTTR's splits, e.g. [100, 1000]

# %% tags=["hide-input"]
import time

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from IPython.display import Image, Markdown, display
from myst_nb import glue
from tqdm import tqdm

from lib.analyses import stopword_gate
from lib.chapters import lecture_comparison, slide_claims
from lib.chapters.prologue import start_chapter
from lib.chapters.tables import plain
from lib.chapters.time_budget_figure import plot_regimes
from lib.core import paths
from lib.core.atomic import write_csv
from lib.core.plotting import save_figure
from lib.data import read_run
from lib.data.registry import sha256_of
from lib.evaluation import comparison, query_latency, regimes, split_sweep, time_budget
from lib.evaluation.efficiency import device_name
from lib.experiments import artifacts, model_runs, model_setup, mono_duo, regime_costs, sparsity_sweep, stored_rivals
from lib.models.prettr import PreTTR
from lib.models.registry import label, model_spec
from lib.representations.text import DOC_MAX_LENGTH

CHAPTER = "08_lecture_models"
chapter = start_chapter(CHAPTER, profile, seed, device, section="lecture", overrides={"latency_counts": latency_counts})
out, lecture = chapter.out, chapter.settings
lecture

# %% [markdown]
# ## The protocol: chapter 2's teacher and test years
#
# ColBERT starts, like chapter 2's BERT-cat, from all-MiniLM-L6-v2 (the layers and rates of chapter 2's settings)
# and trains on chapter 2's BERT-cat schedule; TK-Sparse starts, like TK-2, from GloVe vectors and trains on
# TK-2's schedule. PreTTR starts from chapter 2's fine-tuned BERT-cat, split where its section below chooses, and
# is trained there. The teacher, the triples, the validation year and the test years are chapter 2's; the number
# of training steps need not be. The trainings here stop by rule where the profile sets a budget
# (`lecture.stop_at`, `lecture.duo_stop_at`; the book profile's is sized for two CPU cores and is
# recorded, with what each cut cost on validation, in the decisions table, {doc}`../build_times_and_decisions`):
# ColBERT after {glue:text}`colbert_budget`, PreTTR after {glue:text}`prettr_budget`, the duo model after
# {glue:text}`duo_budget`, TK-Sparse (and every run of slides 31–32) after {glue:text}`tk2-sparse_budget` — each with
# its learning rate as over the whole schedule, so the weights are those the whole run passes through. Chapter 2's
# BERT-cat and TKs, which they are compared with, trained their whole schedules (early stopping aside): a difference
# below is the architecture's together with its training budget (and, for PreTTR, its head start).

# %%
start = time.perf_counter()
tilde_latency = artifacts.tilde_latency(chapter.profile)  # read first: chapter 6 missing is said before any training
settings, protocol_seed, protocol = artifacts.training_protocol(chapter.profile)
representations = model_setup.prepare_representations(chapter.with_seed(protocol_seed), settings, with_small_bert=False)
print(f"{len(protocol.triples):,} training triples; protocol ready in {time.perf_counter() - start:.0f} s")
layers = PreTTR(representations.bert_path, num_layers=settings.bert_cat_layers).bert.config.num_hidden_layers
glue("bert_layers", f"{layers}", display=False)
glue("bert_steps", f"{settings.bert_cat_max_steps}", display=False)
stops = {**lecture.stop_at, "duo": lecture.duo_stop_at}  # the budget's cuts (lib.core.decisions)
lengths = {"colbert": settings.bert_cat_max_steps, "prettr": settings.bert_cat_max_steps,
           "tk2-sparse": settings.max_steps, "duo": lecture.duo_max_steps}  # fmt: skip
for name, steps in lengths.items():
    glue(f"{name}_budget", f"{stops.get(name) or steps} of its {steps} steps", display=False)

# %%
trained, seconds = {}, {}
for name in (name for name in lecture.models if name != "prettr"):  # PreTTR: in its section, from BERT-cat
    start = time.perf_counter()
    budget = model_runs.RunVariant(stop_at=lecture.stop_at.get(name))
    trained[name] = model_runs.run_model(name, protocol, representations, settings, chapter, variant=budget)
    seconds[name] = time.perf_counter() - start
write_csv(out / "training_seconds.csv", pd.DataFrame({"model": list(seconds), "seconds": list(seconds.values())}))
pd.DataFrame(
    [
        {"model": label(name), "best step": results["dl19"].best_step,
         f"validation {settings.validation_metric}": results["dl19"].training.best_metric, "seconds": seconds[name]}
        for name, results in trained.items()
    ]
).set_index("model").round(3)  # fmt: skip

# %% [markdown]
# ## BERT-cat (slides 7–11)
#
# BERT-cat reads `[CLS] query [SEP] passage [SEP]` through every layer, so each query term attends to
# each passage term, and a linear layer turns the `[CLS]` vector into the score. Chapter 2 trained it on
# {glue:text}`bert_layers` MiniLM layers for {glue:text}`bert_steps` steps ({doc}`02_training`). Slide 11's point
# is the size of the jump over BM25; here it is on the test years, re-ranking every candidate, with the teacher
# it learned from beside it (each tested against BM25):

# %%
bm25_frames = {}
for query_set, qs in protocol.tests.items():
    runs = {"bm25": qs.run, **{name: read_run(chapter.run_path(query_set, name + model_runs.ALL_CANDIDATES))
                               for name in ("bi-encoder", "bert-cat")}}  # fmt: skip
    bm25_frames[query_set] = comparison.compare(runs, qs.qrels, ["nDCG@10"], baseline="bm25")
bert_cat_labels = {"bm25": "BM25", "bi-encoder": label("bi-encoder") + " (teacher)", "bert-cat": label("bert-cat")}
plain(lecture_comparison.effectiveness_table(bm25_frames, bert_cat_labels).reset_index(), precision=3)

# %% tags=["hide-input"]
display(Markdown(slide_claims.claim_sentence(
    "11", "BERT-cat is far more effective than BM25", label("bert-cat"), "BM25",
    slide_claims.year_orders(bm25_frames, "bert-cat"), "above",
)))  # fmt: skip

# %% [markdown]
# ## Mono-duo: BERT-cat's top again, in pairs (slide 12)
#
# Slide 12's pattern re-ranks twice: a *mono* model (BERT-cat) scores every candidate alone, then a *duo* model
# reads the query and **two** passages, `[CLS] q [SEP] d_i [SEP] d_j [SEP]`, and gives the probability `p_ij` that
# `d_i` is the more relevant. It scores every ordered pair of mono's top *k*, and each passage's duo score is the
# sum of its probabilities of beating the others (SUM, one of the aggregations of Nogueira et al.'s duoBERT
# paper {cite}`nogueira2019multistage`; the pattern's name is Pradeep et al.'s {cite}`pradeep2021expando`). The
# book's duo model starts from chapter 2's fine-tuned BERT-cat encoder with a new head, learns the teacher's margin
# with its sign from both orders of chapter 2's triples (`lib.training.duo`; the papers train on MS MARCO's labels,
# which the book's training queries do not have), and is validated on the validation queries' mono top *k*, for
# {glue:text}`duo_budget` (the budget above) — a short schedule, since every row is a query and two passages:

# %%
start = time.perf_counter()
mono = artifacts.trained_model(chapter.profile, "bert-cat", chapter.device)
duo_result = mono_duo.run_mono_duo(mono.model, mono.tokenizer, protocol, settings, lecture, chapter)
duo_seconds = time.perf_counter() - start
duo_training = duo_result.training
print(
    f"duo model: best {settings.validation_metric} {duo_training.best_metric:.3f} on validation at step "
    f"{duo_training.best_step} of {duo_training.steps}; trained, validated and applied in {duo_seconds:.0f} s"
)

# %% [markdown]
# Both test years, mono's ranking against mono-duo's, the duo re-ranking mono's top {glue:text}`duo_top_k` (a
# paired two-tailed t-test per year), with the duo's cost: {glue:text}`duo_passes` passes per query, timed per
# query on {glue:text}`duo_device`:

# %%
duo_table = mono_duo.mono_duo_table(duo_result, protocol.tests, settings.validation_metric)
write_csv(out / "mono_duo.csv", duo_table)
glue("duo_top_k", f"{duo_result.top_k}", display=False)
glue("duo_passes", f"{duo_result.top_k * (duo_result.top_k - 1)}", display=False)
glue("duo_device", device_name(chapter.device), display=False)
plain(duo_table, precision=3)

# %% tags=["hide-input"]
display(Markdown(lecture_comparison.mono_duo_reading(duo_table, settings.validation_metric)))

# %% [markdown]
# ```{admonition} Questions
# 1. How many duo passes would re-ranking the top 20 take, and the top 100? Why is the duo step applied to the
#    top only?
# 2. Slide 13 scores long documents with a sliding window and takes the best window. What does that
#    do to the cost per document?
# ```
#
# ```{admonition} Answers
# :class: dropdown
# 1. One pass per ordered pair: 20 × 19 = 380 and 100 × 99 = 9,900, each on a sequence about twice as long as
#    BERT-cat's. The count grows with the square of the depth, so the duo step only re-orders the few candidates
#    that matter most to the top of the ranking.
# 2. It multiplies it by the number of windows: every window is one more BERT-cat pass.
# ```
#
# ## Efficiency: where BERT-cat's time goes, and where it can move (slides 14–16)
#
# Slide 14 puts every re-ranker on two axes: query latency and effectiveness. The basic re-rankers sit at the lower
# left, BERT-cat at the upper right — much better, much slower. The same picture for chapter 2's models, each run
# whole at query time on chapter 3's clock (the latency of re-ranking {glue:text}`tradeoff_count` candidates of a
# DL19 query) against its DL19 nDCG@10 re-ranking all of them:

# %% tags=["hide-input"]
test = protocol.tests["dl19"]
largest = max(count for count in chapter.profile.speed.regime_counts if count <= max(len(c) for c in test.run.values()))
glue("tradeoff_count", f"{largest:,}", display=False)
run_whole = lecture_comparison.whole_latency(artifacts.regimes(chapter.profile), largest)
whole_names = [name for name in run_whole["model"] if name in set(artifacts.table2(chapter.profile)["model"])]
whole_runs = {name: read_run(chapter.run_path("dl19", name + model_runs.ALL_CANDIDATES)) for name in whole_names}
whole_view = lecture_comparison.comparison_table(
    {"dl19": comparison.compare(whole_runs, test.qrels, ["nDCG@10"])}, run_whole, {},
    {name: label(name) + (" (teacher)" if name == "bi-encoder" else "") for name in whole_names},
)  # fmt: skip
figure = lecture_comparison.plot_tradeoff(
    whole_view, "DL19 nDCG@10", f"ms for {largest}", [], f"Chapter 2's models run whole ({largest} candidates, DL19)"
)  # fmt: skip
figure.axes[0].axhline(bm25_frames["dl19"].loc["bm25", "nDCG@10"], color="0.5", linestyle="--", linewidth=1,
                       label="BM25 (no re-ranking)")  # fmt: skip
figure.axes[0].legend(loc="lower right", fontsize=8)
save_figure(figure, out / "run_whole_tradeoff.png")
plt.show()

# %% [markdown]
# All of BERT-cat's work runs again for every candidate at query time. The lecture's ways out (slide 16): a
# smaller BERT (chapter 2's BERT-cat already runs on MiniLM's six layers instead of BERT-Base's twelve), or
# moving work from query time to indexing time — compute what depends on the passage alone once, store it,
# and pay at query time only for the query and its interaction with the stored passages. {doc}`03_time_budget`
# times every model both ways (run whole, passages stored); the sections below are the lecture's ways of
# splitting the work.
#
# ```{admonition} Questions
# 1. BERT-cat's cost grows with the number of candidates and with the passage length. Which of the two
#    does the lecture's time budget (slide 25) control, and which does it not?
# 2. Which part of a stored model's query-time work grows with the number of candidates, and which does not?
# ```
#
# ```{admonition} Answers
# :class: dropdown
# 1. The budget controls how many candidates are re-ranked (the depth); the passage length is fixed
#    by the collection (and the cap of 200 words here). Attention is quadratic in the joint length.
# 2. Encoding the query is paid once per query; reading the stored vectors and the interaction (late
#    interaction, kernels, upper layers) are paid per candidate.
# ```
#
# ## Splitting BERT: PreTTR (slides 17–19)
#
# PreTTR runs the first *k* of BERT's *L* layers on the query and on the passage separately and
# only the last *L − k* on their concatenation. The passage's half-encoded vectors can be computed
# at indexing time and stored; at query time only the query's first *k* layers and the last layers
# on every pair remain. The split is a dial: the later the split, the less runs per candidate and the
# later query and passage meet. Timing does not depend on the weights, so the dial can be read for
# every *k* without training each model:

# %%
timed_qids = sorted(test.run)[: lecture.latency_queries]
split_rows = []
for k in range(layers + 1):
    split_model = PreTTR(representations.bert_path, num_layers=layers, split=k).to(chapter.device).eval()
    frame = query_latency.latencies(
        split_model, representations.wordpiece, test.run, test.queries, protocol.texts, lecture.latency_counts[:1],
        timed_qids, model_spec("prettr").score_batch_size, lecture.latency_repetitions,
    )  # fmt: skip
    split_rows.append({"k": k, **{row.mode: row.ms for row in frame.itertuples()}})
splits = pd.DataFrame(split_rows).set_index("k")
splits["passages stored"] = splits["passages stored"].where(splits.index > 0)
write_csv(out / "prettr_splits.csv", splits.reset_index())
glue("split_count", f"{lecture.latency_counts[0]}", display=False)
splits.round(1)

# %% [markdown]
# The table gives the query latency of {glue:text}`split_count` candidates for every split (with
# *k* = 0 PreTTR is BERT-cat; nothing can be stored). With *k* = *L* − 1 query and passage meet in
# the last layer only; with *k* = *L* they never meet, and every passage of a query scores the same.
#
# ```{admonition} Questions
# 1. With the passages stored, why does the latency still fall as *k* grows?
# 2. What does PreTTR have to store per passage, and how does that grow with *k*?
# ```
#
# ```{admonition} Answers
# :class: dropdown
# 1. Every layer above the split runs once per candidate on the joint sequence; each layer moved
#    below the split runs once per query instead.
# 2. One vector of BERT's width per word piece of the passage, whatever *k* is: the size does not
#    grow with *k*, but the vectors are as wide as BERT (384 numbers for MiniLM, 768 for BERT-Base),
#    which is why MacAvaney et al. compress them.
# ```
#
# ### What a split costs in effectiveness
#
# Speed is half of the dial. The other half: how much does a model lose when query and passage stop
# seeing each other in the lower layers? Take chapter 2's fine-tuned BERT-cat, split its weights at
# every *k* **without retraining**, and re-rank the validation queries (DL21, chapter 2's validation
# depth). The split is a setting, so it is read on validation alone; the test years score only the split
# the book fine-tunes, below. With *k* = 0 the weights run as BERT-cat, except that the passage's
# positions start after the longest query (PreTTR's choice, so a stored passage does not depend on its
# query).

# %%
bert_cat = artifacts.trained_model(chapter.profile, "bert-cat")
swept = PreTTR(representations.bert_path, num_layers=layers, split=0)
swept.load_state_dict(bert_cat.model.state_dict())
sweep = split_sweep.split_sweep(
    swept.to(chapter.device), representations.wordpiece, protocol.texts, {"validation": protocol.validation},
    {"validation": settings.validation_depth}, measures_of={"validation": settings.validation_metric},
)  # fmt: skip
validation_column = f"VALIDATION {settings.validation_metric}"
prettr_k = split_sweep.choose_split(sweep, validation_column, lecture.prettr_min_saving)
split_table = splits.join(sweep)
write_csv(out / "prettr_split_effectiveness.csv", split_table.reset_index())
glue("prettr_k", f"{prettr_k}", display=False)
glue("prettr_min_k", f"{split_sweep.lowest_split(layers, lecture.prettr_min_saving)}", display=False)
glue("prettr_left", f"{1 - lecture.prettr_min_saving:.0%}", display=False)
split_table.round(3)

# %% [markdown]
# The column on the right is the split weights' validation measure, untrained. The book fine-tunes one split:
# the best on the validation queries among the splits that leave at most
# {glue:text}`prettr_left` of BERT-cat's layers to run per candidate (*k* ≥
# {glue:text}`prettr_min_k`) — here *k* = {glue:text}`prettr_k`. It starts from these same weights
# (chapter 2's BERT-cat, split at *k*) and trains on chapter 2's protocol and BERT-cat schedule with
# the split in place, for {glue:text}`prettr_budget` (the budget above), validated as every model is.

# %%
start_model = PreTTR(representations.bert_path, num_layers=layers, split=prettr_k)
start_model.load_state_dict(bert_cat.model.state_dict())
begin = time.perf_counter()
prettr_start = model_runs.RunVariant(
    start=(start_model, f"bert-cat {sha256_of(bert_cat.path)[:16]}, split {prettr_k}"),
    stop_at=lecture.stop_at.get("prettr"),
)
trained["prettr"] = model_runs.run_model("prettr", protocol, representations, settings, chapter, variant=prettr_start)
seconds["prettr"] = time.perf_counter() - begin
display(
    Markdown(
        lecture_comparison.prettr_reading(
            trained["prettr"], sweep, prettr_k, validation_column, protocol.tests, chapter.profile
        )
    )
)

# %% [markdown]
# ## Splitting BERT: ColBERT (slides 20–21)
#
# ColBERT splits BERT at the very top: query and passage never meet inside BERT. Every output token
# vector is projected to a small dimension and normalised, and the score is the *late interaction*:
# for each query token the best-matching passage token, summed over the query. Write it yourself
# (the book's page has a solution in the collapsed cell below; the student notebook of `make exercises` has it
# stubbed, and the cell's checks say whether yours is right):

# %% tags=["exercise", "hide-input"]
import torch


def my_maxsim(query, query_mask, doc, doc_mask):
    """ColBERT eq. 3 for a batch: sum over real query tokens of the max dot product with a real passage token."""
    # BEGIN SOLUTION
    similarity = query @ doc.transpose(1, 2)
    similarity = similarity.masked_fill(~doc_mask.unsqueeze(1), float("-inf"))
    return (similarity.max(dim=-1).values * query_mask).sum(dim=-1)
    # END SOLUTION


query = torch.tensor([[[1.0, 0.0], [0.0, 1.0]], [[0.6, 0.8], [1.0, 0.0]]])
doc = torch.tensor([[[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]], [[0.0, 1.0], [1.0, 0.0], [0.6, 0.8]]])
query_mask = torch.tensor([[True, True], [True, False]])  # the second query has one real token
doc_mask = torch.tensor([[True, True, False], [True, True, True]])  # the first passage's last token is padding
# by hand: 1 + 0.8 (the padded [0, 1] must not count) and 1.0 (the padded query token must not count)
assert torch.allclose(my_maxsim(query, query_mask, doc, doc_mask), torch.tensor([1.8, 1.0]))
print("my_maxsim scores both pairs as worked out by hand")

# %% [markdown]
# ```{admonition} Questions
# 1. Why does ColBERT normalise its vectors before the dot product?
# 2. ColBERT projects to 128 dimensions. How many bytes does a 60-piece passage take at float16,
#    and how many would it take without the projection (MiniLM's 384)?
# ```
#
# ```{admonition} Answers
# :class: dropdown
# 1. The dot product of unit vectors is their cosine, bounded in [−1, 1], so no single token with a
#    long vector dominates the max, and every query token contributes on the same scale.
# 2. 62 vectors (with `[CLS]` and `[SEP]`) × 128 × 2 bytes ≈ 15.9 kB; with 384 dimensions ≈ 47.6 kB.
# ```

# %% [markdown]
# ### ColBERT on the book's data
#
# ColBERT's cost is measured on chapter 3's clock — the same DL19 queries, candidate counts and timed runs
# (`lib.experiments.regime_costs`) — together with the other models this chapter trains, and every model is tested
# against BERT-cat on both years (all of them are in slide 27's table, below). A model whose passage side can be
# stored is shown with the faster of its float16 and int8 indexes at the largest candidate count (its latencies and
# bytes per passage are that index's, and slide 27's full table below also has it run whole); BERT-cat runs whole.
# TILDE's latencies and index sizes come from {doc}`06_tilde`. ColBERT beside BERT-cat, in the five columns slide
# 27 compares:

# %% tags=["hide-input"]
from_chapter2 = list(dict.fromkeys(["bi-encoder", "bert-cat", "tk2", artifacts.chosen_tk(chapter.profile)]))
compared = [*from_chapter2, *(name for name in lecture.models if name not in from_chapter2)]
models = {name: artifacts.trained_model(chapter.profile, name, chapter.device) for name in from_chapter2}
files = {name: name + model_runs.ALL_CANDIDATES for name in compared} | {"tilde-qdl": "tilde-qdl", "tildev2": "tildev2"}
effectiveness, timing, stored = {}, [], {}
for query_set, qs in protocol.tests.items():
    runs = {"bm25": qs.run, **{name: read_run(chapter.run_path(query_set, f)) for name, f in files.items()}}
    effectiveness[query_set] = comparison.compare(runs, qs.qrels, ["nDCG@10"], baseline="bert-cat")

# %% tags=["hide-input"]
chapter3_costs = artifacts.regimes(chapter.profile)
own_models = [name for name in compared if name not in set(chapter3_costs["model"])]
start = time.perf_counter()
own_rows = []
for name in tqdm(own_models, desc="two regimes", unit="model"):
    model = trained[name]["dl19"].training.model if name in trained else models[name].model
    tokenizer = (
        model_setup.build_model(name, representations, chapter.seed)[1] if name in trained else models[name].tokenizer
    )
    own_rows += regime_costs.model_rows(chapter.profile, name, model.eval(), tokenizer, chapter.device, out)
latency_seconds = time.perf_counter() - start
regime_rows = pd.concat(
    [chapter3_costs[chapter3_costs["model"].isin(compared)], pd.DataFrame(own_rows)], ignore_index=True
)
write_csv(out / "regimes.csv", regime_rows)
costs = regime_costs.query_time(regime_rows, chapter.profile.speed.regime_counts)
timing = costs[["model", "candidates", "mode", "ms"]].to_dict("records")
stored = {row.model: row.bytes_per_passage for row in costs.itertuples() if row.mode == "passages stored"}

# %% tags=["hide-input"]
for method, name in (("TILDE-QDL", "tilde-qdl"), ("TILDEv2", "tildev2")):
    for row in tilde_latency[tilde_latency["method"] == method].itertuples():
        timing.append({"model": name, "candidates": row.candidates, "mode": "passages stored", "ms": row._6})
sizes = artifacts.tilde_index_size(chapter.profile).set_index("model")["bytes per passage"]
stored.update({"tilde-qdl": float(sizes["TILDE"]), "tildev2": float(sizes["TILDEv2"])})
timing = pd.DataFrame(timing)
write_csv(out / "latency.csv", timing)
query_time = timing[(timing["mode"] == "passages stored") | ~timing["model"].isin(
    timing.loc[timing["mode"] == "passages stored", "model"])]  # fmt: skip
labels = {"bm25": "BM25", **{name: label(name) for name in compared}, "tilde-qdl": "TILDE-QDL", "tildev2": "TILDEv2"}
labels["bi-encoder"] += " (teacher)"  # every student of chapter 2 learned from its scores
table = lecture_comparison.comparison_table(effectiveness, query_time, stored, labels)
whole = regime_rows[regime_rows["regime"] == "whole"].set_index("model")  # the other regime, for the stored models
for count in chapter.profile.speed.regime_counts:
    table[f"ms for {count} run whole"] = [
        float(whole.loc[name, f"ms_{count}"]) if name in stored and name in whole.index else float("nan")
        for name in labels
    ]
gpu_costs = regimes.committed_regimes(paths.REPO_ROOT / "benchmarks" / "results" / "regimes", labels)
table = table.join(regimes.gpu_memory(gpu_costs, labels, list(stored)))
write_csv(out / "comparison.csv", table.reset_index())
shown_count = min(chapter.profile.speed.regime_counts, key=lambda count: abs(count - 100))

# %%
view = lecture_comparison.projection_view(table, shown_count)
plain(view.loc[[labels["bert-cat"], labels["colbert"]]].reset_index())

# %% [markdown]
# ## TK (slides 22–24)
#
# TK contextualises query and passage separately, each with a few Transformer layers over its word vectors,
# and lets them meet only in a match matrix of cosines pooled by Gaussian kernels ({doc}`02_training` builds it
# from the paper's equations 1–10, slides 22–24). Because the passage side never sees the query, its vectors can
# be stored like ColBERT's. Two TKs side by side: the paper's TK-2 on GloVe word vectors and the TK chapter 2
# chose on validation, {glue:text}`chosen_tk_label`, with each year's nDCG@10 re-ranking every candidate (the
# paired t-test against TK-2, Bonferroni over the systems) and chapter 3's costs at 100 candidates per query:

# %%
tk_pair = list(dict.fromkeys(["tk2", artifacts.chosen_tk(chapter.profile)]))
glue("chosen_tk_label", label(tk_pair[-1]), display=False)
tk_costs = regime_costs.query_time(artifacts.regimes(chapter.profile), chapter.profile.speed.regime_counts)
tk_rows = {name: {"model": label(name)} for name in tk_pair}
for query_set, qs in protocol.tests.items():
    tk_runs = {name: read_run(chapter.run_path(query_set, name + model_runs.ALL_CANDIDATES)) for name in tk_pair}
    tested = comparison.compare(tk_runs, qs.qrels, ["nDCG@10"], baseline="tk2")
    for name in tk_pair:
        tk_rows[name][f"{query_set.upper()} nDCG@10"] = round(float(tested.loc[name, "nDCG@10"]), 4)
        p_value = tested.loc[name, "nDCG@10 p_bonferroni"]
        tk_rows[name][f"{query_set.upper()} p vs TK-2"] = "—" if name == "tk2" else f"{p_value:.3f}"
whole = artifacts.regimes(chapter.profile).query("regime == 'whole'").set_index("model")
for name in tk_pair:
    count = max(tk_costs["candidates"].min(), 100)
    cost = tk_costs[(tk_costs["model"] == name) & (tk_costs["candidates"] == count)].iloc[0]
    tk_rows[name] |= {"whole ms": f"{float(whole.loc[name, f'ms_{count}']):,.1f}", "stored ms": f"{cost['ms']:,.1f}",
                      "bytes / passage": int(cost["bytes_per_passage"])}  # fmt: skip
plain(pd.DataFrame(list(tk_rows.values())))

# %% [markdown]
# ## Comparing the models (slides 25–27)
#
# Slide 25 designs for a time budget: the number of candidates a model re-ranks is the dial, and a faster model
# re-ranks more of them in the same time. Slide 26's question — which model is best when each query has a fixed
# time — is chapter 3's Figure 2; here on DL19, with the passages computed at query time and stored (the teacher
# dashed: a reference, not a contestant):

# %%
Image(filename=artifacts.budget_figure(chapter.profile, "dl19"))

# %% [markdown]
# Slide 27 puts the models in one table: effectiveness on both test years (nDCG@10 re-ranking all of BM25's top
# 100, `*`: significantly different from BERT-cat), the query latency of re-ranking {glue:text}`shown_count`
# candidates on this machine, what an index stores per passage, and the GPU memory the model held. Besides the
# paper's TK-2 on GloVe, the table has the TK chapter 2 chose on validation (when it is another):

# %%
glue("shown_count", f"{shown_count:,}", display=False)
plain(view.reset_index())

# %% [markdown]
# Every column, with the p-values, both candidate counts, each stored model run whole, and in words what an index
# stores and what runs at query time (click to show):

# %% tags=["hide-output"]
display(table.round(3))
if guessed := regimes.estimated(regime_rows, labels):  # a latency too slow to time, estimated (chapter 3's "est.")
    display(Markdown(f"*Estimated from the smaller counts, not measured: {'; '.join(guessed)}.*"))

# %% [markdown]
# Slide 27 reads its table as three claims — ColBERT about as effective as BERT-cat (97 %), PreTTR likewise, TK a bit
# below — each an order between two models, so each is read here from its paired test against BERT-cat:

# %% tags=["hide-input"]
slide27 = {"colbert": ("ColBERT is about as effective as BERT-cat (97 %)", "same"),
           "prettr": ("PreTTR is about as effective as BERT-cat", "same"),
           "tk2": ("TK is a bit less effective than BERT-cat", "below")}  # fmt: skip
display(Markdown("\n\n".join(
    slide_claims.claim_sentence("27", claim, labels[name], labels["bert-cat"],
                                slide_claims.year_orders(effectiveness, name), expected)
    for name, (claim, expected) in slide27.items()
)))  # fmt: skip

# %% [markdown]
# "p vs bert-cat": the paired two-tailed t-test of each model against BERT-cat over the year's judged queries,
# Bonferroni-corrected over the models (`*`: significant at 0.05). Query latency is the median over
# {glue:text}`timed_queries` DL19 queries of each query's median re-ranking time (the BM25 candidates, repeated to
# the count when a query has fewer; {glue:text}`timed_repetitions` timed runs per query after one untimed warm-up,
# every model on chapter 3's clock: the same rule and one precision, {glue:text}`timed_precision`),
# on {glue:text}`latency_device` for the models trained here and on the machine that built chapter 3 for the others;
# a stored model's time includes reading its candidates' vectors from the index. Bytes per passage: what that index
# stores. Peak GPU MiB: the most memory torch held on that GPU while the model was timed in the same regime
# (chapter 3's committed GPU cost table, untrained weights of the same architecture: the weights, a batch's
# activations and the stored vectors read; empty where the GPU did not time the model). The same numbers as a
# picture — effectiveness re-ranking all {glue:text}`tradeoff_count` candidates against the latency of re-ranking
# as many — with the time budgets of {doc}`03_time_budget` as dotted lines:

# %% tags=["hide-input"]
glue("timed_queries", f"{chapter.profile.speed.regime_queries}", display=False)
glue("latency_device", device_name(chapter.device), display=False)
glue("timed_repetitions", f"{chapter.profile.speed.regime_repetitions}", display=False)
glue("timed_precision", regime_costs.clock(chapter.profile, chapter.device)["precision"], display=False)
budgets = artifacts.budget_leaders(chapter.profile, "dl19")["budget (ms)"].tolist()
figure = lecture_comparison.plot_tradeoff(
    table, "DL19 nDCG@10", f"ms for {largest}", [b for b in budgets if b <= 10 * table[f"ms for {largest}"].max()],
    f"Effectiveness and query latency ({largest} candidates, DL19)",
)  # fmt: skip
save_figure(figure, out / "tradeoff.png")
plt.show()

# %% tags=["hide-input"]
display(Markdown(lecture_comparison.tradeoff_reading(table, largest, labels["bi-encoder"])))

# %% [markdown]
# ### The stored regime's budget curves, with the stored rivals
#
# {doc}`03_time_budget` tests the TK paper's thesis in the stored regime with chapter 2's models alone. Slide 27's
# stored rivals are here: every model of the table at its cheapest stored index's cost on the same clock (BERT-cat
# runs whole), nDCG@10 under a time budget per query on each test year (the teacher dashed, a reference):

# %%
stored_runs = {query_set: {name: read_run(chapter.run_path(query_set, f)) for name, f in files.items()
                           if name in set(regime_rows["model"])} for query_set in protocol.tests}  # fmt: skip
stored_frames = {
    query_set: stored_rivals.stored_frame(regime_rows, stored_runs[query_set], qs.run, qs.qrels,
                                          chapter.profile.speed.regime_counts)
    for query_set, qs in protocol.tests.items()
}  # fmt: skip
for query_set, frame in stored_frames.items():
    write_csv(out / f"stored_budget_curves_{query_set}.csv", frame)
    bm25_value = float(frame.loc[frame["model"] == "bm25", "nDCG@10"].iloc[0])
    figure = plot_regimes(
        {"passages stored": frame.query("model != 'bm25'")},
        "nDCG@10",
        bm25_value,
        labels,
        teacher="bi-encoder",
        title=f"{query_set.upper()}: the stored regime, every stored rival",
    )
    save_figure(figure, out / f"stored_budget_curves_{query_set}.png")
    plt.show()

# %% [markdown]
# The best student under each budget, and {glue:text}`chosen_tk_label` against ColBERT where it matters — a paired
# t-test at every budget, Bonferroni over the budgets (`*`: significant):

# %% tags=["hide-input"]
for query_set, frame in stored_frames.items():
    grid = time_budget.budget_grid(frame["budget_ms"].max())
    leaders = time_budget.student_leaders({"stored": frame}, "bi-encoder", grid, labels, "nDCG@10")
    crossings = stored_rivals.crossing_tests(regime_rows, stored_runs[query_set], protocol.tests[query_set].run,
                                             protocol.tests[query_set].qrels, chapter.profile.speed.regime_counts,
                                             (artifacts.chosen_tk(chapter.profile), "colbert"), grid)  # fmt: skip
    write_csv(out / f"stored_crossings_{query_set}.csv", crossings)
    display(Markdown(f"**{query_set.upper()}**"))
    display(plain(leaders.drop(columns=["stored: teacher"])))
    display(Markdown(stored_rivals.crossing_reading(crossings, labels)))

# %% [markdown]
# PreTTR's dial: chapter 2's BERT-cat weights split at every *k* (untrained, the table of its section) on
# the validation queries, at the first candidate count timed, with the passages stored where a split allows
# it — and the split the book fine-tuned, after its training.

# %% tags=["hide-input"]
first = lecture.latency_counts[0]
query_time = splits["passages stored"].fillna(splits["whole at query time"])  # k = 0 stores nothing
dial = pd.DataFrame({validation_column: sweep[validation_column], f"ms for {first}": query_time})
tuned = pd.DataFrame(
    {validation_column: [next(iter(trained["prettr"].values())).training.best_metric],
     f"ms for {first}": [query_time[prettr_k]]},
    index=[f"PreTTR k={prettr_k}, fine-tuned"],
)  # fmt: skip
figure = lecture_comparison.plot_tradeoff(
    tuned, validation_column, f"ms for {first}", [], f"PreTTR's split ({first} candidates, validation)", dial=dial
)  # fmt: skip
save_figure(figure, out / "prettr_dial.png")
plt.show()

# %% [markdown]
# ```{admonition} Questions
# 1. Slide 27 normalises effectiveness to BERT-cat = 1. Why is that not a good idea for this table?
# 2. Which models' latency would a GPU change most, and which hardly at all?
# 3. A passage index of 8.8 million passages: how large is it for ColBERT and for TK at the bytes per
#    passage measured here?
# ```
#
# ```{admonition} Answers
# :class: dropdown
# 1. A ratio to BERT-cat assumes BERT-cat is the best-trained model; at book scale it trained for minutes,
#    within the profile's budget, so a ratio to it says more about that budget than about the architectures.
#    The p-values against BERT-cat in the table say which differences the test years support.
# 2. The ones that run BERT on every candidate (BERT-cat, PreTTR's top layers): their work is large
#    matrix products that a GPU parallelises. TILDE's look-ups and TK's small kernels gain little.
# 3. Multiply the bytes per passage by 8.8 × 10⁶: tens of kilobytes per passage become hundreds of
#    gigabytes, which is why ColBERT and PreTTR compress, and why TK-Sparse removes words.
# ```
#
# ## Understanding TK (slides 28–29)
#
# TK's score is a sum of per-kernel terms, so it can be taken apart exactly: {doc}`05_interpreting_tk` shows
# which query–passage word pairs fill which kernel for the paper's example and for DL19 queries (the Neural IR
# Explorer's view, slide 29), and {doc}`04_query_clusters` clusters queries by TK's contextualised query vectors
# (slide 28).
#
# ## TK-Sparse: contextualised stopwords (slides 30–33)
#
# TK's passage side does not depend on the query either, so an index can store TK's contextualised
# vectors: one per word. TK-Sparse adds a gate after the contextualisation; a word whose gate is 0
# leaves the kernels, so it need not be stored. Unlike a stopword list, the gate decides per occurrence,
# in context (slide 30).
#
# The authors push the gates to 0 with an L1 penalty of weight λ. At book scale that penalty behaves like a
# switch: a λ removes nothing for hundreds of steps and then nearly everything at once, because TK's log path
# barely notices when all of a passage's gates shrink together, so the penalty shrinks them all until they shut.
# The book therefore sets the *share* of words to remove, and the gate learns only *which* ones. It scores every
# word, and a word whose score falls in the lowest share of a training batch's scores is removed. At scoring time
# the threshold is that quantile's running average. The ranking loss reaches removed words too, through a smooth
# stand-in for the 0/1 gate (the straight-through trick), so a word the ranking needs climbs back above the
# threshold (`lib.models.tk_sparse`; a deviation, {doc}`../deviations_4_to_9`).
#
# ```{admonition} Question
# Why does the gate act on the kernel activations rather than on the cosine match matrix?
# ```
#
# ```{admonition} Answer
# :class: dropdown
# A cosine of 0 is a value, not an absence: it would count in the kernel at μ = 0. Multiplying the
# kernel activations by the gate removes the word from every kernel.
# ```
#
# ### How much to remove, and a stopword list (slides 31–32)
#
# Slide 32 reports 20–40 % of the words removed without a loss. Slide 31's baseline removes a fixed list before
# the model. The book trains TK-Sparse at each removal target of the lecture settings and TK-2 on texts without
# NLTK's stopwords, all on chapter 2's protocol with TK-2's schedule, stopped where TK-Sparse is
# (`lib.experiments.sparsity_sweep`). The share removed is measured on the validation passages, at the running
# threshold: it is what an index would leave out, and it need not equal the target. The target is chosen on
# validation alone. Each test year's nDCG@10 re-ranks all candidates, with chapter 2's TK-2 as the reference that
# removes nothing:

# %%
budget = lecture.stop_at.get("tk2-sparse")  # every run of the table stops where TK-Sparse does
swept = sparsity_sweep.sparsity_sweep(
    lecture.removal_targets, protocol, representations, settings, chapter, trained["tk2-sparse"], budget
)
sweep = swept.table
stopword_row = sparsity_sweep.stopword_baseline(protocol, representations, settings, chapter, budget)
table2 = artifacts.table2(chapter.profile).query("model == 'tk2'").set_index("set")["nDCG@10 (all)"]
reference_row = {"model": "TK-2 (chapter 2)", "removed (validation passages)": 0.0,
                 **{f"{name.upper()} nDCG@10": value for name, value in table2.items()}}  # fmt: skip
sweep_table = pd.concat([pd.DataFrame([reference_row, stopword_row]), sweep], ignore_index=True)
sweep_frames, names = {}, sparsity_sweep.run_names(lecture.removal_targets)
for query_set, qs in protocol.tests.items():  # each run against TK-2: paired t-tests, Bonferroni over the runs
    runs = {name: read_run(chapter.run_path(query_set, name + model_runs.ALL_CANDIDATES)) for name in names}
    tested = sweep_frames[query_set] = comparison.compare(runs, qs.qrels, ["nDCG@10"], baseline="tk2")
    sweep_table[f"{query_set.upper()} p vs TK-2"] = [
        "—" if name == "tk2" else f"{tested.loc[name, 'nDCG@10 p_bonferroni']:.3f}"
        + ("*" if tested.loc[name, "nDCG@10 significant"] else "") for name in names
    ]  # fmt: skip
tested_columns = sorted(column for column in sweep_table if column.startswith("DL"))
sweep_table = sweep_table[["model", "target", "removed (validation passages)", "validation", *tested_columns]]
write_csv(out / "sparsity_sweep.csv", sweep_table)
tk2_validation = artifacts.tk_validation(chapter.profile)["tk2"]
glue("chosen_target", f"{(chosen_target := sparsity_sweep.chosen_target(sweep, tk2_validation)):.0%}", display=False)
glue("tolerance", f"{sparsity_sweep.VALIDATION_TOLERANCE:g}", display=False)
chosen_removed = float(sweep.loc[sweep["target"] == chosen_target, "removed (validation passages)"].iloc[0])
glue("chosen_removed", f"{chosen_removed:.0%}", display=False)
plain(sweep_table, precision=3)

# %% tags=["hide-input"]
points = sweep_table.melt(
    id_vars=["model", "target", "removed (validation passages)"], value_vars=[c for c in sweep_table if "nDCG" in c],
    var_name="test year", value_name="nDCG@10",
)  # fmt: skip
points["test year"] = points["test year"].str.split().str[0]
points["label"] = [
    m if pd.isna(t) else f"target {t:.0%}" for m, t in zip(points["model"], points["target"], strict=True)
]
grid = sns.relplot(data=points, x="removed (validation passages)", y="nDCG@10", hue="label", col="test year",
                   height=3.4, aspect=1.2, s=70)  # fmt: skip
grid.set_titles("{col_name}")
for ax in grid.axes.flat:
    ax.axvspan(0.2, 0.4, color="0.9", zorder=0, label="slide 32: 20–40 % removed")
    ax.xaxis.set_major_formatter(lambda value, _: f"{value:.0%}")
save_figure(grid.figure, out / "sparsity_sweep.png")
plt.show()

# %% [markdown]
# Validation chooses the target {glue:text}`chosen_target`: among the targets whose validation value is at most
# {glue:text}`tolerance` below TK-2's, the one that removes the most (a gate is there to remove what the ranking does
# not need; with none that close, the best validation value). At it the gates remove {glue:text}`chosen_removed` of
# the validation passages' words. The shaded band is slide 32's 20–40 %. Whether a model differs
# from TK-2 on a test year is the table's "p vs TK-2" (paired two-tailed t-tests, Bonferroni over the runs; `*`:
# significant at 0.05), not the distance between two points of the picture. Whether a larger target always removes
# more on passages the gate was not trained on,
# and the two slides' claims, each read from its paired tests against TK-2:

# %% tags=["hide-input"]
chosen_run = names[2 + list(lecture.removal_targets).index(chosen_target)]
display(Markdown("\n\n".join([
    lecture_comparison.monotone_reading(sweep),
    slide_claims.claim_sentence("31", "removing a stopword list before the model lowers its effectiveness",
                                "TK-2 without stopwords", "TK-2",
                                slide_claims.year_orders(sweep_frames, "tk2-stopwords"), "below"),
    slide_claims.removal_sentence(f"TK-Sparse at the target {chosen_target:.0%} (chosen on validation)", "TK-2",
                                  slide_claims.year_orders(sweep_frames, chosen_run), chosen_removed),
])))  # fmt: skip

# %% [markdown]
# ### Which words the gate removes (slide 33)
#
# Slide 33 compares the words the gate removes with a stopword list's. The gate of the TK-Sparse whose target
# validation chose above, on the test passages:

# %%
sparse = swept.models[chosen_target].eval()
passages = sorted({pid for t in protocol.tests.values() for q in t.run for pid in t.run[q]})
passages = passages[: lecture.stopword_passages]
occurrences = stopword_gate.gate_occurrences(
    sparse, representations.vocabulary, [protocol.texts[p] for p in passages], DOC_MAX_LENGTH
)
overlap = stopword_gate.stopword_overlap(occurrences)
removed_terms = stopword_gate.stopword_table(occurrences)
write_csv(out / "stopwords.csv", removed_terms.reset_index())
glue("removed_share", f"{overlap['removed']:.0%}", display=False)
glue("removed_listed", f"{overlap['removed that are NLTK stopwords']:.0%}", display=False)
glue("listed_removed", f"{overlap['NLTK stopwords removed']:.0%}", display=False)
glue("stopword_passages", f"{len(passages):,}", display=False)
glue("gate_verdict", stopword_gate.gate_verdict(overlap), display=False)
removed_terms.round(3)

# %% [markdown]
# Over {glue:text}`stopword_passages` test passages the gate removes {glue:text}`removed_share` of
# the word occurrences. Of the removed occurrences {glue:text}`removed_listed` are words of NLTK's
# stopword list, and of the listed stopwords' occurrences {glue:text}`listed_removed` are removed:
# the gate {glue:text}`gate_verdict`. The table shows the words removed most often and what share of
# their occurrences goes.
#
# ```{admonition} Question
# A classic stopword list removes "the" everywhere. Give a query where removing "the" from the
# passages would hurt, and say how a contextualised gate can avoid that.
# ```
#
# ```{admonition} Answer
# :class: dropdown
# "The Who" or "The The" (band names), or "to be or not to be". The gate sees the word's
# contextualised vector, so it can keep "the" where the context makes it part of a name.
# ```
#
# ## What this chapter shows
#
# The lecture's ordering of costs holds on any machine: the later query and passage meet, the less
# runs per candidate, and the more an index has to store. Its ordering of effectiveness is a property
# of training at scale; at book scale the table above shows which of the lecture's claims survive a
# few minutes of distillation. Deviations from the papers are listed in {doc}`../deviations_4_to_9`.

# %% tags=["remove-cell"]
summary = {
    "comparison": table.reset_index().to_dict("records"),
    "prettr_splits": split_table.reset_index().to_dict("records"),
    "prettr_split": prettr_k,
    "stopwords": overlap,
    "seconds": {"training": seconds, "latency": latency_seconds},
}
chapter.finish(summary)
