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
# # Long documents: FirstP, MaxP and where relevance sits
#
# Every model so far re-ranked *passages*: a few dozen words, which BERT reads whole. A document runs to
# thousands of words, BERT reads 512 word pieces at most, and the time budget of {doc}`03_time_budget` is sharpest
# here: a document is many passages, so whatever a re-ranker costs per passage it pays many times per document.
# Slide 13 of the lecture gives BERT-cat's two simple answers {cite}`dai2019deeper`: **FirstP** reads the first
# 512 pieces and ignores the rest; **MaxP** reads the document in windows and keeps the best window's score. The
# lecture's expectation is that FirstP loses exactly the documents whose relevant part comes late, and MaxP does
# not — at the price of one BERT-cat pass per window.
#
# The book's data hold passages only, so this chapter uses two sources of long documents:
#
# - **TIME**, a real long-document collection: 423 Time magazine articles of 1963 with 83 queries and binary
#   judgments (the Cornell SMART test collection). It is much older and smaller than TREC DL, so the models
#   trained in {doc}`02_training` are evaluated on it as they are (zero-shot), never trained or tuned on it.
# - **Assembled documents**: sequences of the book's real TREC DL passages in which one passage judged relevant to
#   the query sits at a recorded position among passages that are not, with lengths drawn from TIME's. They are
#   *not real documents* — every table and figure built on them says "assembled" — but they know where relevance
#   sits, which no real collection here does.

# %% tags=["parameters"]
profile = "book"  # smoke | book | paper
device = "auto"  # "auto" takes a CUDA GPU when there is one
seed = 42  # seeds the assembled documents
# None keeps the profile's default (lib.core.profiles.PROFILES, section `long`)
time_depth = None  # BM25 candidates re-ranked per TIME query

# %% tags=["hide-input"]
import time

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display
from myst_nb import glue

from lib.chapters import long_documents_reading
from lib.chapters.prologue import start_chapter
from lib.chapters.tables import plain
from lib.core.atomic import write_csv
from lib.core.plotting import save_figure
from lib.data import book_texts
from lib.evaluation import comparison, position_effect
from lib.evaluation.measures import write_trec_run
from lib.experiments import artifacts, long_documents
from lib.models.long_bert import FirstP, MaxP

chapter = start_chapter("09_long_documents", profile, seed, device, section="long",
                        overrides={"time_depth": time_depth})  # fmt: skip
out, long = chapter.out, chapter.settings
long

# %% [markdown]
# ## The documents
#
# TIME's documents and BM25's top {glue:text}`time_depth` of each query (the book's BM25 over a Lucene index of the
# 423 articles), and the test years' documents assembled from their judged passages: per query,
# {glue:text}`relevant_docs` documents around a passage judged relevant (grade ≥ 2) and {glue:text}`other_docs`
# documents without one, filled with the query's passages judged 0 and then with other queries' BM25 candidates:

# %%
start = time.perf_counter()
tests, texts = artifacts.test_sets(chapter.profile), book_texts()
time_judged, time_documents = long_documents.time_set(chapter.profile, out / "time", long.time_depth)
lengths = long_documents.time_lengths()
counts = (long.relevant_per_query, long.others_per_query)
assembled, assembled_judged, assembled_bm25 = {}, {}, {}
for name, test in tests.items():
    assembled[name], assembled_judged[name], assembled_bm25[name] = long_documents.assembled_set(
        test, texts, lengths, counts, chapter.seed, out / f"{name}-assembled"
    )
glue("time_depth", f"{long.time_depth}", display=False)
glue("relevant_docs", f"{long.relevant_per_query}", display=False)
glue("other_docs", f"{long.others_per_query}", display=False)
statistics = long_documents_reading.collection_table(time_judged, time_documents, assembled)
write_csv(out / "collections.csv", statistics)
print(f"documents ready in {time.perf_counter() - start:.0f} s")
plain(statistics, precision=1)

# %% tags=["hide-input"]
figure = long_documents_reading.plot_collections(time_documents, assembled)
save_figure(figure, out / "collections.png")
plt.show()

# %% [markdown]
# The left panel compares the lengths (assembled documents are drawn to TIME's, and end at a passage boundary);
# the right one shows where the relevant passage sits in the assembled documents — anywhere, by construction.
#
# ## BERT-cat on documents: FirstP and MaxP (slide 13)
#
# Both use chapter 2's BERT-cat as it is — trained on passages, never on documents. FirstP reads
# `[CLS] q [SEP]` and the document's first pieces, {glue:text}`first_pieces` positions in all; MaxP cuts the
# document into windows of {glue:text}`window` pieces every {glue:text}`stride` (Dai and Callan's 150 and 75 words,
# here in word pieces) and keeps the best window's score. A document is read up to its first
# {glue:text}`max_pieces` pieces.

