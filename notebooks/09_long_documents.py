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
# # Long documents: FirstP, MaxP, TKL and IDCM
#
# Every model so far re-ranked *passages*: a few dozen words, which BERT reads whole. A document runs to
# thousands of words, BERT reads 512 word pieces at most, and the time budget of {doc}`03_time_budget` is sharpest
# here: a document is many passages, so whatever a re-ranker costs per passage it pays many times per document.
# Slide 13 of the lecture gives BERT-cat's two simple answers {cite}`dai2019deeper`: **FirstP** reads the first
# 512 pieces and ignores the rest; **MaxP** reads the document in windows and keeps the best window's score. The
# lecture's expectation is that FirstP loses exactly the documents whose relevant part comes late, and MaxP does
# not — at the price of one BERT-cat pass per window. Slides 34–40 then show two ways to read a whole document for
# less: **TKL**, TK's kernels over a document contextualised in chunks, and **IDCM**, a cascade in which a fast
# student picks the few windows BERT-cat reads.
#
# The book's data hold passages only, so this chapter uses two sources of long documents:
#
# - **TIME**, a real long-document collection: 423 Time magazine articles of 1963 with 83 queries and binary
#   judgments (the Cornell SMART test collection). It is much older and smaller than TREC DL, so the models
#   trained in {doc}`02_training` are evaluated on it as they are (zero-shot), never trained or tuned on it.
# - **Assembled documents**: sequences of the book's real TREC DL passages in which one passage judged relevant to
#   the query sits at a recorded position among passages that are not, with lengths drawn from TIME's. They are
#   *not real documents* — every table and figure built on them says "assembled" — but they know where relevance
#   sits, which no real collection here does. On them a **controlled position sweep** moves one relevant passage
#   through one document, the cleanest test of slide 13.

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
from lib.core import paths
from lib.core.atomic import write_csv
from lib.core.plotting import save_figure
from lib.data import assembled_documents, book_texts
from lib.evaluation import comparison, position_effect
from lib.evaluation.measures import per_query, write_trec_run
from lib.experiments import artifacts, long_documents, long_training, model_setup
from lib.models.long_bert import FirstP, MaxP
from lib.representations.text import DOC_MAX_LENGTH

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
# documents without one. Both kinds are filled from **one mixture**: {glue:text}`own_docs` of the query's own
# passages judged 0 in every document (on its topic, not relevant; fewer, but as many in each, for a query with too
# few for all its documents), the rest other queries' BM25 candidates — so that nothing but the relevant passage
# tells a relevant document from a non-relevant one:

# %%
start = time.perf_counter()
tests, texts = artifacts.test_sets(chapter.profile), book_texts()
first_year = next(iter(tests))
time_judged, time_documents = long_documents.time_set(chapter.profile, out / "time", long.time_depth)
lengths = long_documents.time_lengths()
counts = (long.relevant_per_query, long.others_per_query, long.own_per_document)
assembled, assembled_judged, assembled_bm25 = {}, {}, {}
for name, test in tests.items():
    assembled[name], assembled_judged[name], assembled_bm25[name] = long_documents.assembled_set(
        test, texts, lengths, counts, chapter.seed, out / f"{name}-assembled"
    )
glue("time_depth", f"{long.time_depth}", display=False)
glue("relevant_docs", f"{long.relevant_per_query}", display=False)
glue("other_docs", f"{long.others_per_query}", display=False)
glue("own_docs", f"{long.own_per_document}", display=False)
bert_cat = artifacts.trained_model(chapter.profile, "bert-cat", chapter.device)  # its tokenizer counts the pieces
offsets = {name: long_documents.relevant_offsets(assembled[name], texts, bert_cat.tokenizer) for name in assembled}
statistics = long_documents_reading.collection_table(time_judged, time_documents, assembled, offsets,
                                                     long.first_pieces)  # fmt: skip
write_csv(out / "collections.csv", statistics)
print(f"documents ready in {time.perf_counter() - start:.0f} s")
plain(statistics, precision=1)

# %% [markdown]
# The mixture, measured: the query's own passages (its BM25 candidates and judged passages) among each kind of
# document's filler. An earlier version of this chapter filled relevant documents with the query's own passages
# first, and a model could find them by topic alone, wherever the relevant passage sat:

