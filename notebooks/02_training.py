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
# # Training TK and its baselines
#
# This chapter builds TK {cite}`hofstaetter2020tk` piece by piece, trains it with one, two and
# three Transformer layers next to the kernel-pooling baselines KNRM {cite}`xiong2017knrm` and
# Conv-KNRM {cite}`dai2018convknrm` and the concatenated BERT re-ranker BERT-cat
# {cite}`nogueira2019passage`, and re-creates the paper's **Table 2** at book scale: effectiveness
# when time does not matter, the re-ranking depth tuned on validation, and how many documents per
# millisecond each model scores on this machine. A pre-trained bi-encoder, used as it is, joins the
# table as a zero-shot reference.
#
# All models start from real pre-trained representations, installed as ordinary Python packages:
# GloVe word vectors for TK and its kernel-pooling baselines (as in the paper, though the smaller
# 50-dimensional GloVe 6B instead of the paper's 300-dimensional GloVe 42B) and the six-layer
# all-MiniLM-L6-v2 for the BERT family (instead of BERT-Base). The training data differ most: the
# book has no MS MARCO training triples, so the models learn from a **teacher** — the pre-trained
# bi-encoder labels thousands of real MS MARCO queries over the book's passages, and every model
# learns the teacher's score margins (Margin-MSE, {cite}`hofstaetter2020crossarch`). The full list
# of deviations is in {doc}`../deviations`.

# %% tags=["parameters"]
profile = "book"  # smoke | book | paper
device = "auto"  # "auto" takes a CUDA GPU when there is one
seed = 42
models = ["bi-encoder", "knrm", "conv-knrm", "tk1", "tk2", "tk3", "bert-cat"]
ladder_models = None  # the ladder's further rungs (None: the profile's `ladder_models`; [] skips the ladder)
compare_embeddings = "word2vec"  # TK-2 also trained on these vectors, for comparison ("" skips it)
compare_queries = True  # TK-2 also trained on each source of training queries alone, for comparison
# None keeps the profile's default (lib.core.profiles.PROFILES, section `training`)
embedding_method = None  # "glove-6b-50d", "word2vec" or "fasttext"
bert_cat_start = None  # "minilm", "small-bert" or "bert-base-uncased"
bert_cat_layers = None  # keep the first N layers of BERT-cat's BERT
max_steps = None  # training steps of the word-embedding models
bert_cat_max_steps = None
bert_steps = None  # masked-LM pre-training steps of the small BERT
batch_size = None
distill_queries = None  # teacher-labelled dev-small queries (None: the profile's; the book's: all)
distill_pseudo_queries = None  # teacher-labelled pseudo-queries cut from book passages
distill_random_negatives = None  # the fraction of triples whose negative is a random book passage
word_learning_rate = None  # one Adam rate for the word models (the profile's; the paper: 1e-4 / 1e-3)

# %% tags=["hide-input"]
import time

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
import torch
import torch.nn.functional as F
from IPython.display import Markdown, display
from myst_nb import glue

from lib.analyses import pair_vectors
from lib.chapters import pretraining_ladder, training_reading
from lib.chapters.prologue import skipped, start_chapter
from lib.chapters.tables import plain
from lib.core.atomic import write_csv
from lib.core.plotting import save_figure
from lib.core.types import ranking_from_run, top_of_run
from lib.data import book_texts, load_queries
from lib.data.splits import TEST_SETS
from lib.evaluation import measures as evaluation
from lib.experiments import (
    artifacts,
    comparison_tables,
    distillation_protocol,
    first_stage_runs,
    model_runs,
    model_setup,
    settings_record,
    tk_choice,
)

# %% tags=["hide-input"]
from lib.experiments.compact_tk import compact_variant
from lib.experiments.pretraining_ladder import ladder_table, rung
from lib.models.kernels import kernel_mus, kernel_sigmas
from lib.models.registry import model_spec
from lib.representations.text import DOC_MAX_LENGTH, QUERY_MAX_LENGTH

CHAPTER = "02_training"
overrides = dict(
    embedding_method=embedding_method,
    bert_cat_start=bert_cat_start,
    bert_cat_layers=bert_cat_layers,
    max_steps=max_steps,
    bert_cat_max_steps=bert_cat_max_steps,
    bert_steps=bert_steps,
    batch_size=batch_size,
    distill_queries=distill_queries,
    distill_pseudo_queries=distill_pseudo_queries,
    distill_random_negatives=distill_random_negatives,
    word_learning_rate=word_learning_rate,
    ladder_models=ladder_models,
)
chapter = start_chapter(CHAPTER, profile, seed, device, section="training", overrides=overrides, precision=4)
out, settings = chapter.out, chapter.settings
all_models = [*models, *(name for name in settings.ladder_models if name not in models)]
test_sets = list(TEST_SETS)
settings_record.write_settings(out / "settings.json", settings, chapter.seed)
settings

