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
# # TU Wien at TREC Deep Learning 2019: the passage runs, re-run
#
# Before TK had a paper, it had a TREC notebook. In 2019 the TU Wien group submitted three passage
# runs to the TREC Deep Learning track {cite}`hofstaetter2019tuwien` to answer one question: how
# effective is a re-ranker that was built to be efficient and interpretable? The runs differ in one
# thing each. **TUW19-p1** is TK on GloVe vectors, the best of several random initialisations on
# validation; **TUW19-p2** swaps GloVe for fastText vectors, which have no out-of-vocabulary words;
# **TUW19-p3** is an ensemble of several p1 models. The notebook then reads its results as a
# participant does: a table against the track's judgments, the queries that went best and worst, and
# three short claims — GloVe and fastText are about equal, the ensemble helps a little, and no type of
# query separates the best from the worst.
#
# This chapter re-creates the three runs at book scale with the protocol of {doc}`02_training`:
# every TK learns the margins of the same teacher on the same training queries, is validated on
# chapter 2's validation queries (DL21 at book scale) and is tested on DL19 and DL20, re-ranking the
# official BM25 top-100. The run files are written in TREC format with the notebook's run names, and
# each claim gets a verdict computed from the numbers. The deviations from the notebook are listed
# in {doc}`../deviations_4_to_9`.
#
# One deviation shapes the chapter. On GloVe 6B's 50 dimensions and a few thousand training queries,
# TK stays level with BM25 ({doc}`02_training`'s ladder of pre-training), and an ensemble of models
# that do not beat BM25 would teach little. So p1 and p3 are built on the TK that chapter 2 chose on
# validation — {glue:text}`trec_tk` — and the notebook's GloVe-against-fastText claim, which is about
# word vectors, is tested where it belongs: TK-2 on GloVe (chapter 2's) against TK-2 on fastText (p2).

# %% tags=["parameters"]
profile = "book"  # smoke | book | paper
device = "auto"  # "auto" takes a CUDA GPU when there is one
seed = 42  # seeds this chapter's fastText vectors and TUW19-p2's TK
# None keeps the profile's default (lib.core.profiles.PROFILES, section `trec`)
inits = None  # the seeds of TUW19-p1's inits, e.g. [42, 1, 2] (42: chapter 2's seed, its model reused)
p2_vectors = None  # TUW19-p2's word vectors, trained on the book corpus: "fasttext" or "word2vec"
max_steps = None  # None: chapter 2's schedule

# %% tags=["hide-input"]
import time

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display
from myst_nb import glue

from lib.analyses import query_types
from lib.chapters import trec_runs
from lib.chapters.prologue import start_chapter
from lib.chapters.tables import plain
from lib.core import paths
from lib.core.atomic import write_csv
from lib.core.plotting import save_figure
from lib.data import book_texts, read_run
from lib.evaluation import comparison
from lib.evaluation import measures as evaluation
from lib.experiments import artifacts, model_runs, model_setup, tuw19_runs
from lib.experiments.init_selection import best_init
from lib.models.registry import model_spec
from lib.representations.text import tokenize
from lib.reranking import fusion
from lib.reranking.scoring import rerank

CHAPTER = "07_trec_runs"
trec_overrides = {"inits": inits, "p2_vectors": p2_vectors}
chapter = start_chapter(CHAPTER, profile, seed, device, section="trec", overrides=trec_overrides)
out, trec = chapter.out, chapter.settings
trec

# %% [markdown]
# ## The protocol: chapter 2's teacher, triples and test years
#
# The notebook's models learned from MS MARCO's training triples with a pairwise hinge loss and
# re-ranked the official top-1000 of each DL19 query. The book's runs learn as chapter 2's TK-2
# does: Margin-MSE on the same teacher-labelled triples, the same schedule, early stopping on
# chapter 2's validation queries, and they re-rank the official BM25 top-100 of DL19 and DL20. No
# DL19 or DL20 query or judgment is used before the test.

