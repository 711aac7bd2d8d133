"""Query clusters of TK's mean contextualised query vectors (TK paper §5.3, Table 3).

The paper clusters the MS MARCO dev queries with k-means on their mean TK embedding
(:mod:`lib.analyses.query_vectors`), picks k = 30 "with the elbow method" and names each cluster's
information need by hand. This module does the parts that code can do, deterministically:

- :func:`load_cluster_queries` — the queries to cluster: MS MARCO dev-small and the judged TREC DL
  queries (DL19, DL20), with the set each comes from.
- :func:`inertia_curve` and :func:`elbow` — the elbow method. **Elbow rule: maximum distance below
  the chord** (the "knee" of Kneedle, Satopää et al. 2011, without its smoothing): both axes are
  scaled to [0, 1] by their min and max, and the elbow is the k whose point lies furthest below the
  straight line from the first to the last point of the curve (ties: the smallest k).
- :func:`cluster_queries` — seeded k-means (scikit-learn, Lloyd, k-means++ init, ``n_init`` restarts);
  the same vectors and seed give the same clusters. **Cluster ids are canonical**: 0 is the largest
  cluster, then by size descending, ties by the first query (row) of the cluster.
- :func:`characteristic_terms` and :func:`describe_clusters` — what a reader needs to name a cluster:
  its size, its most characteristic terms and the queries nearest its centre. **Characteristic-term
  score: lift** = (share of the cluster's queries that contain the term) / (share of all queries that
  contain the term), over terms contained in at least ``min_count`` of the cluster's queries (ties:
  more containing queries first, then the term); terms are :func:`lib.representations.text.tokenize` tokens.
- :func:`cluster_most` — the cluster whose queries most often pass a test of their words, e.g.
  :func:`is_definition` (a definition word, the paper's "meaning/definition" clusters) or :func:`is_what_is`
  (a "what is / what are" opening): the two clusters the paper's §5.3 singles out, found without naming.
- :func:`pca_map` — 2-D coordinates of the queries (PCA, scikit-learn's full SVD with its
  deterministic sign convention) for the cluster map (:func:`lib.chapters.analysis_plots.plot_query_map`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.cluster import KMeans
from sklearn.decomposition import PCA

from lib.data import load_queries
from lib.representations.text import tokenize

#: The query sets of the chapter: the MS MARCO dev queries of the paper and the judged TREC DL years.
CLUSTER_QUERY_SETS: tuple[str, ...] = ("dev-small", "dl19", "dl20")


def load_cluster_queries(query_sets: Sequence[str] = CLUSTER_QUERY_SETS) -> pd.DataFrame:
    """The queries of ``query_sets`` as one frame with columns ``qid, query_set, text`` (sets in the given order).

    A query id that occurs in two sets is a ``ValueError`` (runs and qrels are keyed by query id).
    """
    if isinstance(query_sets, str) or not query_sets:
        raise ValueError(f"parameter 'query_sets' must be a non-empty list of query set names, got {query_sets!r}")
    rows = [(qid, name, text) for name in query_sets for qid, text in load_queries(name).items()]
    frame = pd.DataFrame(rows, columns=["qid", "query_set", "text"])
    duplicated = frame[frame["qid"].duplicated(keep=False)]
    if not duplicated.empty:
        first = duplicated.iloc[0]["qid"]
        sets = duplicated[duplicated["qid"] == first]["query_set"].tolist()
        raise ValueError(f"query id {first!r} occurs in several query sets {sets}: cluster them separately")
    return frame


def _checked_vectors(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors)
    if vectors.ndim != 2 or len(vectors) == 0:
        raise ValueError(f"parameter 'vectors' must be a non-empty [N, D] matrix, got shape {vectors.shape}")
    if not np.isfinite(vectors).all():
        raise ValueError("parameter 'vectors' contains NaN or infinite values")
    return vectors.astype(np.float64)


def _kmeans(vectors: np.ndarray, k: int, seed: int, n_init: int) -> KMeans:
    if not 1 <= k <= len(vectors):
        raise ValueError(f"parameter 'k' must be between 1 and the number of vectors ({len(vectors)}), got {k}")
    if n_init < 1:
        raise ValueError(f"parameter 'n_init' must be >= 1, got {n_init}")
    return KMeans(n_clusters=k, init="k-means++", n_init=n_init, algorithm="lloyd", random_state=seed).fit(vectors)


def inertia_curve(vectors: np.ndarray, ks: Iterable[int], seed: int = 0, n_init: int = 10) -> pd.Series:
    """The k-means inertia (sum of squared distances to the nearest centre) for every k of ``ks``.

    Returns a Series indexed by k (ascending, named ``k``); each k is fitted as :func:`cluster_queries` does.
    """
    vectors = _checked_vectors(vectors)
    ks = sorted(set(int(k) for k in ks))
    if not ks:
        raise ValueError("parameter 'ks' is empty: no k to fit")
    values = [float(_kmeans(vectors, k, seed, n_init).inertia_) for k in ks]
    return pd.Series(values, index=pd.Index(ks, name="k"), name="inertia")


def elbow(curve: pd.Series) -> int:
    """The elbow of a decreasing inertia curve (index k, values inertia): max distance below the chord.

    With ``x = (k - k_min) / (k_max - k_min)`` and ``y = (I - I_min) / (I_max - I_min)``, the chord
    of a decreasing curve runs from (0, 1) to (1, 0), and a point's distance below it is
    proportional to ``1 - x - y``; the elbow is the k where that is largest (ties, to 12 decimals:
    the smallest k).
    A straight line has no point below its chord and gives its first k. At least 3 points are
    needed; a curve whose values do not change is a ``ValueError``.
    """
    if len(curve) < 3:
        raise ValueError(f"parameter 'curve' needs at least 3 points to have an elbow, got {len(curve)}")
    ks = np.asarray(curve.index, dtype=float)
    values = np.asarray(curve.to_numpy(), dtype=float)
    if not np.isfinite(values).all():
        raise ValueError("parameter 'curve' contains NaN or infinite values")
    if not (np.diff(ks) > 0).all():
        raise ValueError("parameter 'curve' must be indexed by strictly increasing k")
    spread = values.max() - values.min()
    if spread == 0:
        raise ValueError("parameter 'curve' is flat (the same inertia for every k): it has no elbow")
    x = (ks - ks[0]) / (ks[-1] - ks[0])
    y = (values - values.min()) / spread
    distance = np.round(1.0 - x - y, 12)  # rounding: float noise must not break ties between equal distances
    return int(curve.index[int(np.argmax(distance))])


@dataclass(frozen=True)
class QueryClusters:
    """A k-means clustering of ``N`` query vectors into ``k`` clusters with canonical ids (largest first)."""

    #: Cluster id of every query, ``[N]`` int, in the row order of the vectors.
    labels: np.ndarray
    #: Cluster centres, ``[k, D]``, row ``c`` the centre of cluster ``c``.
    centres: np.ndarray
    #: Sum of squared distances of the queries to their centres.
    inertia: float
    seed: int

    @property
    def k(self) -> int:
        return len(self.centres)

    @property
    def sizes(self) -> pd.Series:
        """Number of queries per cluster id, indexed ``0 … k-1``."""
        return pd.Series(np.bincount(self.labels, minlength=self.k), name="queries").rename_axis("cluster")


def cluster_queries(vectors: np.ndarray, k: int, seed: int = 0, n_init: int = 10) -> QueryClusters:
    """Seeded k-means of the query vectors into ``k`` clusters (canonical ids: by size, descending)."""
    vectors = _checked_vectors(vectors)
    fitted = _kmeans(vectors, k, seed, n_init)
    raw = fitted.labels_
    sizes = np.bincount(raw, minlength=k)
    first_row = np.array([np.flatnonzero(raw == c)[0] if sizes[c] else len(raw) for c in range(k)])
    order = sorted(range(k), key=lambda c: (-sizes[c], first_row[c]))
    new_id = np.empty(k, dtype=int)
    new_id[order] = np.arange(k)
    return QueryClusters(
        labels=new_id[raw], centres=fitted.cluster_centers_[order], inertia=float(fitted.inertia_), seed=seed
    )


def _checked_labels(texts: Sequence[str], labels: np.ndarray) -> np.ndarray:
    labels = np.asarray(labels)
    if labels.ndim != 1 or len(labels) != len(texts):
        raise ValueError(f"parameter 'labels' must have one label per text ({len(texts)}), got shape {labels.shape}")
    return labels


def characteristic_terms(
    texts: Sequence[str], labels: np.ndarray, n_terms: int = 8, min_count: int = 5
) -> pd.DataFrame:
    """The ``n_terms`` most over-represented terms of every cluster, by lift (module docstring).

    Returns a long frame with columns ``cluster, term, queries`` (the cluster's queries that contain
    the term), ``cluster_share``, ``overall_share`` and ``lift``, best first within each cluster.
    A cluster where no term reaches ``min_count`` queries has no rows.
    """
    texts = list(texts)
    labels = _checked_labels(texts, labels)
    if n_terms < 1 or min_count < 1:
        raise ValueError(f"parameters 'n_terms' and 'min_count' must be >= 1, got {n_terms} and {min_count}")
    term_sets = [set(tokenize(text)) for text in texts]
    overall = Counter(term for terms in term_sets for term in terms)
    rows = []
    for cluster in np.unique(labels):
        members = np.flatnonzero(labels == cluster)
        inside = Counter(term for row in members for term in term_sets[row])
        scored = []
        for term, count in inside.items():
            if count >= min_count:
                cluster_share, overall_share = count / len(members), overall[term] / len(texts)
                scored.append((cluster_share / overall_share, count, term, cluster_share, overall_share))
        scored.sort(key=lambda item: (-item[0], -item[1], item[2]))
        for lift, count, term, cluster_share, overall_share in scored[:n_terms]:
            rows.append((int(cluster), term, count, cluster_share, overall_share, lift))
    return pd.DataFrame(rows, columns=["cluster", "term", "queries", "cluster_share", "overall_share", "lift"])


def describe_clusters(
    texts: Sequence[str],
    vectors: np.ndarray,
    clusters: QueryClusters,
    n_terms: int = 8,
    n_examples: int = 5,
    min_count: int = 5,
) -> pd.DataFrame:
    """One row per cluster (indexed by cluster id): ``queries`` (size), ``share`` of all queries,
    ``terms`` (the characteristic terms, "term (lift)", best first) and ``examples`` (the
    ``n_examples`` queries nearest the cluster centre, nearest first, ties by row).
    """
    texts = list(texts)
    labels = _checked_labels(texts, clusters.labels)
    vectors = _checked_vectors(vectors)
    if len(vectors) != len(texts):
        raise ValueError(f"parameter 'vectors' has {len(vectors)} rows for {len(texts)} texts")
    if n_examples < 1:
        raise ValueError(f"parameter 'n_examples' must be >= 1, got {n_examples}")
    terms = characteristic_terms(texts, labels, n_terms=n_terms, min_count=min_count)
    rows = []
    for cluster in range(clusters.k):
        members = np.flatnonzero(labels == cluster)
        distances = np.linalg.norm(vectors[members] - clusters.centres[cluster], axis=1)
        nearest = members[np.lexsort((members, distances))[:n_examples]]
        chosen = terms[terms["cluster"] == cluster]
        rows.append(
            {
                "cluster": cluster,
                "queries": len(members),
                "share": len(members) / len(texts),
                "terms": ", ".join(f"{t} ({lift:.1f})" for t, lift in zip(chosen["term"], chosen["lift"], strict=True)),
                "examples": " | ".join(texts[row] for row in nearest),
            }
        )
    return pd.DataFrame(rows).set_index("cluster")


@dataclass(frozen=True)
class QueryMap:
    """2-D PCA coordinates of the query vectors (rows in the vectors' order) and the variance each axis explains."""

    #: ``[N, 2]`` coordinates on the first two principal components.
    points: np.ndarray
    #: Share of the vectors' variance explained by each of the two components, ``[2]``.
    explained_variance_ratio: np.ndarray


def pca_map(vectors: np.ndarray) -> QueryMap:
    """Project the query vectors on their first two principal components (deterministic: full SVD)."""
    vectors = _checked_vectors(vectors)
    if len(vectors) < 2 or vectors.shape[1] < 2:
        raise ValueError(f"parameter 'vectors' needs at least 2 rows and 2 columns for a 2-D map, got {vectors.shape}")
    pca = PCA(n_components=2, svd_solver="full").fit(vectors)
    return QueryMap(points=pca.transform(vectors), explained_variance_ratio=pca.explained_variance_ratio_)


#: The words that make a query definition-like (the paper's "meaning/definition" clusters).
DEFINITION_WORDS = frozenset({"define", "definition", "meaning", "means", "mean", "defined"})


def is_definition(tokens: Sequence[str]) -> bool:
    """Whether a tokenised query holds one of :data:`DEFINITION_WORDS`."""
    return bool(DEFINITION_WORDS & set(tokens))


def is_what_is(tokens: Sequence[str]) -> bool:
    """Whether a tokenised query opens with "what is" or "what are"."""
    return list(tokens[:2]) in (["what", "is"], ["what", "are"])


def cluster_most(queries: pd.DataFrame, clusters: Iterable[int], test: Callable[[Sequence[str]], bool]) -> int:
    """The cluster (of ``clusters``, the first on a tie) whose queries (``queries``: columns "cluster", "text")
    most often pass ``test`` once tokenised."""

    def share(cluster: int) -> float:
        members = queries[queries["cluster"] == cluster]["text"]
        return float(np.mean([test(tokenize(text)) for text in members]))

    return max(clusters, key=share)
