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
# # TILDE: re-ranking without a neural network at query time
#
# TK made a Transformer re-ranker cheap enough for a time budget by keeping query and passage apart
# until one match matrix. TILDE {cite}`zhuang2021tilde` goes further: it moves *all* the neural work
# to indexing time. A BERT with its masked-language-model head read at the first position maps a
# passage $d$ to one likelihood $P(t \mid d)$ for every word piece $t$ of the vocabulary (§3.2). These
# vectors are computed once per passage and stored. A query is then scored by looking up its pieces:
#
# $$\text{TILDE-QL}(q \mid d) = \sum_{i} \log P(q_i \mid d) \qquad \text{(eq. 4)}$$
#
# — a tokenizer and a sum, no network. The same model read the other way, from the query, gives
# $\text{TILDE-DL}(d \mid q) = \frac{1}{|d|}\sum_i \log P(d_i \mid q)$ (eq. 5), which costs one BERT pass
# on the query, and the two mix as $\text{TILDE-QDL} = \alpha\,\text{QL} + (1-\alpha)\,\text{DL}$ (eq. 6).
# The model is fine-tuned with a binary cross-entropy over the vocabulary in both directions (BiQDL,
# eq. 7–8), on targets with stopwords and symbols removed (§4.3).
#
# Its successor TILDEv2 {cite}`zhuang2021tildev2` stores far less: BERT gives every *passage token*
# one weight, and a query is scored by exact matching, $s(q,d) = \sum_i \max_{j: d_j = q_i} w_j$ — one
# number per distinct piece of the passage instead of one per vocabulary piece.
#
# This chapter re-runs the paper's three results at book scale: its Table 2 (effectiveness and
# latency against BM25 and stronger first stages), its Table 3 (the ablation of losses, scorings
# and vocabulary cleaning) and its Figure 2 (the weight α). It also measures what the paper claims
# for efficiency: re-ranking 1,000 candidates in milliseconds on one CPU core, at the price of an
# index that stores one float16 value per vocabulary piece for every passage. The library is
# `lib.models.tilde`, `lib.training.tilde` and `lib.reranking.tilde_*`;
# what differs from the paper is listed in {doc}`../deviations_4_to_9`.
#
# **Protocol.** Both models start from the pre-trained all-MiniLM-L6-v2 encoder (the paper:
# `bert-base-uncased`; {doc}`02_training`'s small BERT is the named alternative, parameter `start`)
# and learn from two sources: {glue:text}`judged_source`, and chapter 2's teacher-labelled training
# queries without judged pairs, each paired with the passage the teacher ranks first. TILDE also
# learns from the collection itself: sampled passages predict their own pieces, text without any
# judgment (the book's addition). As in chapter 2, no DL19 or DL20 query or judgment trains or
# validates them, so one model serves both test years. The paper trains on the 533k MS MARCO
# training judgments.

# %% tags=["parameters"]
profile = "book"  # smoke | book | paper
device = "auto"  # where TILDE is trained and indexes; latency is always measured on the CPU
seed = 42
start = "minilm"  # the encoder TILDE and TILDEv2 start from: minilm | small-bert (the paper profile: BERT-Base)
test_sets = ["dl19", "dl20"]
first_stages = ["bm25", "splade-pp-ed"]  # re-ranked: BM25 as the paper, and a stronger first stage
variants = None  # the ablation's models (None: the profile's; lib.training.tilde_variants: also "biqdl-full")
ablation_sets = ["dl19"]  # test years the ablation's models are scored on
steps = None  # fine-tuning steps per model (None: the profile's)
batch_size = None
lr = None
alphas = [round(0.1 * i, 1) for i in range(11)]
latency_candidates = [100, 1000]
latency_repetitions = None

# %% tags=["hide-input"]
import math

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display
from myst_nb import glue

from lib.analyses import tilde_diagnostics
from lib.chapters import tilde_figures, tilde_latencies, tilde_reading, tilde_tables
from lib.chapters.prologue import start_chapter
from lib.chapters.tables import plain
from lib.core.atomic import write_csv
from lib.core.plotting import save_figure
from lib.data import book_texts, missing_sentence
from lib.evaluation import measures as evaluation
from lib.experiments import artifacts, tilde_comparisons, tilde_protocol, tilde_scorings, tilde_timings
from lib.experiments.tilde_protocol import BM25
from lib.models.tilde_vocabulary import TargetVocabulary
from lib.reranking.tilde_index import load_index
from lib.training import tilde_v2, tilde_variants
from lib.training.tilde import with_reconstruction