# %%
start = time.perf_counter()
settings, protocol_seed, protocol = artifacts.training_protocol(chapter.profile)
settings = settings.replace(max_steps=max_steps)  # chapter 2's recorded settings, not a section of the profile
tk_name = artifacts.chosen_tk(chapter.profile)
tk_label = model_spec(tk_name).label
tk_representations = model_setup.prepare_representations(
    chapter.with_seed(protocol_seed), settings, with_small_bert=False,
    with_piece_vectors=model_spec(tk_name).family == "pieces",
)  # fmt: skip
glue("trec_tk", tk_label, display=False)
print(f"{len(protocol.triples):,} training triples, {len(protocol.queries):,} teacher-labelled queries")
print(f"protocol ready in {time.perf_counter() - start:.0f} s")
pd.DataFrame(
    [{"run": tuw19_runs.RUN_TAGS[name], "what": what} for name, what in trec_runs.run_descriptions(tk_label).items()]
).set_index("run")

# %% [markdown]
# ## TUW19-p1: the best of several inits
#
# One {glue:text}`trec_tk` per seed: the seed sets the initial weights (of the layers it does not take
# from a pre-trained model) and the order of the triples, nothing else. The init with chapter 2's
# seed is chapter 2's own model: it is resumed from chapter 2's checkpoint, not trained again.
# The notebook kept the init with the best validation result; here that is the best validation
# {glue:text}`trec_validation_metric` (the measure early stopping watches). The test columns are
# shown for every init, so the spread between inits is visible — it is the yardstick for every other
# difference in this chapter.

# %%
init_results = {}
start = time.perf_counter()
for init in trec.inits:
    init_results[init] = model_runs.run_model(
        tk_name, protocol, tk_representations, settings, chapter.with_seed(init),
        variant=model_runs.RunVariant(
            f"init{init}", reuse_from=artifacts.TRAINING_CHAPTER if init == protocol_seed else None
        ),
    )  # fmt: skip
init_seconds = time.perf_counter() - start
inits_table = pd.DataFrame(
    [
        {
            "init": init,
            f"validation {settings.validation_metric}": next(iter(results.values())).training.best_metric,
            "best step": next(iter(results.values())).best_step,
            **{f"{name} nDCG@10 (all)": result.metrics_at_full_depth["nDCG@10"] for name, result in results.items()},
        }
        for init, results in init_results.items()
    ]
).set_index("init")
p1_init = best_init(inits_table[f"validation {settings.validation_metric}"].to_dict())
glue("trec_validation_metric", settings.validation_metric, display=False)
write_csv(out / "inits.csv", inits_table.reset_index())
glue("p1_init", f"{p1_init}", display=False)
glue("init_count", f"{len(trec.inits)}", display=False)
inits_table

# %% [markdown]
# TUW19-p1 is the init with seed {glue:text}`p1_init`.
#
# ## TUW19-p2: fastText instead of GloVe
#
# The notebook's p2 replaced GloVe by fastText vectors, stressing that fastText leaves no word out of
# the vocabulary: its character n-grams give a vector to any word. The book trains fastText on the
# book corpus (GloVe's 50 dimensions, so that only the vectors differ) and keeps every word of the
# corpus in the vocabulary, where the GloVe models drop the words seen fewer than five times. Its
# GloVe twin is chapter 2's TK-2: the same schedule and triples, GloVe's vectors.

# %%
start = time.perf_counter()
fast_settings = settings.replace(embedding_method=trec.p2_vectors)
fast = model_setup.prepare_representations(chapter, fast_settings, min_count=trec.p2_min_count, with_small_bert=False)
p2_results = model_runs.run_model(
    "tk2", protocol, fast, fast_settings, chapter,
    variant=model_runs.RunVariant(trec.p2_vectors),
)  # fmt: skip
p2_seconds = time.perf_counter() - start
corpus_tokens = sum(len(tokenize(text)) for text in book_texts().values())
glue("corpus_tokens", f"{corpus_tokens / 1e6:.1f} million", display=False)
vocabularies = pd.DataFrame(
    [
        {"run": run_name, "vectors": method, "words": filled.terms, "own vector": filled.found,
         "fastText subwords": filled.subword, "random (out of vocabulary)": filled.random}
        for run_name, method, filled in (
            ("TK-2 (GloVe)", settings.embedding_method, tk_representations.coverage),
            ("p2", trec.p2_vectors, fast.coverage),
        )
    ]
).set_index("run")  # fmt: skip
write_csv(out / "vocabularies.csv", vocabularies.reset_index())
vocabularies