# %% [markdown]
# ## Representations: pre-trained, not learned here
#
# TK and the kernel-pooling baselines start from word embeddings: one vector per word of a
# vocabulary that keeps every word seen at least five times in the book corpus (paper §4.3). The
# paper took 300-dimensional GloVe vectors {cite}`pennington2014glove` trained on 42 billion tokens
# of Common Crawl; the book takes GloVe's 50-dimensional vectors trained on 6 billion tokens of
# Wikipedia and Gigaword, the size that installs as a small package. A word GloVe does not know
# gets a random vector of the same spread; every row is then fine-tuned with the model, at
# {glue:text}`embedding_rate`. TK's width follows the vectors: five attention heads of size 10 and a
# feed-forward layer of 100 instead of the paper's 16 × 32 (chapter 3's paper-size models keep the
# paper's width).
#
# BERT-cat starts from all-MiniLM-L6-v2 {cite}`reimers2019sentencebert`, a six-layer BERT
# (hidden size 384) distilled from a larger model {cite}`wang2020minilm` and trained contrastively to map a sentence and
# its paraphrase or answer to nearby vectors, on about a billion sentence pairs. **Among those
# pairs are MS MARCO's training queries with their relevant passages; the TREC DL test queries and
# their judgments are not**: the model has seen the task, not the test. Used as it is — mean of its
# output vectors, cosine between query and passage — it is a *bi-encoder* re-ranker, the table's
# zero-shot reference. As BERT-cat it reads query and passage together and gains a new scoring
# layer, which is learned here.

# %%
start = time.perf_counter()
representations = model_setup.prepare_representations(
    chapter, settings, with_piece_vectors=any(model_spec(name).family == "pieces" for name in all_models)
)
representation_seconds = time.perf_counter() - start
vocabulary = representations.vocabulary
glue("vocabulary_size", f"{len(vocabulary):,}", display=False)
glue("vector_coverage", f"{representations.coverage.fraction:.1%}", display=False)
glue("embedding_rate", training_reading.embedding_rate(settings), display=False)
glue("representation_minutes", f"{representation_seconds / 60:.1f}", display=False)
print(f"vocabulary: {len(vocabulary):,} words; embeddings {tuple(representations.embeddings.shape)}")
print(f"{settings.embedding_method}: {representations.coverage}")
bert_cat_depth = "all" if settings.bert_cat_layers is None else f"the first {settings.bert_cat_layers}"
bert_cat_rate = f"{settings.bert_cat_lr:g}" if settings.bert_cat_lr is not None else "the model's default rate"
print(
    f"BERT-cat starts from {settings.bert_cat_start} ({bert_cat_depth} layers) and fine-tunes at {bert_cat_rate}"
    + (f", warmed up over {settings.bert_cat_warmup} steps and decayed linearly" if settings.bert_cat_warmup else "")
)


# %%
def neighbours(word: str, k: int = 6) -> str:
    """The nearest words of ``word`` by cosine in the embedding matrix the models start from."""
    matrix = F.normalize(representations.embeddings, dim=-1)
    similarities = matrix @ matrix[vocabulary.id_of(word)]
    best = similarities.topk(k + 1).indices.tolist()
    return ", ".join(vocabulary.decode([i for i in best if i != vocabulary.id_of(word)][:k]))


probe_words = [w for w in ("define", "receptor", "flight", "cost", "symptoms", "president") if w in vocabulary]
plain(
    pd.DataFrame({"word": probe_words, f"nearest ({settings.embedding_method})": [neighbours(w) for w in probe_words]})
)

# %% [markdown]
# {glue:text}`vector_coverage` of the {glue:text}`vocabulary_size` words have a vector of their own. Their
# neighbours are what a cosine match matrix sees before any training: a query word meets its
# synonyms and topical relatives at high cosine, which the kernels can count as soft matches. For
# KNRM these vectors are the only representation; TK adds context on top of them.
#
# ## TK, step by step (slides 22–24)
#
# TK contextualises query and passage **separately** with a few light Transformer layers and mixes
# the result with the plain embedding through a learned $\alpha$ (eq. 1):
#
# $$\hat t_i = \alpha\, t_i + (1-\alpha)\, \mathrm{context}(t_{1:n})_i .$$
#
# All interaction happens in one cosine match matrix $M_{ij} = \cos(\hat q_i, \hat d_j)$ (eq. 4).
# Eleven RBF kernels $K^k_{ij} = \exp\!\big(-(M_{ij}-\mu_k)^2 / 2\sigma^2\big)$ with
# $\mu_k \in \{1, 0.9, 0.7, \dots, -0.9\}$ and $\sigma = 0.1$ (eq. 5) soft-count the matches of each
# query term in a similarity range; the counts are summed over the passage (eq. 6), then normalised
# in two ways: a base-2 logarithm per query term (eq. 7) and a division by the passage length
# (eq. 8). Two linear layers weigh the eleven kernels (eq. 9) and a weighted sum gives the score
# (eq. 10): $s = \beta\, s_{\log} + \gamma\, s_{\mathrm{len}}$.
#
# Below we compute these steps by hand for one real DL19 query and its BM25 top passage with a
# freshly initialised TK-2 (fixed seed), and check that they give exactly the library's score.

# %%
dl19_queries = load_queries("dl19")
bm25_dl19 = first_stage_runs.bm25_run(chapter.profile, "dl19")
example_qid = sorted(dl19_queries, key=int)[0]
example_pid = ranking_from_run(bm25_dl19[example_qid])[0]
texts = book_texts()
print(f"query {example_qid}: {dl19_queries[example_qid]!r}")
print(f"passage {example_pid}: {texts[example_pid][:300]}…")

torch.manual_seed(chapter.seed)
tk, _ = model_setup.build_model("tk2", representations, chapter.seed)
tk.eval()
q_ids, q_mask = vocabulary.encode([dl19_queries[example_qid]], QUERY_MAX_LENGTH)
d_ids, d_mask = vocabulary.encode([texts[example_pid]], DOC_MAX_LENGTH)

# %% [markdown]
# Eq. 1–10 by hand on this pair, each step checked against the library's:

# %%
with torch.no_grad():
    # eq. 1-3: contextualise query and passage separately, with shared weights
    q_hat, d_hat = tk.contextualise(q_ids, q_mask)[0], tk.contextualise(d_ids, d_mask)[0]
    # eq. 4: the cosine match matrix
    match = F.normalize(q_hat, dim=-1) @ F.normalize(d_hat, dim=-1).T
    # eq. 5-6: RBF kernels, summed over the passage
    mus, sigmas = torch.tensor(kernel_mus()), torch.tensor(kernel_sigmas())
    kernels = torch.exp(-((match.unsqueeze(-1) - mus) ** 2) / (2 * sigmas**2))
    per_term = kernels.sum(dim=1)  # [query terms, 11]
    # eq. 7-8: log (base 2) and length normalisation, summed over query terms
    s_log_k = torch.log2(per_term.clamp(min=1e-10)).sum(dim=0)
    s_len_k = (per_term / d_mask.sum()).sum(dim=0)
    # eq. 9-10: weigh the kernels and combine
    s = tk.beta * (s_log_k @ tk.w_log.weight[0]) + tk.gamma * (s_len_k @ tk.w_len.weight[0])
    library = tk.explain(q_ids, q_mask, d_ids, d_mask)

assert torch.allclose(match, library.match[0], atol=1e-5)
assert torch.allclose(s, library.s[0], atol=1e-4), (s, library.s)
assert torch.allclose(library.s, tk(q_ids, q_mask, d_ids, d_mask), atol=1e-6)
query_terms = vocabulary.decode(q_ids[0].tolist())
pd.DataFrame(per_term.numpy(), index=query_terms, columns=[f"μ={mu:+.1f}" for mu in kernel_mus()]).style.format(
    "{:.2f}"
).background_gradient(axis=None, cmap="Blues")

# %% [markdown]
# **Exercise** (a student notebook with `make exercises`): write eq. 5–6 for a batch — the eleven
# kernel activations of every entry of a match matrix, summed over the real passage terms — and
# check it against the library (the solution is in the collapsed cell below).

# %% tags=["exercise", "hide-input"]
import torch

from lib.models.kernels import kernel_mus, kernel_sigmas, kernel_sums


def my_kernel_sums(match, query_mask, doc_mask, mus, sigmas):
    """TK eq. 5-6: K_i^k = sum over real passage terms j of exp(-(M_ij - mu_k)^2 / (2 sigma_k^2)); [B, Lq, K]."""
    # BEGIN SOLUTION
    kernels = torch.exp(-((match.unsqueeze(-1) - mus) ** 2) / (2 * sigmas**2))
    real = (query_mask.unsqueeze(-1) & doc_mask.unsqueeze(1)).unsqueeze(-1)
    return (kernels * real).sum(dim=2)
    # END SOLUTION


generator = torch.Generator().manual_seed(0)
match = torch.rand(2, 3, 5, generator=generator) * 2 - 1
query_mask = torch.tensor([[1, 1, 0], [1, 1, 1]]).bool()
doc_mask = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 0, 0, 0]]).bool()
mus, sigmas = torch.tensor(kernel_mus()), torch.tensor(kernel_sigmas())
expected = kernel_sums(match, query_mask, doc_mask, mus, sigmas)
assert torch.allclose(my_kernel_sums(match, query_mask, doc_mask, mus, sigmas), expected, atol=1e-6)
print("my_kernel_sums agrees with lib.models.kernels.kernel_sums")

# %% [markdown]
# The table holds the soft match counts $K^k_i$ of each query term (rows) in each similarity range
# (columns) for an *untrained* model; training moves the weights $W_{\log}$ and $W_{\mathrm{len}}$
# and the representations so that the counts of relevant passages score higher. The hand-computed
# score equals the library's, which is what the rest of the book uses.
#
# ## Learning from a teacher
#
# The paper trains on MS MARCO's 40 million training triples; the book has none, and the judged
# TREC DL queries are either test queries (DL19, DL20) or too few to learn from (DL21's 53). What it
# does have is a model that already ranks well: the MiniLM bi-encoder. So the bi-encoder becomes the
# **teacher**, and the students learn its opinion of book passages for *training queries*. Which
# queries? The obvious ones are the 6,980 real MS MARCO dev-small questions: they are what users
# ask, but their relevant passages are mostly not in the book's corpus, so for most of them every
# candidate is about something else. At test time a re-ranker faces the opposite: a hundred passages
# that all share the query's words, to be told apart. So the book adds **pseudo-queries** cut from
# its own passages: a span of three to eight words inside one sentence, in the spirit of the Inverse
# Cloze Task {cite}`lee2019ict` (a sentence of a passage as a pseudo-question). BM25's candidates
# for such a span are passages that share its words — lists like the test lists — and the teacher
# says which of them fits best. The students learn from both kinds together; a section below trains
# TK-2 on each kind alone, to show what each is worth.
#
# For every training query the teacher scores candidates from the book corpus (BM25's top hits on
# the book index of chapter 1, and its own nearest passages), and a triple $(q, d^+, d^-)$ takes a
# passage from the teacher's top three and one from rank five on. For
# {glue:text}`random_share` of the triples the negative is instead a **random passage** of the book
# corpus, which the teacher scores too: a student that only ever compares BM25's top hits never
# learns that an off-topic passage is worse than all of them, yet re-ranking all 100 candidates asks
# exactly that (MS MARCO's own training triples draw their negatives from BM25's top 1,000). The
# students do not copy the teacher's scores, whose scale (a cosine) means nothing to a
# kernel-pooling model; they learn its **margins** — Margin-MSE
# {cite}`hofstaetter2020crossarch`, the idea the lecture shows on its IDCM slides:
#
# $$\mathcal{L} = \big( [M_s(q,d^+) - M_s(q,d^-)] - [M_t(q,d^+) - M_t(q,d^-)] \big)^2 ,$$
#
# averaged over a batch, with $M_s$ the student and $M_t$ the teacher (its cosine times 10, so that
# margins have the size of a kernel-pooling model's score differences). A margin says *how much*
# better $d^+$ is, not only that it is: a richer signal than a hinge loss on labels.
#
# Validation (early stopping, and the re-ranking depth and interpolation weight of Table 2) uses the
# judgments of a query set that is neither a test year nor a training set (in the `book` profile DL21's
# graded judgments, in `paper` MS MARCO dev-small's) on its BM25 candidates. Its measure, here
# {glue:text}`validation_metric`, follows the judgments: nDCG@10 on DL21's deep, graded ones (the measure
# Table 2 reports), MRR@10 on dev-small's one shallow judgment per query (the TK paper's choice;
# nDCG@10 is a deviation from it, listed on the deviations page). The two test years are never
# touched: **no DL19 or DL20 query and no DL19/DL20 judgment enters training or validation**, which
# the code checks (by id and by text) every time it builds the training set. One thing the test
# years do share with training is the corpus: the book's passages *are* the pools of DL19 and DL20,
# so the teacher's candidates for training queries — and the passages pseudo-queries are cut from —
# include passages that are later re-ranked for test queries, never with a test query, never with a
# label (a pseudo-query whose words happen to be a test query's is dropped). That is a transductive
# use of an unlabelled corpus, and it is stated here so that nobody mistakes it for something else.
# A twentieth of the training queries is held out: their triples are never trained on, and show
# below how well each student learned the teacher.