# %% tags=["hide-input"]
CHAPTER = "06_tilde"
tilde_overrides = dict(
    steps=steps, batch_size=batch_size, lr=lr, latency_repetitions=latency_repetitions, variants=variants
)
chapter = start_chapter(CHAPTER, profile, seed, device, section="tilde", overrides=tilde_overrides)
out, tilde_settings = chapter.out, chapter.settings  # None: the profile's (TILDEv2's schedule is there too)
steps, batch_size, lr = tilde_settings.steps, tilde_settings.batch_size, tilde_settings.lr
latency_repetitions = tilde_settings.latency_repetitions
variants = tilde_variants.check_variants(tilde_settings.variants)
tilde_protocol.check_test_sets(test_sets, ablation_sets)
depth = chapter.profile.training.candidate_depth  # chapter 2 scored this many candidates per query
STAGE_LABELS = {"bm25": "BM25", "splade-pp-ed": "SPLADE++", "tas-b": "TAS-B", "bm25-rm3": "BM25+RM3"}
print(f"TILDE: {steps} steps of {batch_size} pairs, Adam lr {lr}; variants {variants}; depth {depth}")
v2_schedule = (tilde_settings.v2_steps, tilde_settings.v2_batch_size, tilde_settings.v2_group_size)
print("TILDEv2: {} steps of {} groups of {} passages".format(*v2_schedule))

# %% [markdown]
# ## The starting encoder and the training pairs
#
# Both models start from all-MiniLM-L6-v2, the encoder of chapter 2's teacher. It ships without a
# masked-LM head, so TILDE's head is new: BERT's transform (dense, GELU, LayerNorm) with transformers'
# initialisation, and a decoder tied to the word-piece embeddings, or a copy of them when the encoder
# is frozen (`lib.models.tilde`). Every variant of the ablation starts from the same weights and sees
# the same batches.

# %%
bert = tilde_protocol.starting_bert(chapter.profile, start)
tokenizer = bert.tokenizer
print(bert)
texts = book_texts()
teacher = tilde_protocol.teacher_labelled(chapter.profile, chapter.seed)
training_data = tilde_protocol.tilde_training_data(chapter.profile, test_sets[0], texts, teacher, chapter.seed)
glue("judged_source", tilde_protocol.judged_source(training_data), display=False)
training_data = with_reconstruction(training_data, texts, tilde_settings.reconstruction, chapter.seed)
tilde_tables.training_data_table(training_data, steps, batch_size)

# %% [markdown]
# With a frozen encoder, every model of this chapter reads the same vector of the same text, so each
# is computed once and kept (`lib.models.tilde_pooled_cache`). MiniLM's TILDE reads MiniLM's own
# sentence vector (the unit-length mean), the vector chapter 2's teacher computed for every passage
# of the book's v1 collection (all of DL19's and DL20's candidates): those are reused, after a few
# are recomputed as a check. Only the other passages (the book subset's v2 passages of DL21) and the
# queries go through MiniLM here.

# %%
pooled = tilde_protocol.pooled_cache(out / "pooled", bert.tilde(), tokenizer, texts, teacher)
print(f"pooled vectors already computed: {len(pooled):,}")

# %% [markdown]
# ## Fine-tuning TILDE and its variants
#
# One model per variant: the paper's (BiQDL over the cleaned vocabulary) and the ablation's — here
# {glue:text}`variant_labels` (the paper's Table 3 also has L_DL and L_QL over the full vocabulary;
# the `variants` parameter adds them, at a few minutes each at the `book` profile's schedule). Training resumes from its
# checkpoints and a finished model is loaded, not trained again. The loss is per example (the batch's
# sum over examples divided by the batch size), each example's loss a mean over the vocabulary (eq. 7).
# What is fine-tuned: {glue:text}`tilde_trained`. A frozen encoder is the book profile's choice for its
# time budget: the head then reads vectors that never change, so each training text goes through MiniLM once
# and a step costs only the head. A frozen encoder also freezes the word-piece embeddings, and a
# decoder tied to them could learn little more than its bias, so the decoder gets its own copy (in
# DL21 validation runs, the tied head did not learn to rank). The paper profile fine-tunes everything,
# with BERT's tied head.

