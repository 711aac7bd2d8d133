"""Query clusters (TK paper §5.3): the elbow rule, seeded k-means, cluster descriptions, the map, end to end."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lib import data
from lib.analyses.first_relevant import ALL, first_relevant_ranks, median_rank_table
from lib.analyses.query_clusters import (
    CLUSTER_QUERY_SETS,
    characteristic_terms,
    cluster_most,
    cluster_queries,
    describe_clusters,
    elbow,
    inertia_curve,
    is_definition,
    is_what_is,
    load_cluster_queries,
    pca_map,
)
from lib.analyses.query_vectors import mean_query_vectors
from tests.analysis_helpers import real_vocabulary, small_tk


def blobs(seed: int = 0) -> np.ndarray:
    """Three well-separated groups of 20, 12 and 8 points in 5-d (the largest first in row order: last)."""
    rng = np.random.default_rng(seed)
    centres = np.array([[10.0, 0, 0, 0, 0], [0, 10.0, 0, 0, 0], [0, 0, 10.0, 0, 0]])
    groups = [centre + rng.normal(scale=0.5, size=(n, 5)) for centre, n in zip(centres, (8, 12, 20), strict=True)]
    return np.concatenate(groups)


# --- the elbow rule ------------------------------------------------------------------------------


def test_the_elbow_of_a_hand_made_curve() -> None:
    # k = 2..7; scaled: x = 0, .2, .4, .6, .8, 1 and y = (I - 15) / 85 = 1, .529, .118, .059, .024, 0;
    # 1 - x - y = 0, .271, .482, .341, .176, 0: the furthest point below the chord is k = 4
    curve = pd.Series([100.0, 60.0, 25.0, 20.0, 17.0, 15.0], index=range(2, 8))
    assert elbow(curve) == 4
    assert elbow(curve * 1000 + 7) == 4  # the rule does not depend on the scale of the inertia
    # k = 1..6: 1 - x - y = 0, .614, .530, .365, .188, 0 → k = 2
    assert elbow(pd.Series([100.0, 30.0, 20.0, 17.0, 15.0, 14.0], index=range(1, 7))) == 2
    # uneven steps of k count by their value: the same inertias at k = 2, 3, 10, 20, 30, 40
    assert elbow(pd.Series([100.0, 60.0, 25.0, 20.0, 17.0, 15.0], index=[2, 3, 10, 20, 30, 40])) == 10


def test_the_elbow_of_degenerate_curves() -> None:
    assert elbow(pd.Series([5.0, 4.0, 3.0, 2.0], index=[1, 2, 3, 4])) == 1  # a straight line: ties → smallest k
    with pytest.raises(ValueError, match="flat"):
        elbow(pd.Series([3.0, 3.0, 3.0], index=[1, 2, 3]))
    with pytest.raises(ValueError, match="at least 3"):
        elbow(pd.Series([3.0, 2.0], index=[1, 2]))
    with pytest.raises(ValueError, match="increasing"):
        elbow(pd.Series([3.0, 2.0, 1.0], index=[3, 2, 1]))
    with pytest.raises(ValueError, match="NaN"):
        elbow(pd.Series([3.0, np.nan, 1.0], index=[1, 2, 3]))


# --- k-means ---------------------------------------------------------------------------------------


def test_clustering_is_deterministic_under_the_seed() -> None:
    rng = np.random.default_rng(1)
    vectors = rng.uniform(size=(200, 2))
    first = cluster_queries(vectors, k=8, seed=0, n_init=1)
    again = cluster_queries(vectors, k=8, seed=0, n_init=1)
    assert np.array_equal(first.labels, again.labels) and np.array_equal(first.centres, again.centres)
    assert first.inertia == again.inertia and first.seed == 0
    others = [cluster_queries(vectors, k=8, seed=seed, n_init=1) for seed in range(1, 6)]
    assert any(not np.array_equal(first.labels, other.labels) for other in others)  # the seed is used


def test_cluster_ids_are_canonical_and_centres_are_means() -> None:
    vectors = blobs()
    clusters = cluster_queries(vectors, k=3, seed=0)
    assert clusters.k == 3 and clusters.sizes.tolist() == [20, 12, 8]  # largest first
    assert (
        (clusters.labels[-20:] == 0).all() and (clusters.labels[8:20] == 1).all() and (clusters.labels[:8] == 2).all()
    )
    for cluster in range(3):
        assert np.allclose(clusters.centres[cluster], vectors[clusters.labels == cluster].mean(axis=0))
    # other seeds find the same partition here, and the canonical ids make the labels identical
    assert all(np.array_equal(cluster_queries(vectors, 3, seed=s).labels, clusters.labels) for s in (1, 2))


def test_inertia_curve() -> None:
    vectors = blobs()
    curve = inertia_curve(vectors, [5, 1, 3, 2, 4], seed=0)
    assert list(curve.index) == [1, 2, 3, 4, 5] and curve.index.name == "k"
    assert (np.diff(curve.to_numpy()) < 0).all()
    assert curve[3] == pytest.approx(cluster_queries(vectors, 3, seed=0).inertia)
    assert elbow(curve) == 3  # three blobs
    with pytest.raises(ValueError, match="'k'"):
        inertia_curve(vectors, [0, 2])
    with pytest.raises(ValueError, match="'ks'"):
        inertia_curve(vectors, [])
    with pytest.raises(ValueError, match="vectors"):
        cluster_queries(np.zeros(5), 2)
    with pytest.raises(ValueError, match="n_init"):
        cluster_queries(vectors, 2, n_init=0)


# --- describing clusters ---------------------------------------------------------------------------

TEXTS = ["what is a cat", "what is a dog", "What is a cow?", "cat food price", "dog food price", "cheap food"]
LABELS = np.array([0, 0, 0, 1, 1, 1])


def test_characteristic_terms_by_lift() -> None:
    terms = characteristic_terms(TEXTS, LABELS, n_terms=5, min_count=2)
    # cluster 0: what / is / a in 3 of 3 queries vs 3 of 6 overall → lift 2, ties by term; cat, dog, cow: 1 query
    # cluster 1: food 3/3 vs 3/6 → 2 (3 queries), price 2/3 vs 2/6 → 2 (2 queries)
    assert terms[["cluster", "term", "queries"]].values.tolist() == [
        [0, "a", 3],
        [0, "is", 3],
        [0, "what", 3],
        [1, "food", 3],
        [1, "price", 2],
    ]
    assert terms["lift"].tolist() == pytest.approx([2.0] * 5)
    assert terms.loc[4, "cluster_share"] == pytest.approx(2 / 3) and terms.loc[4, "overall_share"] == pytest.approx(
        2 / 6
    )
    assert characteristic_terms(TEXTS, LABELS, n_terms=1, min_count=2)["term"].tolist() == ["a", "food"]
    assert characteristic_terms(TEXTS, LABELS, min_count=4).empty
    with pytest.raises(ValueError, match="labels"):
        characteristic_terms(TEXTS, LABELS[:3])


def test_describe_clusters() -> None:
    vectors = np.array([[0.0, 0.0], [2.0, 0.0], [1.0, 0.0], [50.0, 50.0], [50.0, 60.0], [50.0, 40.0]])
    clusters = cluster_queries(vectors, k=2, seed=0)
    table = describe_clusters(TEXTS, vectors, clusters, n_examples=2, min_count=2)
    assert list(table.index) == [0, 1] and table["queries"].tolist() == [3, 3]
    assert table["share"].tolist() == [0.5, 0.5]
    # ties in size: the cluster of the first row is 0; examples nearest the centre first, ties by row
    assert table.loc[0, "terms"] == "a (2.0), is (2.0), what (2.0)"
    assert table.loc[0, "examples"] == "What is a cow? | what is a cat"  # centre (1, 0): row 2, then rows 0 / 1 tie
    assert table.loc[1, "examples"] == "cat food price | dog food price"
    with pytest.raises(ValueError, match="vectors"):
        describe_clusters(TEXTS, vectors[:4], clusters)


def test_pca_map() -> None:
    vectors = blobs()
    first, second = pca_map(vectors), pca_map(vectors)
    assert first.points.shape == (40, 2) and np.array_equal(first.points, second.points)
    assert first.explained_variance_ratio[0] >= first.explained_variance_ratio[1] > 0
    assert np.allclose(first.points.mean(axis=0), 0, atol=1e-9)
    with pytest.raises(ValueError, match="vectors"):
        pca_map(vectors[:1])


# --- the real queries ------------------------------------------------------------------------------


@pytest.mark.usefixtures("converted")
def test_the_chapter_queries() -> None:
    queries = load_cluster_queries()
    sizes = queries["query_set"].value_counts()
    assert list(CLUSTER_QUERY_SETS) == ["dev-small", "dl19", "dl20"]
    assert sizes.to_dict() == {name: len(data.load_queries(name)) for name in CLUSTER_QUERY_SETS}
    assert queries["qid"].is_unique and list(queries.columns) == ["qid", "query_set", "text"]
    with pytest.raises(ValueError, match="several query sets"):
        load_cluster_queries(["dl19", "dl19"])
    with pytest.raises(ValueError, match="query_sets"):
        load_cluster_queries("dl19")


@pytest.mark.usefixtures("converted")
def test_clustering_runs_end_to_end_on_real_queries() -> None:
    """200 dev-small queries and DL19, a small random TK: vectors, elbow, clusters, descriptions, map, Table 3."""
    queries = load_cluster_queries()
    sample = pd.concat(
        [queries[queries["query_set"] == "dev-small"].iloc[:200], queries[queries["query_set"] == "dl19"]]
    )
    vocabulary = real_vocabulary()
    model = small_tk(vocabulary)
    vectors = mean_query_vectors(
        model, vocabulary, dict(zip(sample["qid"], sample["text"], strict=True)), progress=False
    )
    assert vectors.shape == (243, 16) and np.isfinite(vectors).all()

    curve = inertia_curve(vectors, range(2, 9), seed=0, n_init=2)
    k = elbow(curve)
    assert 2 <= k <= 8
    clusters = cluster_queries(vectors, k, seed=0, n_init=2)
    assert np.array_equal(clusters.labels, cluster_queries(vectors, k, seed=0, n_init=2).labels)
    assert clusters.sizes.sum() == 243 and clusters.sizes.is_monotonic_decreasing

    table = describe_clusters(sample["text"].tolist(), vectors, clusters, min_count=3)
    assert len(table) == k and table["queries"].sum() == 243
    assert table["examples"].str.len().gt(0).all()
    assert pca_map(vectors).points.shape == (243, 2)

    runs = {"BM25": data.load_run("dl19", "bm25"), "BM25+RM3": data.load_run("dl19", "bm25-rm3")}
    ranks = first_relevant_ranks(runs, data.load_qrels("dl19"), depth=100)
    medians = median_rank_table(ranks, dict(zip(sample["qid"], clusters.labels, strict=True)))
    assert medians.loc[ALL, "queries"] == 43 == medians["queries"].drop(ALL).sum()
    assert ((medians[["BM25", "BM25+RM3"]] >= 1) & (medians[["BM25", "BM25+RM3"]] <= 101)).all().all()


# --- the clusters the paper singles out, by their words ---------------------------------------------

WORDED_QUERIES = pd.DataFrame(
    {
        "cluster": [0, 0, 1, 1, 2],
        "text": ["what is a cat", "what are dogs", "define cat", "cat meaning", "cost of a flight"],
    }
)


def test_the_named_clusters_are_found_by_their_words() -> None:
    assert cluster_most(WORDED_QUERIES, [0, 1, 2], is_definition) == 1
    assert cluster_most(WORDED_QUERIES, [0, 1, 2], is_what_is) == 0
    assert cluster_most(WORDED_QUERIES, [2, 0], is_definition) == 2  # a tie: the first cluster given