# %%
shares = {name.upper(): assembled_documents.own_shares(assembled[name], long_documents.own_passages(tests[name]))
          for name in assembled}  # fmt: skip
plain(long_documents_reading.mixture_table(shares), precision=2)

# %% tags=["hide-input"]
figure = long_documents_reading.plot_collections(time_documents, assembled, offsets)
save_figure(figure, out / "collections.png")
plt.show()

# %% [markdown]
# The left panel compares the lengths (assembled documents are drawn to TIME's, and end at a passage boundary);
# the right one shows where the relevant passage starts in the assembled documents, in BERT's word pieces — the
# unit FirstP's cut counts in.
#
# ## BERT-cat on documents: FirstP and MaxP (slide 13)
#
# Both use chapter 2's BERT-cat as it is — trained on passages, never on documents. FirstP reads
# `[CLS] q [SEP]` and the document's first pieces, {glue:text}`first_pieces` positions in all; MaxP cuts the
# document into windows of {glue:text}`window` pieces every {glue:text}`stride` (Dai and Callan's 150 and 75 words;
# here word pieces, and on a budget windows that do not overlap) and keeps the best window's score. An assembled
# document is read up to its first {glue:text}`max_pieces` pieces, a TIME article up to its first
# {glue:text}`time_max_pieces` (the authors of TKL and IDCM read 2,000).

# %%
readers = {
    "firstp": FirstP(bert_cat.model, max_length=long.first_pieces),
    "maxp": MaxP(bert_cat.model, size=long.window, stride=long.stride),
}
labels = {"bm25": "BM25", "firstp": "BERT-cat FirstP", "maxp": "BERT-cat MaxP"}
glue("first_pieces", f"{readers['firstp'].max_length}", display=False)  # BERT's positions cap the setting
glue("window", f"{long.window}", display=False)
glue("stride", f"{long.stride}", display=False)
glue("max_pieces", f"{long.max_pieces:,}", display=False)
glue("time_max_pieces", f"{long.time_max_pieces:,}", display=False)
reach = {name: long.time_max_pieces if name == "time" else long.max_pieces for name in ["time", *assembled]}
runs = {"time": {"bm25": time_judged.run}, **{name: {"bm25": assembled_bm25[name]} for name in assembled}}
sets = {"time": (time_judged, time_documents),
        **{name: (assembled_judged[name], assembled[name].documents) for name in assembled}}  # fmt: skip
for reader, model in readers.items():
    method = f"{reader}-{long.first_pieces}" if reader == "firstp" else f"{reader}-{long.window}-{long.stride}"
    for name, (judged, documents) in sets.items():
        runs[name][reader] = long_documents.document_scores(
            model, bert_cat.tokenizer, judged, documents, chapter.profile, method, reach[name]
        )

# %% [markdown]
# TIME has no reference that reads documents well unless the book brings one: the **teacher** of chapter 2, the
# zero-shot MiniLM bi-encoder (labelled as the teacher wherever it appears), read as FirstP (the first
# {glue:text}`first_pieces` positions, its document side encoded apart from the query) and MaxP (the best cosine
# of the same windows as BERT-cat's MaxP):

# %%
teacher = artifacts.trained_model(chapter.profile, "bi-encoder", chapter.device)
teacher_readers = {"bi-encoder-firstp": FirstP(teacher.model, max_length=long.first_pieces),
                   "bi-encoder-maxp": MaxP(teacher.model, size=long.window, stride=long.stride)}  # fmt: skip
for reader, model in teacher_readers.items():
    method = f"{reader}-{long.first_pieces}" if reader.endswith("firstp") else f"{reader}-{long.window}-{long.stride}"
    runs["time"][reader] = long_documents.document_scores(
        model, teacher.tokenizer, time_judged, time_documents, chapter.profile, method, long.time_max_pieces
    )
labels |= {"bi-encoder-firstp": "bi-encoder FirstP (teacher)", "bi-encoder-maxp": "bi-encoder MaxP (teacher)"}

# %% [markdown]
# ## Training on assembled documents
#
# TKL and IDCM are trained on documents, which the book has only assembled. The training documents are assembled
# around the teacher's best passage for each of the first {glue:text}`train_queries` teacher-labelled training
# queries of {doc}`02_training` — one document around it, {glue:text}`other_docs` without it, from the same mixture
# as the test documents (the query's lower-ranked candidates as its own passages) — and validated on DL21's
# assembled documents; no test-year query trains or validates anything. The mixture, measured as above:

