"""Retrieval: embeddings, Lucene BM25, FAISS dense search and rank fusion behind one interface.

Every retriever has ``search(query, k)`` and ``batch_search(queries, k)`` returning ranked ``Passage``s and
``size`` (passages searched). Nothing heavy is imported here: pyserini, FAISS and sentence-transformers load
on first use.
"""

from __future__ import annotations

from typing import Any

from disambig.retrieval.base import Retriever
from disambig.retrieval.fusion import rrf
from disambig.retrieval.passage import Passage

__all__ = ["Passage", "Retriever", "build_retriever", "rrf"]


def build_retriever(kind: str, corpus: str = "wiki-slice", settings: Any = None, **kwargs: Any) -> Any:
    """Open the ``bm25``, ``dense`` or ``hybrid`` retriever of a corpus; see ``disambig.retrieval.factory``."""
    from disambig.retrieval.factory import build_retriever as build

    return build(kind, corpus=corpus, settings=settings, **kwargs)