# %% [markdown]
# **Exercise:** write Margin-MSE for a batch of student scores and teacher margins (the solution is
# in the collapsed cell below).

# %% tags=["exercise", "hide-input"]
import torch

from lib.training.distillation import margin_mse


def my_margin_mse(student_pos, student_neg, teacher_margin):
    """Margin-MSE: the mean over the batch of ((s+ - s-) - teacher margin)^2."""
    # BEGIN SOLUTION
    return ((student_pos - student_neg - teacher_margin) ** 2).mean()
    # END SOLUTION


student_pos, student_neg = torch.tensor([2.0, 0.5, 1.0]), torch.tensor([1.0, 1.5, 1.0])
teacher_margin = torch.tensor([1.0, 2.0, 0.5])
assert torch.isclose(my_margin_mse(student_pos, student_neg, teacher_margin), torch.tensor(9.25 / 3))
assert torch.isclose(
    my_margin_mse(student_pos, student_neg, teacher_margin), margin_mse(student_pos, student_neg, teacher_margin)
)
print("my_margin_mse agrees with lib.training.distillation.margin_mse")

# %%
start = time.perf_counter()
protocol = distillation_protocol.prepare_protocol(
    chapter.profile, settings, chapter.seed, artifacts.book_index(chapter.profile), out / "teacher"
)
protocol_seconds = time.perf_counter() - start
validation_label = distillation_protocol.query_set_label(protocol.validation.name)
validation_metric = settings.validation_metric
glue("validation_set", validation_label, display=False)
glue("validation_metric", validation_metric, display=False)
glue("distill_queries", f"{len(protocol.queries):,}", display=False)
glue("distill_triples", f"{len(protocol.triples):,}", display=False)
glue("random_share", f"{settings.distill_random_negatives:.0%}", display=False)
glue("protocol_minutes", f"{protocol_seconds / 60:.1f}", display=False)
protocol_table = pd.Series(protocol.summary(), name="value", dtype=object).to_frame()
write_csv(out / "protocol.csv", protocol_table.reset_index(names="what"))
protocol_table

# %% [markdown]
# What a pseudo-query looks like, next to the passage it was cut from and the passage the teacher
# ranks first among its candidates:

# %% tags=["hide-input"]
examples = distillation_protocol.pseudo_query_examples(protocol, count=5)
no_examples = skipped("pseudo-query examples", training_reading.query_sources_skipped(settings))
pd.DataFrame(examples).style.hide(axis="index") if examples else no_examples

# %% [markdown]
# {glue:text}`distill_queries` teacher-labelled queries give {glue:text}`distill_triples` training
# triples (building them, the teacher's pass over the corpus included, took
# {glue:text}`protocol_minutes` minutes; the encodings are cached for the next run). Every model,
# KNRM to BERT-cat, learns from these same triples with Adam, and is validated every few steps on
# the judged queries of {glue:text}`validation_set`. The bi-encoder is not trained: it *is* the
# teacher, and only its depth is tuned on validation.
#
# ## Training
#
# One model per architecture, tested on both years. A training run writes a checkpoint at every
# validation and resumes from it when the chapter is re-run, so an interrupted build loses no
# finished model.

# %%
results = {}
timings = []
for name in all_models:
    start = time.perf_counter()
    trained = {model: result.training.model for (_, model), result in results.items() if result.training}
    variant = compact_variant(name, settings.compact_start, trained, protocol, representations.wordpiece,
                              sparse_start=settings.sparse_start)  # fmt: skip
    runs = model_runs.run_model(name, protocol, representations, settings, chapter, variant=variant)
    for query_set, result in runs.items():
        results[(query_set, name)] = result
        print(f"{query_set} {name}: {result.row()}")
    timings.append({"model": name, "seconds": time.perf_counter() - start})
timing_table = pd.DataFrame(timings)
write_csv(out / "timings.csv", timing_table)
timing_table.set_index("model").round(0)

