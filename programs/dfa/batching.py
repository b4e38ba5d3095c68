"""DFA stage A, the numeric parts: chunk features, clusters and greedy semantic-aware batching (Algorithm 1).

Seed: DFA (004) §5.3 and A.3. Eq. 5 scores putting cluster K into batch B that can still hold it:

    S(K, B) = lam * cos(mu_K, mu(B)) + (1 - lam) * (T(B) + T(K)) / M

and eq. 6 moves the batch centroid to the token-weighted mean after a merge:

    mu(B u K) = T(B) / (T(B) + T(K)) * mu(B) + T(K) / (T(B) + T(K)) * mu_K

The printed Algorithm 1 has indentation and comparison errors (spec ``dfa.md`` §11.4); this is the corrected
reading: clusters largest first; a cluster over the budget M is split into pieces <= M that keep its centroid;
a smaller one joins the best-scoring batch that can hold it, else opens a batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Cluster:
    """Chunks with their token counts and a centroid in feature space."""

    chunk_ids: list[str]
    tokens: list[int]
    centroid: np.ndarray

    @property
    def size(self) -> int:
        return sum(self.tokens)


@dataclass
class Batch:
    """Chunks judged in one LM call; ``centroid`` follows eq. 6, ``tokens`` is T(B)."""

    chunk_ids: list[str] = field(default_factory=list)
    centroid: np.ndarray | None = None
    tokens: int = 0


def estimate_tokens(text: str) -> int:
    """T(c) without a tokenizer: about four characters per token (the usual estimate for API models)."""
    return max(1, (len(text) + 3) // 4)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b) / norm if norm else 0.0


def merge_score(cluster: Cluster, batch: Batch, budget: int, lam: float) -> float:
    """Eq. 5."""
    return lam * cosine(cluster.centroid, batch.centroid) + (1 - lam) * (batch.tokens + cluster.size) / budget


def split_cluster(cluster: Cluster, budget: int, features: dict[str, np.ndarray] | None = None) -> list[Cluster]:
    """Pieces of at most ``budget`` tokens, packed in order of similarity to the centroid; each keeps the parent
    centroid. A single chunk over the budget is a piece of its own (the judge truncates it)."""
    order = list(range(len(cluster.chunk_ids)))
    if features:
        order.sort(key=lambda i: -cosine(features[cluster.chunk_ids[i]], cluster.centroid))
    pieces: list[Cluster] = []
    ids: list[str] = []
    tokens: list[int] = []
    for i in order:
        if ids and sum(tokens) + cluster.tokens[i] > budget:
            pieces.append(Cluster(ids, tokens, cluster.centroid))
            ids, tokens = [], []
        ids.append(cluster.chunk_ids[i])
        tokens.append(cluster.tokens[i])
    if ids:
        pieces.append(Cluster(ids, tokens, cluster.centroid))
    return pieces


def greedy_batches(clusters: Sequence[Cluster], budget: int, lam: float = 0.5, greedy: bool = True,
                   features: dict[str, np.ndarray] | None = None) -> list[Batch]:
    """Algorithm 1: batches of at most ``budget`` tokens (single over-long chunks excepted).

    Args:
        clusters: candidate clusters with token counts and centroids.
        budget: M, the chunk-text tokens one judge call may read.
        lam: lambda of eq. 5 (1: similarity only; 0: filling only).
        greedy: False is the "w/o greedy-batching" ablation: one batch per cluster (splits still applied).
        features: per-chunk features, to order a split cluster's chunks by similarity to its centroid.
    """
    if budget < 1:
        raise ValueError(f"budget={budget} must be a positive number of tokens")
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam={lam} must lie in [0, 1]")
    batches: list[Batch] = []
    for cluster in sorted(clusters, key=lambda k: k.size, reverse=True):
        if cluster.size > budget:
            for piece in split_cluster(cluster, budget, features):
                batches.append(Batch(list(piece.chunk_ids), cluster.centroid.copy(), piece.size))
            continue
        fits = [b for b in batches if b.tokens + cluster.size <= budget] if greedy else []
        if not fits:
            batches.append(Batch(list(cluster.chunk_ids), cluster.centroid.copy(), cluster.size))
            continue
        best = max(fits, key=lambda b: merge_score(cluster, b, budget, lam))  # first of equal scores wins
        total = best.tokens + cluster.size
        best.centroid = (best.tokens * best.centroid + cluster.size * cluster.centroid) / total  # eq. 6
        best.tokens = total
        best.chunk_ids.extend(cluster.chunk_ids)
    return batches


def chunk_features(texts: Sequence[str], embedder: Any = None, features: str = "both", weight: float = 0.5,
                   dims: int = 128) -> np.ndarray:
    """Unit feature vectors: TF-IDF (reduced by SVD to <= ``dims``) and/or sentence embeddings, concatenated with
    weights ``weight`` and ``1 - weight`` (``features`` is ``both``, ``tfidf`` or ``emb``)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    parts = []
    if features in ("both", "tfidf"):
        tfidf = TfidfVectorizer(sublinear_tf=True).fit_transform(texts)
        if min(tfidf.shape) > 2:
            from sklearn.decomposition import TruncatedSVD

            tfidf = TruncatedSVD(min(dims, min(tfidf.shape) - 1), random_state=0).fit_transform(tfidf)
        else:
            tfidf = tfidf.toarray()
        parts.append(_unit(np.asarray(tfidf, dtype=np.float32)) * (weight if features == "both" else 1.0))
    if features in ("both", "emb"):
        if embedder is None:
            raise ValueError(f"features={features!r} needs an embedder; pass one or use features='tfidf'")
        parts.append(_unit(np.asarray(embedder.encode(list(texts)), dtype=np.float32))
                     * (1 - weight if features == "both" else 1.0))
    if not parts:
        raise ValueError(f"features={features!r}; choose both, tfidf or emb")
    return _unit(np.hstack(parts))


def _unit(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms == 0, 1.0, norms)


def cluster_chunks(chunk_ids: Sequence[str], tokens: Sequence[int], vectors: np.ndarray,
                   distance: float = 0.5, method: str = "agglomerative") -> list[Cluster]:
    """Clusters of the candidates (average-link cosine with a distance threshold, or ``none``: one per chunk);
    each centroid is the token-weighted mean of its members' features (consistent with eq. 6)."""
    n = len(chunk_ids)
    if method == "none" or n < 2:
        labels = np.arange(n)
    elif method == "agglomerative":
        from sklearn.cluster import AgglomerativeClustering

        labels = AgglomerativeClustering(n_clusters=None, metric="cosine", linkage="average",
                                         distance_threshold=distance).fit_predict(vectors)
    else:
        raise ValueError(f"cluster method {method!r}; choose agglomerative or none")
    clusters = []
    for label in dict.fromkeys(labels.tolist()):
        members = [i for i in range(n) if labels[i] == label]
        weights = np.array([tokens[i] for i in members], dtype=np.float32)
        centroid = (weights[:, None] * vectors[members]).sum(axis=0) / weights.sum()
        clusters.append(Cluster([chunk_ids[i] for i in members], [int(tokens[i]) for i in members], centroid))
    return clusters