# %%
start = time.perf_counter()
settings, protocol_seed, protocol = artifacts.training_protocol(chapter.profile)
train_set, train_queries = long_training.training_set(protocol, settings, long, lengths, chapter.seed)
validation = long_documents.assembled_set(
    protocol.validation, texts, lengths, counts, chapter.seed, out / "validation-assembled"
)[:2]
glue("train_queries", f"{len(train_queries):,}", display=False)
print(f"{len(train_set.documents):,} training documents, {len(validation[0].documents):,} validation documents; "
      f"ready in {time.perf_counter() - start:.0f} s")  # fmt: skip
train_own = {qid: set(protocol.distillation.teacher[qid]) for qid in train_queries}
validation_own = long_documents.own_passages(protocol.validation)
shares = {"training": assembled_documents.own_shares(train_set, train_own),
          "DL21 (validation)": assembled_documents.own_shares(validation[0], validation_own)}  # fmt: skip
validation = (validation[1], validation[0].documents)
plain(long_documents_reading.mixture_table(shares), precision=2)

# %% [markdown]
# ## TKL: contextualising a document in chunks (slides 34–37)
#
# TKL {cite}`hofstaetter2020tkl` reads a document the way TK reads a passage, in pieces it can afford: the
# document is contextualised in overlapping chunks of 40 words (5 of overlap on each side), matched against the
# query with TK's kernels, and scored by a learned saturation over windows of 30 words every 2; the best three
# non-overlapping regions make the score (the authors' defaults, `lib.models.tkl`). Here on the GloVe vectors of
# TK-2, trained with the TK paper's pairwise hinge on the training documents — and therefore narrower than the
# authors' TKL: {glue:text}`tkl_width`-d vectors contextualised by {glue:text}`tkl_heads` attention heads of
# {glue:text}`tkl_head_dim`, where the authors' TKL reads 300-d vectors with 10 heads of 30 (the book has no 300-d
# vectors off the paper path):

# %%
start = time.perf_counter()
representations = model_setup.prepare_representations(chapter.with_seed(protocol_seed), settings,
                                                      with_small_bert=False)  # fmt: skip
tkl = long_training.train_tkl(representations, train_set, train_queries, validation, settings, long, chapter)
for name, (judged, documents) in sets.items():
    runs[name]["tkl"] = long_documents.document_scores(
        tkl.model, representations.vocabulary, judged, documents, chapter.profile, "tkl", reach[name]
    )
labels["tkl"] = "TKL"
glue("tkl_width", f"{representations.embeddings.shape[1]}", display=False)
glue("tkl_heads", f"{tkl.model.config.num_heads}", display=False)
glue("tkl_head_dim", f"{tkl.model.config.head_dim}", display=False)
print(f"TKL: best validation {settings.validation_metric} {tkl.best_metric:.3f} at step {tkl.best_step}; "
      f"trained and applied in {time.perf_counter() - start:.0f} s")  # fmt: skip

# %% [markdown]
# Where does TKL look? For every relevant assembled document, its best region against the relevant passage: how
# often the region overlaps it, beside how often a region of the same width placed at random would (slide 37
# shows the authors' distribution of region positions on real documents). The chance differs per document (its
# length and its passage's), so the test is exact: the number of documents covered by chance is Poisson-binomial,
# and *p* is its one-sided tail at the observed count (Bonferroni over the two years):

# %%
regions = pd.concat(
    [long_training.tkl_regions(tkl.model, representations.vocabulary, assembled_judged[name], assembled[name],
                               texts, long.max_pieces).assign(year=name.upper()) for name in assembled],
    ignore_index=True,
)  # fmt: skip
write_csv(out / "tkl_regions.csv", regions)
coverage = position_effect.coverage_table(regions, "year")
display(Markdown(long_documents_reading.coverage_reading(coverage)))
plain(coverage, precision=3)

# %% tags=["hide-input"]
figure = long_documents_reading.plot_regions(regions)
save_figure(figure, out / "tkl_regions.png")
plt.show()

# %% [markdown]
# Slide 37 asks the same of real documents, where nobody marked the relevant passage: where in a document do TKL's
# top regions sit? For every relevant document among TIME's candidates, the middle of each of its three regions:

