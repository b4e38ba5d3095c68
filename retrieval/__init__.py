"""Retrieval: embeddings, Lucene BM25, FAISS dense search and rank fusion behind one interface.

Every retriever has ``search(query, k)`` and ``batch_search(queries, k)`` returning ranked ``Passage``s and
``size`` (passages searched). Nothing heavy is imported here: pyserini, FAISS and sentence-transformers load
on first use.
"""

from __future__ import annotations

from typing import Any

from disambig.paths import expanded
from disambig.retrieval.base import Retriever
from disambig.retrieval.fusion import rrf
from disambig.retrieval.passage import Passage

__all__ = ["Passage", "Retriever", "build_retriever", "rrf"]


def build_retriever(kind: str, corpus: str = "wiki-slice", settings: Any = None, **kwargs: Any) -> Any:
    """Open the ``bm25``, ``dense`` or ``hybrid`` retriever of a corpus; see ``disambig.retrieval.factory``."""
    from disambig.retrieval.factory import CACHEABLE_KINDS, settings_or_default
    from disambig.retrieval.factory import build_retriever as build

    settings = settings_or_default(settings)
    if not (settings.lm_cache and kind in CACHEABLE_KINDS):
        return build(kind, corpus=corpus, settings=settings, **kwargs)
    from disambig.retrieval.cache import CachedEmbedder, CachedRetriever
    from disambig.retrieval.embedder import Embedder

    folder = expanded(settings.cache_dir) / "retrieval"
    embedder = CachedEmbedder(kwargs.pop("embedder", None) or Embedder(), folder)
    if kind == "bm25":
        return CachedRetriever(build(kind, corpus=corpus, settings=settings, **kwargs), folder, embedder)
    return CachedRetriever(build(kind, corpus=corpus, settings=settings, embedder=embedder, **kwargs), folder)