# %%
glue("tilde_trained", tilde_protocol.trained_part(tilde_settings.trainable_layers), display=False)
glue("variant_labels", ", ".join(tilde_variants.VARIANTS[name].label for name in variants), display=False)
glue("ablation_sets", " and ".join(s.upper() for s in ablation_sets), display=False)
trained = tilde_variants.train_variants(
    variants,
    bert.tilde,
    tokenizer,
    training_data.pairs,
    training_data.queries,
    texts,
    out / "models",
    tilde_protocol.training_config(tilde_settings, chapter.seed, chapter.device),
    reconstruction=training_data.reconstruction,
    pooled_cache=pooled,
)
curves = tilde_tables.loss_curves(trained)
write_csv(out / "training_losses.csv", curves)
save_figure(tilde_figures.plot_training_losses(curves, steps), out / "training_losses.png")
plt.show()
training_seconds = sum(r.seconds for r in trained.values())
print(f"TILDE training time this run: {training_seconds:.0f} s (0 when every model was loaded)")

# %% [markdown]
# ## Fine-tuning TILDEv2
#
# TILDEv2 learns from the same queries with its grouped cross-entropy: each query's positive (the
# judged or the teacher's first passage) against {glue:text}`v2_negatives` negatives — BM25 candidates
# not judged relevant, or the teacher's candidates from rank {glue:text}`v2_negatives_from` on — and the
# other queries' passages of the batch (`lib.training.tilde_v2`).