# %%
time_regions = long_training.region_positions(tkl.model, representations.vocabulary, time_judged, time_documents,
                                              long.time_max_pieces)  # fmt: skip
write_csv(out / "time_regions.csv", time_regions)
best = time_regions[time_regions["rank"] == 1]["position"]
glue("best_first_fifth", f"{(best < 0.2).mean():.0%}", display=False)
glue("best_last_fifth", f"{(best >= 0.8).mean():.0%}", display=False)
glue("time_region_documents", f"{len(best)}", display=False)
figure = long_documents_reading.plot_region_positions(time_regions)
save_figure(figure, out / "time_regions.png")
plt.show()

# %% [markdown]
# TKL's best region lies in the first fifth of {glue:text}`best_first_fifth` of the
# {glue:text}`time_region_documents` relevant TIME documents and in the last fifth of {glue:text}`best_last_fifth`.

# %% [markdown]
# ## IDCM: a cascade inside the document (slides 38–40)
#
# IDCM {cite}`hofstaetter2021idcm` lets a fast student (kernel pooling over convolved 3-grams, the authors' "ck")
# score every window of 50 pieces (with 7 of context on each side), and BERT-cat — chapter 2's, frozen — score only
# the student's best *k*; the best three BERT-cat windows make the score. The student learns without labels, by
# distillation: on the training documents it learns to order each document's windows as BERT-cat orders them
# (the authors' LambdaLoss). The authors also fine-tune BERT on documents first, and learn the weights that
# aggregate the best three window scores; here BERT-cat stays as chapter 2 trained it, on passages, and the three
# scores are **summed** (the weights keep their initial 1: only the student learns).
#
# **Exercise** (a student notebook with `make exercises`): the cascade's middle step, the selection. Given the
# student's score of every window and which windows a document really has, mark each document's *k* best windows —
# all of them when it has fewer. The book's page has a solution in the collapsed cell below; the cell's checks say
# whether yours is right.

# %% tags=["exercise", "hide-input"]
import torch


def select_windows(scores, valid, k):
    """IDCM's selection (slide 38): per document (a row; ``valid`` false where it has no such window), a boolean
    mask of its ``k`` best-scored valid windows."""
    # BEGIN SOLUTION
    best = scores.masked_fill(~valid, float("-inf")).topk(min(k, scores.shape[1]), dim=1).indices
    return torch.zeros_like(valid).scatter(1, best, True) & valid
    # END SOLUTION


scores = torch.tensor([[0.1, 0.9, 0.4, 0.7], [0.5, 0.2, 0.8, 0.3]])
valid = torch.tensor([[True, True, True, True], [True, True, False, False]])  # the second document: two windows
assert select_windows(scores, valid, 2).tolist() == [[False, True, False, True], [True, True, False, False]]
assert select_windows(scores, valid, 3).tolist() == [[False, True, True, True], [True, True, False, False]]
print("select_windows keeps each document's best windows, and only windows it has")

# %%
start = time.perf_counter()
idcm = long_training.train_idcm(bert_cat.model, bert_cat.tokenizer, train_set, train_queries, validation,
                                settings, long, chapter)  # fmt: skip
sweep_sets = {"validation": validation, **{name: sets[name] for name in assembled}}
timed = (assembled_judged[first_year], assembled[first_year].documents, long.timed_documents, long.max_pieces)
ks = [*long.idcm_ks, None]
cascade = {(k, name): run for name, (judged, documents) in sweep_sets.items()
           for k, run in long_documents.cascade_scores(idcm.model, bert_cat.tokenizer, judged, documents,
                                                       chapter.profile, ks, long.max_pieces).items()}  # fmt: skip
idcm_speeds = {}
for k in ks:
    idcm.model.select_k = k
    idcm_speeds[k] = long_documents.documents_per_ms(idcm.model, bert_cat.tokenizer, *timed)
maxp_speed = long_documents.documents_per_ms(readers["maxp"], bert_cat.tokenizer, *timed)
glue("timed_documents", f"{long.timed_documents}", display=False)
print(f"IDCM's student trained and its cascade swept in {time.perf_counter() - start:.0f} s")