# %% [markdown]
# ## Does pre-training the word vectors matter?
#
# The same TK-2, on the same triples and schedule, once more from 50-dimensional word2vec vectors
# (GloVe's width, so only the vectors differ) trained on the book corpus alone (the book's
# representation before GloVe was installable): what do a few billion tokens of pre-training buy over
# thirty thousand passages?

# %%
embedding_runs = {}
if compare_embeddings and compare_embeddings != settings.embedding_method and "tk2" in models:
    other_settings = settings.replace(embedding_method=compare_embeddings)
    other = model_setup.prepare_representations(chapter, other_settings)
    other_run = model_runs.RunVariant(compare_embeddings)
    embedding_runs = {
        settings.embedding_method: {fold: results[(fold, "tk2")] for fold in test_sets},
        compare_embeddings: model_runs.run_model("tk2", protocol, other, other_settings, chapter, variant=other_run),
    }
embedding_comparison = comparison_tables.variant_comparison("vectors", embedding_runs, validation_metric)
write_csv(out / "embedding_comparison.csv", embedding_comparison)
embedding_comparison.pivot(index="vectors", columns="set") if len(embedding_comparison) else "comparison skipped"

# %% [markdown]
# ## Real questions or on-topic spans?
#
# The same TK-2, same teacher, schedule and vectors, trained twice more: once on the real dev-small
# questions alone (whose candidates are mostly off-topic) and once on the pseudo-queries alone
# (made-up queries whose candidates look like test lists).

# %%
query_runs = {}
sources = distillation_protocol.query_source_settings(settings) if compare_queries and "tk2" in models else {}
if sources:
    query_runs["both"] = {fold: results[(fold, "tk2")] for fold in test_sets}
    for label, source_settings in sources.items():
        source_protocol = distillation_protocol.prepare_protocol(
            chapter.profile, source_settings, chapter.seed, artifacts.book_index(chapter.profile), out / "teacher"
        )
        query_runs[label] = model_runs.run_model(
            "tk2", source_protocol, representations, source_settings, chapter,
            variant=model_runs.RunVariant(label.split()[0]),
        )  # fmt: skip
query_comparison = comparison_tables.variant_comparison("training queries", query_runs, validation_metric)
write_csv(out / "query_comparison.csv", query_comparison)
because = training_reading.query_sources_skipped(settings, compare_queries)
reading = training_reading.query_source_reading(
    query_comparison, list(query_runs), test_sets, validation_label, validation_metric, because
)
display(Markdown(reading))
query_comparison.pivot(index="training queries", columns="set") if len(query_comparison) else None

# %% [markdown]
# ## Table 2 at book scale
#
# The first-stage rows are the scored runs of chapter 1 (the book subset's official ones), evaluated
# on the same test queries. *Depth* is the re-ranking depth tuned on validation
# {glue:text}`validation_metric` (depth 0 means that re-ranking did not help on the validation
# queries at any depth, so the model leaves BM25's order untouched); *nDCG@10 (all)* re-ranks every
# candidate regardless of the tuned depth, the model's own ranking quality; *nDCG@10 (+BM25)* ranks
# all candidates by an interpolation of the model's and BM25's scores, each min-max normalised per
# query, with the weight λ of the model tuned on validation (`lib.evaluation.interpolation`; λ = 0
# is BM25 alone) — a separate, labelled combination, not the model; *docs/ms* is measured here, on
# this machine, scoring real test candidates (tokenisation excluded, median of three repetitions).

# %%
table_rows = []
for fold in test_sets:
    data = protocol.tests[fold]
    for label, run in comparison_tables.first_stage_baselines(chapter.profile, fold).items():
        run = {qid: run[qid] for qid in data.queries if qid in run}
        table_rows.append({"set": fold, "model": label, **evaluation.evaluate(run, data.qrels)})
    for name in all_models:
        table_rows.append(results[(fold, name)].row())
every_model_table = pd.DataFrame(table_rows)
write_csv(out / "table2.csv", every_model_table)  # every model trained here; the chapters after read it
table = every_model_table[~every_model_table["model"].isin(all_models) | every_model_table["model"].isin(models)]
shown = table.pivot(
    index="model",
    columns="set",
    values=["MRR@10", "nDCG@10", "depth", "nDCG@10 (all)", "nDCG@10 (+BM25)", "λ", "docs/ms"],
)
shown = shown.reindex(
    [label for label in (*comparison_tables.FIRST_STAGE_LABELS.values(), *models) if label in shown.index]
)
shown = shown.swaplevel(axis=1).sort_index(axis=1, level=0)
shown

# %% [markdown]
# ## Are the differences more than noise?
#
# With a few dozen test queries per year, differences of a few points are within noise. Paired two-tailed
# t-tests of each model against BM25 on nDCG@10, Bonferroni-corrected for the number of models
# (the TILDE paper's protocol), at the tuned depth, re-ranking all candidates, and interpolated with
# BM25:

# %%
significance = comparison_tables.significance_against_bm25(chapter.profile, protocol, results, models)
write_csv(out / "significance_vs_bm25.csv", significance)
plain(significance[["set", "depth", "system", "mean", "baseline_mean", "delta", "p", "p_bonferroni", "significant"]])

