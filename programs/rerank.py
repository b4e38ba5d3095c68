"""The retrieval VanillaRAG, IterativeRAG and DIVA share: first-stage candidates reranked by embedding cosine.

Seed: DIVA (002), A.3 (6) and A.4.1: every RAG baseline and DIVA take first-stage candidates for the question and
rank them with the same frozen SentenceBERT; DIVA's eq. 4-5 rank the same candidates against its
pseudo-interpretations. One ``Reranker`` serves all of them, so "DIVA vs VanillaRAG" changes only what DIVA adds.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np


class Reranker:
    """Candidates for a query from ``retriever``, scored by cosine with ``embedder`` (unit vectors).

    Args:
        retriever: any retriever with ``search(query, k)`` and ``size``.
        embedder: sentence encoder with ``encode(texts)`` -> unit vectors; by default the retriever's own, else
            all-MiniLM-L6-v2.
        first_stage: candidates fetched per query before reranking; 0 keeps the retriever's own ranking.

    Copies of a program share one reranker (it holds no per-question state), as they share the retriever.
    """

    def __init__(self, retriever: Any, embedder: Any = None, first_stage: int = 50) -> None:
        if first_stage < 0:
            raise ValueError(f"first_stage={first_stage} must be 0 (no reranking) or a number of candidates")
        self.retriever = retriever
        self.embedder = embedder
        self.first_stage = first_stage

    def __deepcopy__(self, memo: dict[int, object]) -> Reranker:
        return self

    def candidates(self, query: str) -> list[Any]:
        """The first stage: the retriever's top ``first_stage`` passages for ``query``."""
        return self.retriever.search(query, min(self.first_stage, self.retriever.size))

    def similarity(self, queries: list[str], passages: list[Any]) -> np.ndarray:
        """``(queries, passages)`` cosine similarities (passages encoded as ``title: text``)."""
        encoder = self.encoder()
        vectors = self.stored_vectors(passages)
        if vectors is None:
            vectors = encoder.encode([f"{p.title}: {p.text}" if p.title else p.text for p in passages])
        return np.atleast_2d(encoder.encode(list(queries))) @ np.atleast_2d(vectors).T

    def stored_vectors(self, passages: list[Any]) -> np.ndarray | None:
        """The passages' vectors as the dense index stored them (the same encoder on the same ``title: text``),
        so candidates are not encoded again on every question; None when the index cannot give them all or
        this reranker encodes with another model."""
        lookup = getattr(self.retriever, "stored_vectors", None)
        if lookup is None or self.encoder() is not getattr(self.retriever, "embedder", None):
            return None
        return lookup([p.id for p in passages])

    def search(self, query: str, k: int) -> list[Any]:
        """The ``k`` first-stage candidates most similar to ``query``, best first, with the cosine as score and
        ranks from 1 (the retriever's own top ``k`` when ``first_stage`` is 0)."""
        if self.first_stage == 0:
            return self.retriever.search(query, k)
        return self.rank(query, self.candidates(query), k)

    def rank(self, query: str, pool: list[Any], k: int) -> list[Any]:
        """The ``k`` passages of ``pool`` (first-stage candidates already fetched) most similar to ``query``, as
        ``search`` returns them."""
        if not pool:
            return []
        scores = self.similarity([query], pool)[0]
        return [replace(pool[i], score=float(scores[i]), rank=rank) for rank, i in enumerate(top_k(scores, k), 1)]

    def encoder(self) -> Any:
        if self.embedder is None:
            self.embedder = embedder_of(self.retriever)
        return self.embedder


def top_k(scores: np.ndarray, k: int) -> list[int]:
    """Indices of the ``k`` highest scores, best first (ties keep the first-stage order)."""
    if k < 1:
        raise ValueError(f"k={k} must be at least 1")
    return [int(i) for i in np.argsort(-np.asarray(scores, dtype=float), kind="stable")[:k]]


def embedder_of(retriever: Any) -> Any:
    """The dense encoder a retriever already holds (dense and hybrid expose ``embedder``) when it encodes passages
    and questions alike, else a new all-MiniLM-L6-v2 (no retriever, BM25, or a question-only encoder such as the
    DPR one of a prebuilt index, whose passage vectors come from another model)."""
    embedder = getattr(retriever, "embedder", None)
    if embedder is not None and getattr(embedder, "encodes_passages", True):
        return embedder
    from disambig.retrieval.embedder import Embedder

    return Embedder()
