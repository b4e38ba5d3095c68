"""Hybrid retrieval: BM25 and dense lists fused with Reciprocal Rank Fusion."""

from __future__ import annotations

from typing import Any

from disambig.retrieval.base import BatchRetriever
from disambig.retrieval.fusion import RRF_K, rrf
from disambig.retrieval.passage import Passage


class HybridRetriever(BatchRetriever):
    """RRF of the top ``depth`` passages of a sparse and a dense retriever over the same corpus.

    Args:
        sparse, dense: retrievers with ``batch_search`` and ``size``.
        rrf_k: the RRF constant (60, as in Cormack et al. 2009).
        depth: passages taken from each list before fusion (at least ``k``).
        weights: ``(sparse, dense)`` weights of the two lists.
    """

    name = "hybrid"

    def __init__(self, sparse: Any, dense: Any, rrf_k: int = RRF_K, depth: int = 100,
                 weights: tuple[float, float] = (1.0, 1.0)) -> None:
        self.sparse, self.dense = sparse, dense
        self.rrf_k, self.depth, self.weights = rrf_k, depth, weights

    @property
    def size(self) -> int:
        return min(self.sparse.size, self.dense.size)

    @property
    def embedder(self) -> Any:
        return self.dense.embedder

    def stored_vectors(self, ids: list[str]) -> Any | None:
        """The dense index's own vectors of the passages ``ids`` (see ``DenseRetriever.stored_vectors``)."""
        return self.dense.stored_vectors(ids)

    def ranked(self, queries: list[str], k: int) -> list[list[Passage]]:
        depth = min(max(self.depth, k), self.size)
        sparse = self.sparse.batch_search(queries, depth)
        dense = self.dense.batch_search(queries, depth)
        return [rrf([s, d], k=self.rrf_k, weights=list(self.weights), top=k)
                for s, d in zip(sparse, dense, strict=True)]