# %% [markdown]
# The cascade at every *k* ("all": every window to BERT-cat): nDCG@10 on DL21's assembled documents (validation)
# and the test years', and documents per millisecond on {glue:text}`long_device` (the first
# {glue:text}`timed_documents` assembled DL19 documents, tokenising included), beside MaxP's. Validation chooses
# the smallest *k* within 0.01 nDCG@10 of the full cascade:

# %%
effectiveness = long_training.cascade_effectiveness(cascade, {"validation": validation[0], **assembled_judged})
chosen_k = long_training.choose_k(effectiveness["validation"].to_dict())
cascade_table = long_documents_reading.cascade_table(effectiveness, idcm_speeds, maxp_speed)
write_csv(out / "idcm_cascade.csv", cascade_table)
idcm.model.select_k = chosen_k
for name in assembled:
    runs[name]["idcm"] = cascade[chosen_k, name]
time_ks = [*long.idcm_ks, *([None] if chosen_k is None else [])]  # TIME: every k, the chosen one named "idcm"
for k, run in long_documents.cascade_scores(idcm.model, bert_cat.tokenizer, time_judged, time_documents,
                                            chapter.profile, time_ks, long.time_max_pieces).items():  # fmt: skip
    system = "idcm" if k == chosen_k else f"idcm-{k}"
    runs["time"][system] = run
    labels[system] = f"IDCM (k = {k or 'all'}{', chosen' if k == chosen_k else ''})"
plain(cascade_table, precision=3)

# %% [markdown]
# Slide 40's claim — a few windows reach almost the full model's effectiveness at several times its speed — tested
# on the book's terms: IDCM at the chosen *k* against MaxP on assembled DL19 (paired t-test), and its speed against
# MaxP's:

# %%
claim = comparison.compare({"maxp": runs[first_year]["maxp"], "idcm": runs[first_year]["idcm"]},
                           assembled_judged[first_year], ["nDCG@10"], baseline="maxp")  # fmt: skip
display(Markdown(long_documents_reading.cascade_reading(claim, idcm_speeds[chosen_k] / maxp_speed, chosen_k)))

# %%
for name, by_model in runs.items():
    for system, run in by_model.items():
        write_trec_run(run, chapter.run_path(name if name == "time" else f"{name}-assembled", system), tag=system)

# %% [markdown]
# ### TIME
#
# nDCG@10 and MAP of each re-ranking of BM25's top {glue:text}`time_depth` — IDCM at every *k* of the sweep, the
# one validation chose marked — with the paired two-tailed t-test of each model against BM25 (Bonferroni over the
# models; `*`: significant at 0.05):

# %%
time_table = long_documents_reading.effectiveness_table(
    comparison.compare(runs["time"], time_judged, ["nDCG@10", "MAP"], baseline="bm25"), labels
)
write_csv(out / "time.csv", time_table)
plain(time_table, precision=3)

# %% tags=["hide-input"]
display(Markdown(long_documents_reading.effectiveness_reading(time_table, "TIME")))

# %% [markdown]
# And the re-rankers against each other (IDCM at its chosen *k*) and against the teacher read as MaxP, paired
# two-tailed t-tests on nDCG@10:

# %%
rerankers = ["firstp", "maxp", "tkl", "idcm", "bi-encoder-maxp"]
time_pairs = comparison.pairwise_tests(
    {labels[name]: per_query(runs["time"][name], time_judged.qrels)["nDCG@10"] for name in rerankers}
)
write_csv(out / "time_pairs.csv", time_pairs)
display(Markdown(long_documents_reading.pairs_reading(time_pairs, "TIME")))
plain(time_pairs[["run", "against", "mean", "mean against", "delta", "p_bonferroni", "significant"]], precision=3)

# %% [markdown]
# ### Why the passage-trained students transfer badly
#
# Every model but the teacher learned on passages of at most {glue:text}`passage_cap` word pieces (BERT-cat, fed
# {glue:text}`first_pieces` positions as FirstP, never saw a longer input), and meets here upper-case articles of
# another era and another length:

# %%
caps = sorted({long.first_pieces, long.max_pieces, long.time_max_pieces})
candidates = {pid for run in tests[first_year].run.values() for pid in run if pid in texts}
passages = [texts[pid] for pid in sorted(candidates)]
transfer = long_documents_reading.transfer_table(
    {"TIME articles": list(time_documents.values()), f"{first_year.upper()} candidates (passages)": passages},
    bert_cat.tokenizer, caps,
)  # fmt: skip
glue("passage_cap", f"{DOC_MAX_LENGTH}", display=False)
write_csv(out / "transfer.csv", transfer)
examples = long_documents_reading.split_words(list(time_documents.values()), bert_cat.tokenizer)
display(Markdown(long_documents_reading.transfer_reading(transfer, caps, examples)))
plain(transfer, precision=2)

# %% [markdown]
# ## Where relevance sits: a controlled sweep (slide 13)
#
# The lecture's expectation is that FirstP loses a document whose relevance sits beyond what it reads, and MaxP,
# TKL and IDCM do not. The cleanest test holds everything else fixed: for each test query, one relevant passage
# and one set of filler passages of the same mixture as above, {glue:text}`sweep_pieces` word pieces long; the
# same document is rebuilt with the relevant passage starting at each of {glue:text}`sweep_offsets` pieces (the
# passage boundary nearest each) and at the end — beyond what any model reads, where every model must fail (the
# design's positive control). Each version is ranked among the query's non-relevant assembled documents (1: above
# all of them), so each offset meets the same competitors; IDCM at every *k* of its sweep, each against its own
# scores of the competitors; BM25, which reads every word whatever its place, is the reference that cannot move:

# %%
start = time.perf_counter()
scorers = {"firstp": (readers["firstp"], bert_cat.tokenizer, f"firstp-{long.first_pieces}"),
           "maxp": (readers["maxp"], bert_cat.tokenizer, f"maxp-{long.window}-{long.stride}"),
           "tkl": (tkl.model, representations.vocabulary, "tkl")}  # fmt: skip
sweep = {name: long_documents.sweep_set(tests[name], assembled[name], texts, bert_cat.tokenizer, long, chapter.seed,
                                        out / f"{name}-sweep") for name in assembled}  # fmt: skip
swept = {}
for name in assembled:
    swept[name] = long_documents.sweep_ranks_by_model(scorers, sweep[name], assembled[name], runs[name],
                                                      chapter.profile, long.max_pieces)  # fmt: skip
    cascades = long_documents.cascade_sweep_ranks(idcm.model, bert_cat.tokenizer, sweep[name], assembled[name],
                                                  {k: cascade[k, name] for k in time_ks}, chapter.profile,
                                                  long.max_pieces)  # fmt: skip
    swept[name] |= {"idcm" if k == chosen_k else f"idcm-{k}": frame for k, frame in cascades.items()}
by_label = {name: {labels[system]: frame for system, frame in by_model.items()} for name, by_model in swept.items()}
sweep_tests = pd.concat([position_effect.sweep_tests(by_model).assign(year=name.upper())
                         for name, by_model in by_label.items()], ignore_index=True)  # fmt: skip
write_csv(out / "position_sweep.csv", sweep_tests)
glue("sweep_pieces", f"{2 * long.max_pieces:,}", display=False)
glue("sweep_offsets", ", ".join(f"{offset:,}" for offset in long.sweep_offsets), display=False)
print(f"the sweep scored in {time.perf_counter() - start:.0f} s")
plain(long_documents_reading.sweep_table(sweep_tests))

# %% [markdown]
# Mean reciprocal rank of the relevant document at each offset ("end": beyond every model's cap); `*` marks a
# significant fall from the same queries' rank at offset 0, `+` a significant rise. As a figure:

# %% tags=["hide-input"]
figure = long_documents_reading.plot_sweep(sweep_tests, readers["firstp"].max_length, long.max_pieces)
save_figure(figure, out / "position_sweep.png")
plt.show()

# %% tags=["hide-input"]
display(Markdown(long_documents_reading.sweep_reading(sweep_tests)))

# %% [markdown]
# Can a reader of windows lose a passage without it ever leaving its reach? This chapter's MaxP cuts the document
# into windows of {glue:text}`window` pieces every {glue:text}`stride` — windows that do not overlap, a budget (Dai
# and Callan step half a window) — so a relevant passage that straddles a boundary is read in two halves, each
# scored as a passage without the other. One suspect for any fall of MaxP inside its reach, tested: inside the
# document and past its start (offsets other than 0 and the end), MaxP's reciprocal rank where one window holds the
# relevant passage whole against where its windows split it:

# %%
windows = pd.concat([position_effect.window_split_table(swept[name]["maxp"], long.window, long.stride)
                     .assign(year=name.upper()) for name in assembled], ignore_index=True)  # fmt: skip
write_csv(out / "maxp_windows.csv", windows)
display(Markdown(long_documents_reading.windows_reading(windows)))
plain(windows, precision=3)

# %% [markdown]
# ## What a document costs
#
# Chapter 3's clock ({doc}`03_time_budget`, the two regimes) on TIME's documents: per query, the first
# {glue:text}`regime_queries` TIME queries re-ranking {glue:text}`regime_counts` of their BM25 documents on
# {glue:text}`long_device`, each read to {glue:text}`time_max_pieces` pieces. FirstP pays one BERT-cat pass per
# document, MaxP one per window, IDCM one per selected window plus its student on every window, TKL no BERT at all —
# and TKL, whose document side does not depend on the query, can also be *stored*: its chunk-contextualised document
# vectors computed at index time and read back at query time (the read timed). Documents per ms is what one more
# document costs (the slope between the two counts):

# %%
costed = {"firstp": (readers["firstp"], bert_cat.tokenizer), "maxp": (readers["maxp"], bert_cat.tokenizer),
          "tkl": (tkl.model, representations.vocabulary), "idcm": (idcm.model, bert_cat.tokenizer)}  # fmt: skip
costs = long_documents.document_costs(costed, time_judged, time_documents, long, out / "indexes")
costs["model"] = costs["model"].map(labels)
glue("regime_queries", f"{costs['queries'].iloc[0]}", display=False)
glue("regime_counts", " and ".join(map(str, long.regime_counts)), display=False)
glue("long_device", str(chapter.device), display=False)
write_csv(out / "document_costs.csv", costs)
shown = ["model", "regime", "dtype", "bytes_per_passage", *(f"ms_{n}" for n in long.regime_counts), "documents_per_ms"]
plain(costs[shown].rename(columns={"bytes_per_passage": "bytes per document", "documents_per_ms": "documents / ms"}),
      precision=3)  # fmt: skip

# %% [markdown]
# The same architectures timed on a GPU, committed with the book (`python -m benchmarks.long_documents`: untrained
# weights, whose speed does not depend on them; documents of eight real DL19 passages joined; bf16 autocast), at
# two batch sizes: IDCM's selection is many small steps, which a GPU runs no faster for a small batch than for a
# large one — compare its rows at both sizes. Each file names the MaxP it timed: one whose windows start every
# half window reads each piece twice, twice this chapter's MaxP work:

# %%
gpu_speeds = long_documents_reading.committed_speeds(paths.REPO_ROOT / "benchmarks" / "results" / "long")
plain(gpu_speeds, precision=3) if len(gpu_speeds) else Markdown("*No GPU timing is committed yet.*")

# %% [markdown]
# ## What this chapter shows
#
# FirstP and MaxP are the cheapest ways to put a passage-trained BERT-cat on documents: one reads what fits, the
# other reads everything at the cost of a pass per window. The controlled sweep shows what that difference means
# when all else is held fixed, and its end — beyond every model's cap — shows the design could show a fall for
# any of them. TKL and IDCM (slides 34–40) aim at MaxP's effectiveness for less than its cost; the tables above
# say, on TIME and on assembled documents, how close each came and at what speed, and the teacher read as MaxP
# says how much of TIME a model that reads documents well can get. The assembled documents are the book's
# construction, not real documents: they show where a model looks, not how it would fare on a real document
# collection.

# %% tags=["remove-cell"]
summary = {
    "time": time_table.to_dict("records"),
    "time_pairs": time_pairs.to_dict("records"),
    "tkl": {
        "best_step": tkl.best_step,
        "validation": tkl.best_metric,
        "coverage": coverage.to_dict("records"),
        "time_best_region_first_fifth": float((best < 0.2).mean()),
    },
    "idcm": {"chosen_k": chosen_k, "cascade": cascade_table.to_dict("records")},
    "position_sweep": sweep_tests.to_dict("records"),
    "maxp_windows": windows.to_dict("records"),
    "transfer": transfer.to_dict("records"),
    "costs": costs[shown].to_dict("records"),
}
chapter.finish(summary)