# %% [markdown]
# ## How much pre-training does TK need?
#
# The paper's TK learns its contextualisation from scratch, on top of 300-dimensional GloVe vectors,
# from 40 million training triples. The book has neither, and the table above shows what that costs.
# What the book *can* vary is how much pre-trained knowledge TK starts from, with everything else
# fixed — the same teacher, triples, validation and test queries, kernels and scoring (eq. 4–10):
#
# 1. **word vectors**: GloVe, with TK's own small Transformer layers learned here (the rows above);
# 2. **static pieces**: one fixed vector per word piece, distilled from MiniLM's *outputs* — each
#    piece run through MiniLM alone, its output vectors averaged, the 30,522 vectors reduced by PCA
#    (model2vec's recipe, `lib.representations.piece_vectors`) — under the same small kernel models;
# 3. **BERT's first layers**: TK whose contextualiser *is* MiniLM's embedding layer and its first 1,
#    2, 3 or all 6 layers (eq. 1 mixes MiniLM's input embeddings with their contextualised vectors;
#    `lib.models.tk_bert`), fine-tuned at BERT-cat's rate: TK-BERT-1 to TK-BERT-6 (the BERT is
#    MiniLM in this profile, `bert-base-uncased` in the `paper` profile);
# 4. **all of BERT, fine-tuned**: BERT-cat, and ColBERT (the same separate encoding as TK, scored by
#    MaxSim);
# 5. **the teacher** itself.
#
# Each model is trained once; every model is tested on both years, re-ranking all 100 BM25
# candidates, and timed on the same machine in the same run. The t-tests against BM25 are corrected
# for every model of the ladder. Which models climb it is the profile's `ladder_models` (the `book`
# profile adds KNRM, Conv-KNRM and TK-2 on pieces and TK on MiniLM's first layer to Table 2's, to fit
# the profile's time budget; the full ladder is a parameter away): this build's ladder is {glue:text}`ladder_members`.

# %%
ladder_significance = comparison_tables.significance_against_bm25(chapter.profile, protocol, results, all_models)
validation_best = {
    name: float(results[(test_sets[0], name)].history[validation_metric].max())
    for name in all_models
    if not model_spec(name).zero_shot
}
ladder = ladder_table(every_model_table, ladder_significance, all_models, validation_best)
glue("ladder_members", ", ".join(model_spec(name).label for name in ladder["model"].drop_duplicates()), display=False)
write_csv(out / "pretraining_ladder.csv", ladder)
bm25_by_year = table[table["model"] == "BM25"].set_index("set")["nDCG@10"].to_dict()
figure = pretraining_ladder.ladder_figure(ladder, bm25_by_year)
save_figure(figure, out / "pretraining_ladder.png")
plt.show()
display(Markdown(pretraining_ladder.ladder_reading(ladder)))
ladder.pivot(index=["rung", "label"], columns="set", values=["nDCG@10 (all)", "p (all)", "nDCG@10 (tuned)", "docs/ms"])

# %% [markdown]
# A filled marker is significantly different from BM25 after the correction, a hollow one is not.
# Validation, by rung: the curves of every trained model of the ladder on the judged
# {glue:text}`validation_set` queries (the dashed line is BM25).

# %%
ladder_trained = [name for name in all_models if not model_spec(name).zero_shot]
ladder_curves = pd.concat(
    [
        results[(test_sets[0], name)].history.assign(model=model_spec(name).label, rung=rung(name))
        for name in ladder_trained
    ],
    ignore_index=True,
)
write_csv(out / "pretraining_ladder_curves.csv", ladder_curves)
validation = protocol.validation
validation_top = top_of_run(validation.run, settings.validation_depth)
validation_bm25 = evaluation.evaluate(validation_top, validation.qrels, [validation_metric])[validation_metric]
grid = sns.relplot(
    ladder_curves, x="step", y=validation_metric, hue="model", col="rung", kind="line", marker="o",
    col_wrap=min(2, ladder_curves["rung"].nunique()), height=3.0, aspect=1.4, facet_kws={"sharex": False},
)  # fmt: skip
for axis in grid.axes.flat:
    axis.axhline(validation_bm25, color="black", linestyle="--", linewidth=1)
save_figure(grid.figure, out / "pretraining_ladder_curves.png")
plt.show()

# %% [markdown]
# Which TK do the later chapters study? The one with the best validation {glue:text}`validation_metric`
# among every TK trained here — a choice that never looks at a test year:

# %%
chosen_tk = tk_choice.choose_tk(validation_best)
tk_choice.write_choice(out / artifacts.CHOSEN_TK_FILE, chosen_tk, validation_best, validation_metric)
glue("chosen_tk", model_spec(chosen_tk).label, display=False)
pd.Series(
    {model_spec(name).label: value for name, value in validation_best.items() if tk_choice.is_tk(name)},
    name=f"best validation {validation_metric}",
).sort_values(ascending=False).to_frame()

# %% [markdown]
# The chosen TK is **{glue:text}`chosen_tk`**.
#
# ## Training curves
#
# Validation {glue:text}`validation_metric` over the training steps, one line per model (the marker is the step whose
# weights were kept). Validation re-ranks the BM25 top-{glue:text}`validation_depth` of the judged
# queries of {glue:text}`validation_set` (`validation_depth` of the settings); the dashed line is
# BM25's own {glue:text}`validation_metric` on the same candidates, the bar a re-ranker has to clear.

# %%
trained = [name for name in models if not model_spec(name).zero_shot]
curves = pd.concat([results[(test_sets[0], name)].history.assign(model=name) for name in trained], ignore_index=True)
write_csv(out / "training_curves.csv", curves)
glue("validation_depth", f"{settings.validation_depth}", display=False)
figure, axis = plt.subplots(figsize=(7, 4))
axis.axhline(validation_bm25, color="black", linestyle="--", linewidth=1, label="BM25")
for name, colour in zip(trained, sns.color_palette(n_colors=len(trained)), strict=True):
    history = curves[curves["model"] == name]
    axis.plot(history["step"], history[validation_metric], label=model_spec(name).label, color=colour)
    best = history[history["step"] == results[(test_sets[0], name)].best_step]
    axis.scatter(best["step"], best[validation_metric], color=colour, zorder=3)
