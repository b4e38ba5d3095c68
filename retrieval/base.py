"""The retriever interface and the argument checks every retriever shares."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Protocol

from disambig.retrieval.passage import Passage

Progress = Callable[[int, int], None]
"""Called as ``progress(done, total)`` while an index is built."""


class Retriever(Protocol):
    """Ranked passages for a query; ``size`` is the number of passages searched.

    ``search`` returns at most ``k`` passages, best first, ranks from 1 (BM25 returns fewer when fewer passages
    share a term with the query; dense always returns ``k``). ``1 <= k <= size``, else ``ValueError``.
    """

    name: str

    @property
    def size(self) -> int: ...

    def search(self, query: str, k: int = 10) -> list[Passage]: ...

    def batch_search(self, queries: list[str], k: int = 10) -> list[list[Passage]]: ...


class SharedIndex:
    """A read-only index that copies of a program share: ``copy.deepcopy`` returns the same retriever.

    DSPy optimizers deep-copy programs for every candidate; copying an open Lucene searcher or a FAISS index
    would fail (or duplicate gigabytes), and nothing in a retriever changes while it answers queries.
    """

    def __deepcopy__(self, memo: dict[int, object]) -> SharedIndex:
        return self


class BatchRetriever(SharedIndex):
    """A shared index whose ``search`` is ``batch_search`` of one query, with the arguments checked once here.

    Subclasses define ``size`` and ``ranked(queries, k)``, which receives a non-empty list of stripped queries and
    ``1 <= k <= size``.
    """

    size: int

    def search(self, query: str, k: int = 10) -> list[Passage]:
        return self.batch_search([check_query(query)], k)[0]

    def batch_search(self, queries: list[str], k: int = 10) -> list[list[Passage]]:
        queries, k = check_queries(queries), check_k(k, self.size)
        return self.ranked(queries, k) if queries else []

    def ranked(self, queries: list[str], k: int) -> list[list[Passage]]:
        """The top ``k`` passages of each query (arguments already checked)."""
        raise NotImplementedError


def check_query(query: str) -> str:
    """The query without surrounding blanks; an empty or non-string query is a ``ValueError``."""
    if not isinstance(query, str) or not query.strip():
        raise ValueError(f"query must be a non-empty string, got {query!r}")
    return query.strip()


def check_queries(queries: list[str]) -> list[str]:
    """Every query checked with ``check_query``; a bare string is refused (it would be split into characters)."""
    if isinstance(queries, str) or not isinstance(queries, list | tuple):
        raise TypeError(f"queries must be a list of strings, got {type(queries).__name__}; use search() for one")
    return [check_query(q) for q in queries]


def check_k(k: int, size: int) -> int:
    """``k`` when ``1 <= k <= size``; otherwise a ``ValueError`` that says which bound was crossed."""
    if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
        raise ValueError(f"k={k!r} must be a positive integer")
    if k > size:
        raise ValueError(f"k={k} exceeds corpus size {size}; lower k or index more passages")
    return k


def passive_openmp() -> None:
    """Let idle OpenMP threads sleep instead of spin (``OMP_WAIT_POLICY=PASSIVE``) unless the user chose.

    torch and FAISS each bring an OpenMP runtime whose workers busy-wait by default; with 2 cores shared
    with anything else, one short query then took ~480 ms to encode instead of ~15-30 ms. The variable is
    read when the runtime loads, so this runs before the first torch, FAISS or pyserini import (pyserini's
    import loads both).
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
