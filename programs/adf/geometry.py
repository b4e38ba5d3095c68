"""ADF's numeric steps: how coherent the first retrieval is, the state it puts the question in, adaptive k,
K-means over the passages, the relevance filter, and the merge of the dual-pathway rankings.

Seed: ADF (000), section 4.2 (eq. 1-3), 4.3 (eq. 4-5) and 4.5 (eq. 6). Where the released code computes
something else (mean distance for eq. 1, strict comparisons, max-score merge instead of RRF) the variant is an
argument, named after what it computes.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Literal

import numpy as np

from disambig.retrieval.fusion import RRF_K, rrf
from disambig.retrieval.passage import Passage

State = Literal["Unambiguous", "Uncertain", "Ambiguous"]
Dispersion = Literal["variance", "mean_distance"]
DISPERSIONS = ("variance", "mean_distance")
SEED = 42
N_INIT = 10


@dataclass(frozen=True)
class Coherence:
    """Statistics of the first retrieval's passage embeddings.

    Attributes:
        variance: eq. 1, the mean squared distance to the centroid (``1 - |mean|^2`` for unit vectors).
        mean_distance: the mean Euclidean distance to the centroid (what the released code calls variance).
        separation: eq. 2, the mean silhouette of a 2-means split; 0 when it cannot be computed (fewer than
            three passages, or one cluster).
        size: passages measured.
    """

    variance: float
    mean_distance: float
    separation: float
    size: int

    def dispersion(self, kind: Dispersion) -> float:
        """The dispersion statistic the state rule reads: ``variance`` (eq. 1) or ``mean_distance``."""
        check_dispersion(kind)
        return self.variance if kind == "variance" else self.mean_distance

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def coherence(vectors: np.ndarray, seed: int = SEED, n_init: int = N_INIT) -> Coherence:
    """Eq. 1-2 on the ``(n, d)`` embeddings of the initially retrieved passages (all zero when ``n < 2``)."""
    points = as_matrix(vectors)
    if len(points) < 2:
        return Coherence(0.0, 0.0, 0.0, len(points))
    distances = np.linalg.norm(points - points.mean(axis=0), axis=1)
    return Coherence(float(np.mean(distances**2)), float(np.mean(distances)),
                     two_means_silhouette(points, seed, n_init), len(points))


def two_means_silhouette(points: np.ndarray, seed: int = SEED, n_init: int = N_INIT) -> float:
    """Eq. 2: ``mean_i (b_i - a_i) / max(a_i, b_i)`` over a 2-means split (Euclidean); 0 if undefined."""
    if len(points) < 3:
        return 0.0
    labels, _ = kmeans(points, 2, seed, n_init)
    if len(set(labels.tolist())) < 2:
        return 0.0
    from sklearn.metrics import silhouette_score

    return float(silhouette_score(points, labels))


def classify(stats: Coherence, tau_var: float, tau_sep: float, dispersion: Dispersion = "variance",
             strict: bool = False) -> State:
    """Eq. 3: Ambiguous if separation >= tau_sep; Uncertain if dispersion >= tau_var (and not separated);
    otherwise Unambiguous. ``strict`` compares with ``>`` as the released code does."""
    above = np.greater if strict else np.greater_equal
    if above(stats.separation, tau_sep):
        return "Ambiguous"
    if above(stats.dispersion(dispersion), tau_var):
        return "Uncertain"
    return "Unambiguous"


def adaptive_k(n: int, k_min: int = 2, k_max: int = 4) -> int:
    """Eq. 4: ``min(max(k_min, floor(n / 2)), k_max)`` clusters for ``n`` passages, never more than ``n``."""
    if not 1 <= k_min <= k_max:
        raise ValueError(f"k_min={k_min}, k_max={k_max}: need 1 <= k_min <= k_max (the paper's 2 and 4)")
    if n < 1:
        raise ValueError(f"n={n}: adaptive k needs at least one passage to cluster")
    return min(max(k_min, n // 2), k_max, n)


def kmeans(vectors: np.ndarray, k: int, seed: int = SEED, n_init: int = N_INIT) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn K-means with a fixed seed; returns (labels ``(n,)``, centroids ``(k, d)``)."""
    points = as_matrix(vectors)
    if not 1 <= k <= len(points):
        raise ValueError(f"k={k} clusters for {len(points)} passages; k must lie between 1 and the passage count")
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():  # identical passages give fewer distinct clusters than k: expected here
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = KMeans(n_clusters=k, random_state=seed, n_init=n_init).fit(points)
    return model.labels_.astype(int), model.cluster_centers_


def cluster_relevance(query: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Eq. 5's score: cosine between the question's embedding and each centroid (0 for a zero vector)."""
    q = np.asarray(query, dtype=float).ravel()
    c = as_matrix(centroids)
    norms = np.linalg.norm(c, axis=1) * np.linalg.norm(q)
    return np.divide(c @ q, norms, out=np.zeros(len(c)), where=norms > 0)


def relevant_clusters(query: np.ndarray, centroids: np.ndarray, tau_rel: float = 0.2) -> list[int]:
    """Eq. 5: the clusters whose centroid has cosine >= ``tau_rel`` with the question."""
    return [j for j, score in enumerate(cluster_relevance(query, centroids)) if score >= tau_rel]


def fuse(ranked_lists: list[list[Passage]], eta: float = RRF_K, top: int | None = None) -> list[Passage]:
    """Eq. 6: reciprocal rank fusion keyed on passage id, ``score(d) = sum_r 1 / (eta + rank_r(d))``."""
    return rrf(ranked_lists, k=eta, top=top)


def max_score_merge(ranked_lists: list[list[Passage]], top: int | None = None) -> list[Passage]:
    """The released code's merge: each passage id once with its highest raw score, sorted by that score."""
    if top is not None and top <= 0:
        raise ValueError(f"top={top} must be positive (or None for every passage)")
    best: dict[str, Passage] = {}
    for ranked in ranked_lists:
        for passage in ranked:
            if passage.id not in best or passage.score > best[passage.id].score:
                best[passage.id] = passage
    order = sorted(best.values(), key=lambda p: -p.score)[:top]
    return [replace(p, rank=rank) for rank, p in enumerate(order, 1)]


def as_matrix(vectors: np.ndarray | Sequence[Sequence[float]]) -> np.ndarray:
    """``vectors`` as a 2-D float array (an empty input gives shape ``(0, 0)``)."""
    points = np.asarray(vectors, dtype=float)
    if points.size == 0:
        return points.reshape(0, 0)
    if points.ndim != 2:
        raise ValueError(f"expected an (n, d) array of embeddings, got shape {points.shape}")
    return points


def check_dispersion(kind: str) -> None:
    if kind not in DISPERSIONS:
        raise ValueError(f"dispersion={kind!r} is not known; choose one of {', '.join(DISPERSIONS)}")