axis.set_xlabel("training step")
axis.set_ylabel(f"validation {validation_metric} ({validation_label})")
axis.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
save_figure(figure, out / "training_curves.png")
plt.show()

# %% [markdown]
# ## BERT-cat's `[CLS]` vector, layer by layer
#
# BERT-cat scores a pair by one linear layer on the output vector of `[CLS]`. The paper's BERT had
# learned to summarise a sentence pair in that vector (next-sentence prediction); all-MiniLM-L6-v2
# was trained as a bi-encoder whose output is the *mean* of its vectors, and nothing asked its
# `[CLS]` vector to carry anything. The mean cosine between the vectors of different held-out
# query–passage pairs says how much a vector tells pairs apart (1: every pair gets the same vector,
# and no linear layer on it can rank). The figure reads it after each of MiniLM's layers, before
# any fine-tuning, and for the fine-tuned BERT-cat:

# %%
pair_vector_rows = {}
held_out_pairs = [
    (protocol.queries[qid], protocol.texts[pid])
    for qid, positive, negative in protocol.held_out[:32]
    for pid in (positive, negative)
]
if "bert-cat" in trained and len(held_out_pairs) >= 2:
    by_depth = pair_vectors.similarity_by_depth(representations.bert_path, representations.wordpiece, held_out_pairs)
    fine_tuned = results[(test_sets[0], "bert-cat")].training.model
    used_depth = fine_tuned.bert.config.num_hidden_layers
    pair_vector_rows = {
        f"{used_depth} layers, before fine-tuning": by_depth.loc[used_depth].to_dict(),
        f"{used_depth} layers, fine-tuned": pair_vectors.pair_vector_similarity(
            fine_tuned, representations.wordpiece, held_out_pairs
        ),
    }

# %% tags=["hide-input"]
if pair_vector_rows:
    figure, axis = plt.subplots(figsize=(7, 3.6))
    for index, column in enumerate(by_depth.columns):
        colour = f"C{index}"
        axis.plot(by_depth.index, by_depth[column], marker="o", color=colour, label=f"{column}, before fine-tuning")
        axis.scatter(
            [used_depth],
            [pair_vector_rows[f"{used_depth} layers, fine-tuned"][column]],
            marker="*",
            s=160,
            color=colour,
            zorder=3,
            label=f"{column}, fine-tuned BERT-cat",
        )
    axis.axvline(used_depth, color="grey", linestyle=":", linewidth=1)
    axis.set_xlabel("MiniLM layers kept")
    axis.set_ylabel("mean cosine between pairs")
    axis.set_xticks(by_depth.index)
    axis.set_title("Do a pair's vectors tell it apart from other pairs?")
    axis.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
    save_figure(figure, out / "pair_vectors_by_depth.png")
    plt.show()

# %% tags=["hide-input"]
if pair_vector_rows:
    bert_cat_loss = curves[curves["model"] == "bert-cat"].set_index("step")["train_loss"]
    display(Markdown(training_reading.cls_vector_reading(by_depth, used_depth, bert_cat_loss)))
pd.DataFrame.from_dict(pair_vector_rows, orient="index").round(4) if pair_vector_rows else "BERT-cat not trained"

# %% [markdown]
# This is why the `book` profile fine-tunes all six layers although fewer would train faster
# (`bert_cat_layers`): on the first three, the `[CLS]` vector starts out the same for every pair, and
# in the book's validation runs (`lib.core.profiles`) BERT-cat on three layers stayed far below BERT-cat
# on six after the same 300 steps.

# %% [markdown]
# ## Did the students learn the teacher?
#
# On the held-out queries' triples — never trained on — each student's margin
# $M_s(q,d^+) - M_s(q,d^-)$ against the teacher's. A student that learned the teacher perfectly puts
# every point on the diagonal; *agreement* is the share of triples it orders as the teacher does
# (the teacher nearly always prefers $d^+$), and $r$ the correlation of the two margins. The random
# negatives ({glue:text}`random_share` of the triples) mostly give the larger teacher margins, towards
# the right of each panel.

# %%
margin_frames, agreement_rows = [], []
for name in trained:
    student = results[(test_sets[0], name)].training.model
    tokenizer = model_setup.tokenizer_of(name, representations)
    frame = model_runs.held_out_margins(student, tokenizer, protocol).assign(model=model_spec(name).label)
    margin_frames.append(frame)
    same_order = (frame["student"] > 0) == (frame["teacher"] > 0)
    agreement_rows.append(
        {"model": model_spec(name).label, "agreement": float(same_order.mean()),
         "r": float(frame["student"].corr(frame["teacher"])), "triples": len(frame)}
    )  # fmt: skip
margins = pd.concat(margin_frames, ignore_index=True)
agreement = pd.DataFrame(agreement_rows).set_index("model")
write_csv(out / "held_out_agreement.csv", agreement.reset_index())
grid = sns.FacetGrid(margins, col="model", col_wrap=min(3, len(trained)), height=2.8, sharey=False)
grid.map_dataframe(sns.scatterplot, x="teacher", y="student", s=8, alpha=0.4, linewidth=0)
for axis in grid.axes.flat:
    axis.axhline(0, color="grey", linewidth=0.8)