# %%
glue("v2_negatives", tilde_settings.v2_group_size - 1, display=False)
glue("v2_negatives_from", tilde_v2.NEGATIVES_FROM, display=False)
judged_v2_groups = tilde_protocol.judged_groups(chapter.profile, training_data, texts, depth=100)
v2_groups = judged_v2_groups + tilde_v2.teacher_groups(teacher.teacher)
v2_result = tilde_v2.train_tilde_v2(
    bert.tilde_v2(),
    tokenizer,
    v2_groups,
    training_data.queries,
    texts,
    out / "models" / "tilde-v2",
    tilde_protocol.v2_training_config(tilde_settings, chapter.seed, chapter.device),
)
v2_losses = pd.Series(v2_result.losses, index=range(1, len(v2_result.losses) + 1), name="loss")
axis = v2_losses.rolling(max(1, len(v2_losses) // 20), min_periods=1).mean().plot(figsize=(6.5, 3))
axis.set(xlabel="step", ylabel="cross-entropy (smoothed)", title=f"TILDEv2, {len(v2_groups):,} groups")
plt.show()
print(f"TILDEv2 training time this run: {v2_result.seconds:.0f} s")

# %% [markdown]
# ## The indexes: every candidate passage, once
#
# For each test year, TILDE runs once over every passage that a first stage retrieves (the
# top-{glue:text}`depth` of each first stage, with text) and stores its log-probability vector in
# float16 with the passage's cleaned pieces (`lib.reranking.tilde_index`: raw, memory-mappable
# files). This is the index that serves queries, and every TILDE number below is ranked from it; a
# float32 copy of the same vectors is kept only to check what float16 changes. TILDEv2 indexes BM25's
# candidates of both years: each distinct piece of a passage with its largest weight, in float16
# (`lib.reranking.tilde_v2_index`).

# %%
glue("depth", depth, display=False)
years = {
    test_set: tilde_protocol.evaluation_year(test_set, first_stages, texts, chapter.profile, depth)
    for test_set in test_sets
}
unheld = [stage for stage in first_stages if stage not in years[test_sets[0]]]
if unheld:
    print(missing_sentence(f"run of {', '.join(unheld)}", [f"runs/{test_sets[0]}__{stage}.trec" for stage in unheld]))
main_model = trained[tilde_variants.MAIN_VARIANT].model.to("cpu").eval()
cleaned = TargetVocabulary.cleaned(tokenizer)
main_scores, index_summaries = {}, {}
for test_set, year in years.items():
    main_scores[test_set], index_summaries[test_set] = tilde_protocol.score_both_precisions(
        main_model, tokenizer, texts, year, out / "index", cleaned, serve=test_set == test_sets[0]
    )
v2_scores, v2_index = tilde_protocol.tilde_v2_scores(
    v2_result.model, tokenizer, texts, years, out / "index" / "tilde-v2"
)
main_summary = index_summaries[test_sets[0]]["float16"]
stored = {"TILDE": main_summary.bytes_per_passage, "TILDEv2": v2_index.bytes_per_passage}
sizes = tilde_tables.index_size(stored, main_summary.passages)
write_csv(out / "index_size.csv", sizes.reset_index())
glue("bytes_per_passage", f"{main_summary.bytes_per_passage:,.0f}", display=False)
glue("v2_bytes_per_passage", f"{v2_index.bytes_per_passage:,.0f}", display=False)
glue("log_prob_bytes", f"{main_summary.log_prob_bytes_per_passage:,}", display=False)
glue("index_passages", f"{main_summary.passages:,}", display=False)
glue("ms_marco_gb", f"{sizes.loc['TILDE', 'GB, MS MARCO passage (8.8M)']:,.0f}", display=False)
glue("v2_ms_marco_gb", f"{sizes.loc['TILDEv2', 'GB, MS MARCO passage (8.8M)']:,.1f}", display=False)
sizes

# %% [markdown]
# A TILDE row holds {glue:text}`log_prob_bytes` bytes of log-probabilities (30,522 pieces × 2 bytes),
# {glue:text}`bytes_per_passage` bytes per passage with its pieces: for the 8.8 million passages of
# MS MARCO about **{glue:text}`ms_marco_gb` GB**. TILDEv2 stores {glue:text}`v2_bytes_per_passage`
# bytes per passage, about **{glue:text}`v2_ms_marco_gb` GB** for MS MARCO (without the expansion
# the TILDEv2 paper adds, which lengthens each passage).
#
# ## Table 2: effectiveness and latency
#
# Each first stage's top-{glue:text}`depth` re-ranked by TILDE-QL and TILDE-QDL (α = 0.5) from the
# float16 index, BM25's re-ranked by TILDEv2, and by chapter 2's TK-2 and BERT-cat (distilled, scores
# of all {glue:text}`depth` candidates) for context, and — the reference every re-ranker must beat —
# BM25's top-{glue:text}`depth`
# in a seeded random order. MAP is computed over the re-ranked top-{glue:text}`depth` with grade ≥ 2
# as relevant, so it is not comparable with the paper's MAP over 1,000 candidates. Marks: † the difference
# from the first stage that was re-ranked is significant (paired t-test, Bonferroni over the rows
# of that first stage, p < 0.05).

# %%
glue("first_test_set", test_sets[0].upper(), display=False)
MEASURES = ["nDCG@10", "MAP"]
systems, baseline_of = {}, {}
for test_set, year in years.items():
    systems[test_set], baseline_of[test_set], left_out = tilde_protocol.table2_systems(
        year,
        main_scores[test_set]["float16"],
        STAGE_LABELS,
        chapter.profile,
        chapter.seed,
        depth,
        {"TILDEv2": v2_scores[test_set]},
    )
    # this chapter's rankings, as TREC run files
    for system, name in tilde_protocol.run_names(systems[test_set]).items():
        evaluation.write_trec_run(systems[test_set][system], chapter.run_path(test_set, name), tag=name)
    for message in left_out:
        print(message)
table2 = tilde_comparisons.effectiveness_table(
    systems, baseline_of, {s: year[BM25].qrels for s, year in years.items()}, MEASURES
)
write_csv(out / "table2.csv", table2.reset_index(names="system"))
tilde_tables.marked_table2(table2, test_sets, MEASURES)

# %% [markdown]
# The first bar is chance: does TILDE re-order BM25's candidates better than a random order of them?
# The same paired t-test, now against the random order (Bonferroni over TILDE-QL and TILDE-QDL).

# %%
against_random = tilde_comparisons.versus_random(systems, {s: year[BM25].qrels for s, year in years.items()})
write_csv(out / "versus_random.csv", against_random)
plain(against_random)

# %% [markdown]
# ### Latency on one CPU core
#
# The paper's Table 2 splits TILDE's latency per query into *query processing* (the tokenizer, plus
# the BERT pass on the query for TILDE-QDL) and *re-ranking* (gather, sum, sort), index loading
# excluded, on a CPU. The book measures both on one thread, for 100 candidates and for 1,000 (the
# index holds at most {glue:text}`depth` candidates per query, so 1,000 repeats them: the work per
# candidate is the same). For the contrast, chapter 2's BERT-cat and TK-2 re-rank the same query's
# candidates on the same core (`lib.evaluation.efficiency.measure_latency`: score every candidate, then sort).

# %%
latency_set = test_sets[0]
latencies, left_out = tilde_timings.latency_table(
    load_index(out / "index" / f"{latency_set}-float16"),
    tokenizer,
    years[latency_set][BM25].queries,
    years[latency_set][BM25].run,
    main_model,
    texts,
    chapter.profile,
    latency_candidates,
    latency_repetitions,
)
for message in left_out:
    print(message)
v2_latencies = tilde_timings.v2_latency_table(
    v2_index, tokenizer, years[latency_set][BM25].queries, years[latency_set][BM25].run, cleaned,
    latency_candidates, latency_repetitions,
)  # fmt: skip
latencies = pd.concat([latencies, v2_latencies], ignore_index=True)
write_csv(out / "latency.csv", latencies)
top = max(latency_candidates)
ql_top = tilde_timings.latency_of(latencies, "TILDE-QL", top)
glue("ql_latency_top", f"{ql_top:.2f}", display=False)
glue("latency_top", f"{top:,}", display=False)
glue("latency_target", "meets" if ql_top <= tilde_reading.LATENCY_TARGET_MS else "misses", display=False)
bert_ratio = tilde_timings.latency_of(latencies, "BERT-cat (chapter 2)", top) / ql_top
glue("bert_cat_ratio", f"{bert_ratio:,.0f}" if math.isfinite(bert_ratio) else "(not measured)", display=False)
glue("v2_latency_top", f"{tilde_timings.latency_of(latencies, 'TILDEv2', top):.2f}", display=False)
plain(latencies)

# %% [markdown]
# TILDE-QL re-ranks {glue:text}`latency_top` candidates in **{glue:text}`ql_latency_top` ms** per
# query on one core, which {glue:text}`latency_target` the target of 1 ms (the paper: 0.5 ms of
# query processing and 29 ms of re-ranking for 1,000 BM25 candidates on its CPU); TILDEv2 takes
# {glue:text}`v2_latency_top` ms, a lookup per candidate in a small sparse vector. Chapter 2's
# BERT-cat, on MiniLM's six layers and far smaller than the BERT-Base of the paper, takes
# {glue:text}`bert_cat_ratio`× as long as TILDE-QL for the same candidates. Chapter 3 measures the paper-size
# BERT-Base on this machine; the orders of magnitude between the two designs only grow with it.

# %%
try:
    display(plain(tilde_latencies.paper_size_latencies(artifacts.speeds(chapter.profile))))
except FileNotFoundError as missing:
    display(Markdown(f"*{missing}*"))

# %% [markdown]
# ## What float16 storage does
#
# float16 keeps about three significant digits: log-probabilities between −4 and −16 are stored in
# steps of 0.004–0.008. For a model whose likelihoods hardly change from passage to passage, many
# candidates of a query end up with *exactly* the same TILDE-QL score, and re-ranking keeps the
# first stage's order among them (`lib.reranking.scoring.rerank_at_depth`). The effectiveness of such a
# ranking is then partly the first stage's. The paper ranks from float16, and so does this chapter;
# the table checks it against the float32 copy for BM25's candidates: the share of candidates tied
# with another of the same query, and nDCG@10 of TILDE-QL.

# %%
precision = tilde_scorings.storage_precision(
    {s: {dtype: scores[BM25] for dtype, scores in main_scores[s].items()} for s in test_sets},
    {s: years[s][BM25].run for s in test_sets},
    {s: years[s][BM25].qrels for s in test_sets},
)
write_csv(out / "storage_precision.csv", precision)
tied16 = precision[(precision["index"] == "float16")]["tied candidates"].mean()
glue("tied_share_fp16", f"{100 * tied16:.1f}", display=False)
glue("tied_verdict", "under" if tied16 < 0.05 else "above", display=False)
precision.set_index(["test set", "index"])

# %% [markdown]
# With float16, {glue:text}`tied_share_fp16`% of the candidates (mean over the test years) share
# their score with another candidate of the same query, {glue:text}`tied_verdict` the 5% that a
# model whose likelihoods depend on the passage should stay under.
#
# ## Table 3: the ablation of losses, scorings and vocabulary
#
# Every variant scores BM25's candidates with TILDE-QL, TILDE-DL and TILDE-QDL (α = 0.5); the paper's
# "L_QL, L_DL" row mixes QL of the L_QL model with DL of the L_DL model. p-values: paired t-test
# against the paper's model and scoring (L_BiQDL, TILDE-QDL), Bonferroni over the other rows. The
# paper ran this on MS MARCO dev (MRR@10); the book on {glue:text}`ablation_sets`.

# %%
ablation_tables = {}
for test_set in ablation_sets:
    bm25 = years[test_set][BM25]
    models = {name: trained[name].model for name in variants}
    scores = tilde_protocol.ablation_scores(
        models, main_scores[test_set]["float16"][BM25], tokenizer, texts, bm25, out / "index"
    )
    ablation_tables[test_set] = tilde_comparisons.ablation(scores, bm25.run, bm25.qrels, MEASURES)
    write_csv(out / f"table3_{test_set}.csv", ablation_tables[test_set])
    display(Markdown(f"**{test_set.upper()}** (BM25 top-{depth}; † significant against L_BiQDL / TILDE-QDL)"))
    display(plain(tilde_tables.marked_ablation(ablation_tables[test_set], MEASURES)))

# %% [markdown]
# ## Figure 2: the weight α
#
# TILDE-QDL for α from 0 (TILDE-DL alone) to 1 (TILDE-QL alone) in steps of 0.1, nDCG@10 and MAP on
# each test year, for each first stage; dashed: the first stage alone. Every α comes from the same
# scores (eq. 6 is a weighted sum), so the sweep costs no model pass.

# %%
sweeps, references = [], {}
for test_set, year in years.items():
    for stage, judged in year.items():  # the first stages the data folder has runs of
        label = STAGE_LABELS.get(stage, stage)
        sweep = tilde_scorings.alpha_sweep(main_scores[test_set]["float16"][stage], judged.run, judged.qrels, alphas)
        sweeps.append(sweep.assign(set=test_set, first_stage=label))
        own = evaluation.evaluate(judged.run, judged.qrels, MEASURES)
        references.update({(test_set, label, m): own[m] for m in MEASURES})
sweeps = pd.concat(sweeps, ignore_index=True)
write_csv(out / "alpha_sweep.csv", sweeps)
save_figure(tilde_figures.plot_alpha_sweep(sweeps, references, MEASURES), out / "figure2_alpha.png")
plt.show()
tilde_scorings.best_alpha(sweeps)

# %% [markdown]
# ## What the book's TILDE learned
#
# TILDE-QL can only rank if $P(t \mid d)$ depends on the passage. A direct check: the spread of
# $\log P(t \mid d)$ across passages — for each cleaned piece, its standard deviation over BM25's
# candidates, averaged over the pieces. Zero means one and the same distribution for every passage.
# The starting encoder has a new, untrained head.

# %%
dependence_set = (ablation_sets or test_sets)[0]
bm25_candidates = years[dependence_set][BM25].run
sample_pieces = tokenizer.pieces([texts[p] for p in tilde_diagnostics.sample_passages(bm25_candidates)])
dependence_models = {"starting encoder (no fine-tuning)": bert.tilde().use_pooled_cache(pooled)} | {
    tilde_variants.VARIANTS[name].label: result.model.to("cpu") for name, result in trained.items()
}
dependence = tilde_diagnostics.dependence_table(dependence_models, sample_pieces, cleaned)
write_csv(out / "passage_dependence.csv", dependence)
spread_start, spread_main = dependence["spread"].iloc[0], dependence["spread"].iloc[1]
glue("spread_start", f"{spread_start:.3g}", display=False)
glue("spread_main", f"{spread_main:.3g}", display=False)
glue("spread_change", "falls" if spread_main < spread_start else "rises", display=False)
glue("likelihood_factor", f"{math.exp(spread_main):.3f}", display=False)
glue("spread_reading", tilde_reading.spread_reading(spread_start, spread_main), display=False)
spread_ratio = max(spread_start, spread_main) / max(min(spread_start, spread_main), 1e-12)
glue("spread_ratio", f"{spread_ratio:.1f}", display=False)
glue("training_pairs", f"{len(training_data.pairs):,}", display=False)
glue("reconstruction_passages", f"{len(training_data.reconstruction):,}", display=False)
glue("steps", f"{steps:,}", display=False)
dependence.set_index("model")

# %% [markdown]
# The spread {glue:text}`spread_change` from {glue:text}`spread_start` for the starting BERT to
# {glue:text}`spread_main` for the fine-tuned BiQDL model (a factor of {glue:text}`spread_ratio`):
# after fine-tuning, a piece's likelihood differs from passage to passage by a factor of about
# {glue:text}`likelihood_factor`. {glue:text}`spread_reading` The paper's `bert-base-uncased` starts
# with a masked-LM head that already predicts the words of a context, and the paper fine-tunes it on
# 533k pairs for 10 epochs; the book's MiniLM starts with a new head and learns from
# {glue:text}`training_pairs` pairs and {glue:text}`reconstruction_passages` passages' own pieces for
# {glue:text}`steps` steps.
#

# %% [markdown]
# A second check asks what TILDE-QL's ranking follows. For each query, Spearman's ρ between the
# TILDE-QL scores of BM25's candidates and (a) how many of the query's cleaned pieces a candidate
# contains, (b) its length in word pieces; the table gives the mean over the queries. A query
# likelihood model that reads its passages ranks the candidates that contain the query's pieces
# higher: ρ with (a) well above 0. The starting encoder, not fine-tuned, is shown for comparison.

# %%
correlations = tilde_diagnostics.correlation_table(
    {
        "starting encoder (no fine-tuning)": bert.tilde().eval().use_pooled_cache(pooled),
        tilde_variants.VARIANTS[tilde_variants.MAIN_VARIANT].label: main_model,
    },
    bm25_candidates,
    years[dependence_set][BM25].queries,
    texts,
    tokenizer,
    cleaned,
)
write_csv(out / "ql_correlations.csv", correlations)
glue("rho_match_main", f"{correlations['ρ with query pieces contained'].iloc[-1]:.2f}", display=False)
glue("rho_length_main", f"{correlations['ρ with passage length'].iloc[-1]:.2f}", display=False)
correlations.set_index("model")

# %% [markdown]
# For the fine-tuned model, ρ with the query pieces a candidate contains is
# {glue:text}`rho_match_main` and ρ with its length {glue:text}`rho_length_main` (mean over queries).
#
# ## Reading: which of the paper's findings hold at book scale

# %%
display(
    Markdown(
        tilde_reading.reading(table2, test_sets, ablation_tables, top, ql_top, sizes, float(tied16), against_random)
    )
)

# %% [markdown]
# The efficiency half of the paper does not depend on what the model learned, and it is measured
# above: no network at query time for TILDE-QL ({glue:text}`ql_latency_top` ms for
# {glue:text}`latency_top` candidates on one core) and {glue:text}`bytes_per_passage` bytes per
# passage ({glue:text}`v2_bytes_per_passage` for TILDEv2). The effectiveness half depends on the
# model: the paper's TILDE inherits a masked-LM head from `bert-base-uncased` and learns from 533k
# training judgments; the book's starts from an encoder without that head and learns from a few
# thousand pairs on the `book` profile's time budget, and the reading above says how far it gets. A reader with a GPU
# and the MS MARCO training triples can run the `paper` profile, which loads `bert-base-uncased` (pinned
# and hash-checked) and uses the paper's optimiser settings.

# %% tags=["hide-input"]
summary = {
    "profile": chapter.profile.name,
    "device": str(chapter.device),
    "steps": steps,
    "batch_size": batch_size,
    "lr": lr,
    "table2": {
        f"{s} | {k[0]} {k[1]}": float(v) for s, row in table2.iterrows() for k, v in row.items() if "†" not in k[1]
    },
    "ql_latency_ms": {str(c): tilde_timings.latency_of(latencies, "TILDE-QL", c) for c in latency_candidates},
    "qdl_latency_ms": {str(c): tilde_timings.latency_of(latencies, "TILDE-QDL", c) for c in latency_candidates},
    "v2_latency_ms": {str(c): tilde_timings.latency_of(latencies, "TILDEv2", c) for c in latency_candidates},
    "bytes_per_passage": main_summary.bytes_per_passage,
    "v2_bytes_per_passage": v2_index.bytes_per_passage,
    "ms_marco_gb": float(sizes.loc["TILDE", "GB, MS MARCO passage (8.8M)"]),
    "tied_share_float16": float(tied16),
    "start": bert.name,
}
chapter.finish(summary)