# %%
bert_cat = artifacts.trained_model(chapter.profile, "bert-cat", chapter.device)
readers = {
    "firstp": FirstP(bert_cat.model, max_length=long.first_pieces),
    "maxp": MaxP(bert_cat.model, size=long.window, stride=long.stride),
}
labels = {"bm25": "BM25", "firstp": "BERT-cat FirstP", "maxp": "BERT-cat MaxP"}
glue("first_pieces", f"{readers['firstp'].max_length}", display=False)  # BERT's positions cap the setting
glue("window", f"{long.window}", display=False)
glue("stride", f"{long.stride}", display=False)
glue("max_pieces", f"{long.max_pieces:,}", display=False)
runs = {"time": {"bm25": time_judged.run}, **{name: {"bm25": assembled_bm25[name]} for name in assembled}}
sets = {"time": (time_judged, time_documents),
        **{name: (assembled_judged[name], assembled[name].documents) for name in assembled}}  # fmt: skip
for reader, model in readers.items():
    method = f"{reader}-{long.first_pieces}" if reader == "firstp" else f"{reader}-{long.window}-{long.stride}"
    for name, (judged, documents) in sets.items():
        runs[name][reader] = long_documents.document_scores(
            model, bert_cat.tokenizer, judged, documents, chapter.profile, method, long.max_pieces
        )
for name, by_model in runs.items():
    for system, run in by_model.items():
        write_trec_run(run, chapter.run_path(name if name == "time" else f"{name}-assembled", system), tag=system)

# %% [markdown]
# ### TIME
#
# nDCG@10 and MAP of each re-ranking of BM25's top {glue:text}`time_depth`, with the paired two-tailed t-test of
# each model against BM25 (Bonferroni over the models; `*`: significant at 0.05):

# %%
time_table = long_documents_reading.effectiveness_table(
    comparison.compare(runs["time"], time_judged, ["nDCG@10", "MAP"], baseline="bm25"), labels
)
write_csv(out / "time.csv", time_table)
plain(time_table, precision=3)

# %% tags=["hide-input"]
display(Markdown(long_documents_reading.effectiveness_reading(time_table, "TIME")))

# %% [markdown]
# ## Where relevance sits
#
# On the assembled documents each relevant document is ranked among its query's documents *without* a relevant
# passage (1 is above all of them), so each is measured alone. Its reciprocal rank, by where its relevant passage
# sits — the lecture's expectation is a falling line for FirstP and a flat one for MaxP:

# %%
ranks = {
    name: {labels[system]: position_effect.relevant_ranks(run, assembled[name].layouts)
           for system, run in runs[name].items()}
    for name in assembled
}  # fmt: skip
figure = long_documents_reading.plot_positions(ranks, long.position_bins)
save_figure(figure, out / "positions.png")
plt.show()

# %% [markdown]
# The trend, tested: Spearman's rank correlation between the relevant passage's position and the reciprocal rank,
# per model and year (two-tailed; Bonferroni over the models of a year):

# %%
trends = pd.concat(
    [position_effect.position_trend(by_model).assign(year=name.upper()) for name, by_model in ranks.items()],
    ignore_index=True,
)
write_csv(out / "position_trends.csv", trends)
plain(trends[["year", "model", "documents", "rho", "p_bonferroni", "trend"]], precision=3)

# %% tags=["hide-input"]
display(Markdown(long_documents_reading.position_reading(trends)))

# %% [markdown]
# ## What a document costs
#
# Documents scored per millisecond on {glue:text}`long_device`, tokenising included, on the first
# {glue:text}`timed_documents` assembled DL19 documents. FirstP pays one BERT-cat pass per document, MaxP one per
# window:

# %%
first = next(iter(assembled))
speeds = pd.DataFrame([
    {"model": labels[reader], "documents / ms": long_documents.documents_per_ms(
        model, bert_cat.tokenizer, assembled_judged[first], assembled[first].documents, long.timed_documents,
        long.max_pieces)}
    for reader, model in readers.items()
])  # fmt: skip
glue("long_device", str(chapter.device), display=False)
glue("timed_documents", f"{long.timed_documents}", display=False)
write_csv(out / "speeds.csv", speeds)
plain(speeds, precision=4)

# %% [markdown]
# ## What this chapter shows
#
# FirstP and MaxP are the cheapest ways to put a passage-trained BERT-cat on documents: one reads what fits, the
# other reads everything at the cost of a pass per window. The lecture's TKL and IDCM (slides 34–40) aim at MaxP's
# effectiveness for less than its cost; this chapter's measurements of position and cost are the yardstick they
# will be held to.

# %% tags=["remove-cell"]
summary = {
    "time": time_table.to_dict("records"),
    "trends": trends.to_dict("records"),
    "speeds": speeds.to_dict("records"),
}
chapter.finish(summary)