# %% [markdown]
# ## TUW19-p3: an ensemble of the p1 inits
#
# The notebook does not say how its ensemble combines scores. TK's scores have no fixed scale — two
# inits can rank alike with scores in different ranges — so the book standardises each model's
# scores within a query (z-scores) and averages them over the {glue:text}`init_count` inits.

# %%
test_sets = list(protocol.tests)
init_scores = {
    init: {
        name: read_run(model_runs.scores_path(chapter.profile, CHAPTER, name, f"{tk_name}-init{init}"))
        for name in test_sets
    }
    for init in trec.inits
}
p2_name = f"tk2-{trec.p2_vectors}"
scores = {
    "p1": init_scores[p1_init],
    "p2": {name: read_run(model_runs.scores_path(chapter.profile, CHAPTER, name, p2_name)) for name in test_sets},
    "p3": {name: fusion.ensemble([init_scores[init][name] for init in trec.inits]) for name in test_sets},
}
glove_run = "p1" if tk_name == "tk2" else tuw19_runs.GLOVE_RUN
if glove_run != "p1":
    scores[glove_run] = {name: artifacts.candidate_scores(chapter.profile, name, "tk2") for name in test_sets}
runs = {"BM25": {name: test.run for name, test in protocol.tests.items()}}
for run_name, by_set in scores.items():
    runs[run_name] = {
        name: rerank(test.run, by_set[name], settings.candidate_depth) for name, test in protocol.tests.items()
    }
for run_name, tag in tuw19_runs.RUN_TAGS.items():
    for name in test_sets:
        evaluation.write_trec_run(runs[run_name][name], chapter.run_path(name, tag), tag=tag)
print("run files:", ", ".join(paths.shown(chapter.run_path(name, tag)) for name in test_sets
                              for tag in tuw19_runs.RUN_TAGS.values()))  # fmt: skip

# %% [markdown]
# ## The runs against the judgments
#
# The analogue of the notebook's Table 2: MAP, nDCG@10 and P@10 (MAP and P@10 count grade ≥ 2 as
# relevant, as `trec_eval -l 2` does), each run re-ranking all 100 BM25 candidates. The notebook's own
# numbers stand beside the DL19 rows as `paper` columns; they come from MS MARCO training on a GPU and
# the official top-1000, so they are the target the book's scale is measured against, not a number
# it should match. The notebook had no DL20.

# %%
qrels = {name: test.qrels for name, test in protocol.tests.items()}
table = tuw19_runs.run_table(runs, qrels)
write_csv(out / "runs_table.csv", table)
table.set_index(["set", "run"])

# %% [markdown]
# Paired t-tests between every two runs, nDCG@10 per query, Bonferroni-corrected over the pairs of a
# test year:

# %%
per_query = {
    name: {run_name: evaluation.per_query(runs[run_name][name], qrels[name]) for run_name in runs} for name in test_sets
}
tests = pd.concat(
    [
        comparison.pairwise_tests({run_name: frame["nDCG@10"] for run_name, frame in per_query[name].items()}).assign(
            set=name
        )
        for name in test_sets
    ],
    ignore_index=True,
)
write_csv(out / "pairwise_tests.csv", tests)
plain(tests[["set", "run", "against", "mean", "mean against", "delta", "p_bonferroni", "significant"]])