grid.set_axis_labels("teacher margin", "student margin")
save_figure(grid.figure, out / "held_out_margins.png")
plt.show()
agreement.round(3)

# %% [markdown]
# ## What holds at book scale, and what does not
#
# The paper's Table 2 finds, on MS MARCO with 40 million training triples: every neural model beats
# BM25; TK beats KNRM and Conv-KNRM; more Transformer layers help TK a little; BERT is the most
# effective and by far the slowest. The reading below is generated from this run's numbers.


# %%
display(Markdown(training_reading.table2_reading(table, significance, models, test_sets)))
tk2_dl19 = significance[
    (significance["set"] == "dl19") & (significance["system"] == "tk2") & (significance["depth"] == "all")
]
for key, column, form in (("ndcg", "mean", ".3f"), ("delta", "delta", "+.3f"), ("p", "p_bonferroni", ".3f")):
    value = format(tk2_dl19[column].iloc[0], form) if len(tk2_dl19) else "n/a (TK-2 or DL19 not run)"
    glue(f"tk2_dl19_{key}", value, display=False)

# %% [markdown]
# How much of the teacher did each student keep? The teacher's gain is its nDCG@10 re-ranking all
# candidates minus BM25's; a student's share is its own gain over BM25 divided by the teacher's (1:
# as good as the teacher, 0: no better than BM25, below 0: worse than BM25).

# %%
kept_rows = []
if "bi-encoder" in models:
    for fold in test_sets:
        rows = table[table["set"] == fold].set_index("model")
        bm25, teacher = rows.loc["BM25", "nDCG@10"], rows.loc["bi-encoder", "nDCG@10 (all)"]
        for name in trained:
            kept_rows.append(
                {"set": fold, "model": model_spec(name).label, "nDCG@10 (all)": rows.loc[name, "nDCG@10 (all)"],
                 "share of the teacher's gain": (rows.loc[name, "nDCG@10 (all)"] - bm25) / (teacher - bm25)}
            )  # fmt: skip
teacher_kept = pd.DataFrame(kept_rows, columns=["set", "model", "nDCG@10 (all)", "share of the teacher's gain"])
write_csv(out / "teacher_gain_kept.csv", teacher_kept)
teacher_kept.pivot(index="model", columns="set").round(3) if len(teacher_kept) else "teacher not run"

# %% [markdown]
# How much did the models train? The loss is Margin-MSE on the scaled teacher margins; the fraction
# of an epoch is how much of the training triples the schedule could show the model.

# %%
progress_rows = []
for name in trained:
    result = results[(test_sets[0], name)]
    history = result.history
    batch = settings.bert_cat_batch_size if model_spec(name).family == "wordpiece" else settings.batch_size
    progress_rows.append(
        {
            "model": name,
            "steps": int(history["step"].max()),
            "triples seen": int(history["step"].max()) * batch,
            "fraction of an epoch": float(history["epoch"].max()),
            "first loss": float(history["train_loss"].iloc[0]),
            "last loss": float(history["train_loss"].iloc[-1]),
            "best step": result.best_step,
            f"best validation {validation_metric}": float(history[validation_metric].max()),
            f"BM25 validation {validation_metric}": validation_bm25,
        }
    )
training_progress = pd.DataFrame(progress_rows)
write_csv(out / "training_progress.csv", training_progress)
glue("max_epoch_fraction", f"{training_progress['fraction of an epoch'].max():.2f}", display=False)
plain(training_progress, precision=3)

# %% [markdown]
# How to read this honestly. No model saw more than {glue:text}`max_epoch_fraction` of one pass over
# the training triples. Three things separate the book's setting from the paper's:
#
# - **Training data.** The paper learns from MS MARCO's judged training triples; here every label
#   is the teacher's opinion of book passages for the dev-small questions (which mostly have no
#   relevant passage in the corpus) and a few thousand pseudo-queries (spans of passages, not
#   questions anyone asked). A student can at best learn the teacher, and the teacher has its own errors. The
#   comparison above shows, on validation, what each source gives TK-2 alone; the profile's comment
#   in `lib.core.profiles` records the validation probes that chose both sources together.
# - **Representations.** 50-dimensional GloVe instead of 300-dimensional GloVe 42B, and TK scaled
#   down to that width; MiniLM (6 layers, 384 wide, trained as a bi-encoder) instead of BERT-Base
#   (12 layers, 768 wide, whose `[CLS]` vector was trained to summarise a pair).
# - **Compute.** Within the `book` profile's time budget every model trains for minutes, not hours.
#   The `paper` profile keeps this code but switches to paper-scale schedules and `bert-base-uncased`
#   (`lib.core.profiles.PROFILES["paper"].training`, for a GPU machine with internet); training on the
#   MS MARCO triples themselves is not wired into this chapter yet.
#
# On DL19, TK-2 re-ranking all candidates reaches nDCG@10 {glue:text}`tk2_dl19_ndcg`
# ({glue:text}`tk2_dl19_delta` against BM25, Bonferroni-corrected p = {glue:text}`tk2_dl19_p`).
# Chapter 3 takes the per-depth scores of these models and asks the time-budget question.

# %% tags=["hide-input"]
summary = {
    "profile": chapter.profile.name,
    "device": str(chapter.device),
    "representation_minutes": representation_seconds / 60,
    "protocol": protocol.summary(),
    "held_out_agreement": agreement.reset_index().to_dict(orient="records"),
    "table2": table.to_dict(orient="records"),
    "embedding_comparison": embedding_comparison.to_dict(orient="records"),
}
chapter.finish(summary)
