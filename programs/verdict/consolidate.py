"""VerDICt's consolidation: cluster the readings' embeddings with HDBSCAN and keep each cluster's medoid.

Seed: VerDICt (001), section 4.2 and Algorithm 1 lines 10-14. The paper names HDBSCAN (Campello et al. 2013) but
gives no parameters; the defaults here are those of the authors' release, which runs scikit-learn's ``HDBSCAN``
on precomputed cosine distances with ``min_cluster_size = min_samples = 2`` and everything else at sklearn's
defaults (excess-of-mass selection, no single cluster). scikit-learn is used rather than the separate ``hdbscan``
package for that parity; the two can label borderline points differently.

Released behaviour kept on purpose (the paper does not settle either case):
    * fewer points than ``max(min_cluster_size, min_samples)`` are all kept, unclustered;
    * when every point is noise, every point is kept. One reading stated by many passages forms a single tight
      blob, which HDBSCAN without ``allow_single_cluster`` calls noise, so it comes out as many near-duplicates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

SelectionMethod = Literal["eom", "leaf"]


@dataclass(frozen=True)
class Consolidation:
    """The points kept and what each stands for.

    Attributes:
        medoids: indices of the kept points, ascending (so in the order the points were given).
        members: for each medoid, the indices of its cluster (the medoid alone when it was kept unclustered).
        labels: HDBSCAN's label for every point (-1 = noise); empty when there were too few points to cluster.
    """

    medoids: tuple[int, ...]
    members: tuple[tuple[int, ...], ...]
    labels: tuple[int, ...]


def consolidate(
    vectors: np.ndarray,
    min_cluster_size: int = 2,
    min_samples: int = 2,
    allow_single_cluster: bool = False,
    cluster_selection_method: SelectionMethod = "eom",
    cluster_selection_epsilon: float = 0.0,
) -> Consolidation:
    """Cluster ``vectors`` on cosine distance; drop noise (unless all is noise); keep each cluster's medoid.

    The medoid maximises the summed cosine similarity to its cluster, sum_j x_i . x_j (for unit vectors the same
    point as the one nearest the centroid); a tie goes to the lowest index, i.e. the best-ranked passage.

    Args:
        vectors: ``(n, d)`` embeddings, one row per (interpretation; answer) pair, in retrieval order. Rows are
            scaled to unit length (a zero row stays zero); the input is not modified.
        min_cluster_size: HDBSCAN's smallest cluster (at least 2).
        min_samples: HDBSCAN's neighbourhood size for core distances (at least 1).
        allow_single_cluster: let HDBSCAN return one cluster holding every point.
        cluster_selection_method: ``"eom"`` (excess of mass) or ``"leaf"``.
        cluster_selection_epsilon: merge clusters closer than this cosine distance.

    Returns:
        The ``Consolidation``.
    """
    x = _unit_rows(vectors)
    _check(min_cluster_size, min_samples, cluster_selection_method, cluster_selection_epsilon)
    n = len(x)
    if n < max(min_cluster_size, min_samples):
        return Consolidation(tuple(range(n)), tuple((i,) for i in range(n)), ())
    labels = _hdbscan(x, min_cluster_size, min_samples, allow_single_cluster, cluster_selection_method,
                      cluster_selection_epsilon)
    clusters = sorted(set(labels) - {-1})
    if not clusters:
        return Consolidation(tuple(range(n)), tuple((i,) for i in range(n)), labels)
    groups = [tuple(int(i) for i in np.flatnonzero(np.asarray(labels) == c)) for c in clusters]
    kept = sorted((medoid(x, group), group) for group in groups)
    return Consolidation(tuple(m for m, _ in kept), tuple(g for _, g in kept), labels)


def medoid(vectors: np.ndarray, members: tuple[int, ...]) -> int:
    """The member with the highest summed cosine similarity to all members; ties go to the lowest index."""
    block = vectors[list(members)]
    return members[int(np.argmax((block @ block.T).sum(axis=1)))]


def cosine_distances(vectors: np.ndarray) -> np.ndarray:
    """``1 - X Xᵀ`` for unit rows, clipped at 0 (rounding can make it slightly negative), float64."""
    return np.clip(1.0 - vectors @ vectors.T, 0.0, None)


def _hdbscan(x: np.ndarray, min_cluster_size: int, min_samples: int, allow_single_cluster: bool,
             method: SelectionMethod, epsilon: float) -> tuple[int, ...]:
    from sklearn.cluster import HDBSCAN

    model = HDBSCAN(min_cluster_size=min_cluster_size, min_samples=min_samples, metric="precomputed",
                    allow_single_cluster=allow_single_cluster, cluster_selection_method=method,
                    cluster_selection_epsilon=epsilon, copy=True)
    return tuple(int(label) for label in model.fit_predict(cosine_distances(x)))


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    x = np.asarray(vectors, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"vectors must be a 2-D array (points x dimensions), got shape {x.shape}")
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms == 0, 1.0, norms)


def _check(min_cluster_size: int, min_samples: int, method: str, epsilon: float) -> None:
    if not isinstance(min_cluster_size, int | np.integer) or min_cluster_size < 2:
        raise ValueError(f"min_cluster_size={min_cluster_size!r} must be an integer of at least 2")
    if not isinstance(min_samples, int | np.integer) or min_samples < 1:
        raise ValueError(f"min_samples={min_samples!r} must be an integer of at least 1")
    if method not in ("eom", "leaf"):
        raise ValueError(f"cluster_selection_method={method!r} must be 'eom' or 'leaf'")
    if epsilon < 0:
        raise ValueError(f"cluster_selection_epsilon={epsilon!r} must be at least 0")