# %% [markdown]
# ## Best and worst queries
#
# The notebook's Table 3 lists the five best and the five worst DL19 queries of TUW19-p3 by average
# precision. The book's lists come from its own p3; the last column says whether the notebook named the
# same query (in which list). The figure shows every query: p3's AP minus BM25's, sorted, so the queries
# where re-ranking helped (green) and hurt (red) can be scanned at once; a query on which both agree
# has no bar.

# %%
queries = {name: test.queries for name, test in protocol.tests.items()}
best_worst = pd.concat(
    [
        tuw19_runs.best_and_worst(per_query[name]["p3"]["MAP"], per_query[name]["BM25"]["MAP"], queries[name]).assign(
            set=name
        )
        for name in test_sets
    ],
    ignore_index=True,
)
write_csv(out / "best_and_worst.csv", best_worst)
recurring = best_worst[best_worst["in notebook"] != ""]
glue("recurring", f"{len(recurring)}", display=False)
best_worst.set_index(["set", "group", "qid"])

# %% tags=["hide-input"]
figure, axes = plt.subplots(1, len(test_sets), figsize=(5.5 * len(test_sets), 3.6), sharey=True, squeeze=False)
for axis, name in zip(axes[0], test_sets, strict=True):
    difference = (per_query[name]["p3"]["MAP"] - per_query[name]["BM25"]["MAP"]).sort_values()
    colours = ["tab:green" if value > 0 else "tab:red" if value < 0 else "tab:gray" for value in difference]
    axis.bar(range(len(difference)), difference.to_numpy(), color=colours)
    axis.axhline(0, color="black", linewidth=0.8)
    axis.set_title(f"{name.upper()}: TUW19-p3 minus BM25, per query")
    axis.set_xlabel("queries, sorted by the difference")
axes[0][0].set_ylabel("AP difference")
figure.tight_layout()
save_figure(figure, out / "per_query_ap.png")
plt.show()

# %% [markdown]
# {glue:text}`recurring` of the book's best and worst queries are also in the notebook's lists. The
# notebook's lists come from a model trained on MS MARCO and re-ranking 1,000 candidates; a query in
# both lists is one that is easy or hard for TK whatever the scale.
#
# ## What holds
#
# The notebook's three claims (§3.3.1), each checked on the runs above. A query's type is read from its
# first words (what, how, why, a definition, a yes/no question, …, or keywords), and the test asks whether
# p3's average precision differs between the types.

# %%
type_tests = {name: query_types.type_test(per_query[name]["p3"]["MAP"], queries[name]) for name in test_sets}
claims = trec_runs.verdicts(table, tests, type_tests, glove_run=glove_run)
display(Markdown("\n\n".join(f"- {line}" for line in claims)))

# %% [markdown]
# One difference from the notebook weighs on the first claim. The notebook's fastText vectors were
# pre-trained on a large web corpus; the book's are trained on the book corpus alone, about
# {glue:text}`corpus_tokens` tokens, while GloVe 6B saw six billion (chapter 2's word2vec comparison
# measures the same gap for TK-2).
# The notebook's claim is about the form of the vectors — subwords, no out-of-vocabulary word — and at
# book scale that cannot be separated from how much text the vectors were pre-trained on.
#
# These verdicts are about the book's scale: TK trained for minutes on a teacher's opinion of
# a few thousand queries, not for hours on MS MARCO. Where the spread between the p1 inits above is as
# large as the difference a claim is about, no single run can settle it — which is also why the
# notebook reported its ensemble.

# %% tags=["hide-input"]
summary = {
    "profile": chapter.profile.name,
    "device": str(chapter.device),
    "tk": tk_name,
    "inits": list(trec.inits),
    "p1_init": p1_init,
    "p2_vectors": trec.p2_vectors,
    "seconds": {"inits": init_seconds, "p2": p2_seconds},
    "table": table.to_dict(orient="records"),
    "pairwise_tests": tests.to_dict(orient="records"),
    "best_and_worst": best_worst.to_dict(orient="records"),
    "type_tests": type_tests,
    "verdicts": claims,
}
chapter.finish(summary)
