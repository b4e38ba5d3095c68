"""Rankings and query embeddings kept on disk, so a repeated run (``--cache``) starts neither Java nor torch.

The LM response cache makes a repeated run's LM calls free; what a cached re-run still paid was retrieval: the
first BM25 search imports pyserini and starts Java (~12 s on 2 loaded cores), and the reranker's first query
embedding imports sentence-transformers and torch (~12 s). ``CachedRetriever`` answers a ``(query, k)`` it has
seen from a SQLite file of JSON rows and asks the retriever it wraps only for the others; ``CachedEmbedder`` does
the same for embeddings, stored as raw float32 bytes. A ranking is keyed by the retriever's identity (its kind,
index folders, which name the corpus content and the encoder, and its numeric parameters), an embedding by the
encoder's name and the text, so a rebuilt index, other BM25 parameters or another encoder never read a stale one.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any

from disambig.retrieval.base import SharedIndex, check_k, check_queries
from disambig.retrieval.passage import Passage

RANKINGS_FILE = "rankings.sqlite"
EMBEDDINGS_FILE = "embeddings.sqlite"
PARAMETERS = ("k1", "b", "rrf_k", "depth", "weights")
BULK = 64
"""Encodes of more texts than this (building an index) pass straight through: only queries are worth keeping."""


class Store:
    """One SQLite table of ``key -> value`` rows, safe to share between evaluation threads."""

    def __init__(self, path: Path, value_type: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._db.execute(f"CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, value {value_type} NOT NULL)")
        self._db.commit()

    def read(self, keys: list[str]) -> dict[str, Any]:
        marks = ",".join("?" * len(keys))
        with self._lock:
            return dict(self._db.execute(f"SELECT key, value FROM entries WHERE key IN ({marks})", keys).fetchall())

    def write(self, rows: dict[str, Any]) -> None:
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO entries VALUES (?, ?)", list(rows.items()))
            self._db.commit()


class CachedRetriever(SharedIndex):
    """``retriever`` with its rankings stored under ``folder``; every other attribute is the wrapped one's.

    Args:
        retriever: a ``bm25``, ``dense`` or ``hybrid`` retriever (``batch_search``, ``size``).
        folder: where ``rankings.sqlite`` lives (``cache_dir/retrieval``).
        embedder: the encoder to expose as ``embedder`` when ``retriever`` has none (BM25), so a reranker over it
            encodes through the embedding cache.
    """

    def __init__(self, retriever: Any, folder: Path, embedder: Any = None) -> None:
        self.retriever = retriever
        if embedder is not None:  # BM25 holds none: the reranker then encodes with this (cached) one
            self.embedder = embedder
        self.identity = identity(retriever)
        self.store = Store(folder / RANKINGS_FILE, "TEXT")
        self.hits = self.misses = 0

    def __getattr__(self, name: str) -> Any:
        if name == "retriever":  # not set yet (copying): no recursion
            raise AttributeError(name)
        return getattr(self.retriever, name)

    @property
    def size(self) -> int:
        return self.retriever.size

    def search(self, query: str, k: int = 10) -> list[Passage]:
        return self.batch_search([query], k)[0]

    def batch_search(self, queries: list[str], k: int = 10) -> list[list[Passage]]:
        queries, k = check_queries(queries), check_k(k, self.size)
        keys = [self.key(q, k) for q in queries]
        found = self._read(keys)
        missing = [i for i, key in enumerate(keys) if key not in found]
        self.hits += len(queries) - len(missing)
        self.misses += len(missing)
        if missing:
            ranked = self.retriever.batch_search([queries[i] for i in missing], k)
            self._write({keys[i]: hits for i, hits in zip(missing, ranked, strict=True)})
            found.update({keys[i]: hits for i, hits in zip(missing, ranked, strict=True)})
        return [found[key] for key in keys]

    def key(self, query: str, k: int) -> str:
        return hashlib.sha256(json.dumps([self.identity, query, k]).encode()).hexdigest()

    def _read(self, keys: list[str]) -> dict[str, list[Passage]]:
        return {key: [Passage(**p) for p in json.loads(text)] for key, text in self.store.read(keys).items()}

    def _write(self, rankings: dict[str, list[Passage]]) -> None:
        self.store.write({key: json.dumps([asdict(p) for p in hits]) for key, hits in rankings.items()})


class CachedEmbedder:
    """``embedder`` whose vectors are kept under ``folder``; ``name`` and every other attribute are the wrapped one's,
    so indexes keyed by the encoder's name are the same with and without the cache.

    Args:
        embedder: an encoder with ``encode(texts) -> (n, d)`` unit vectors and a ``name``.
        folder: where ``embeddings.sqlite`` lives (``cache_dir/retrieval``).
    """

    def __init__(self, embedder: Any, folder: Path) -> None:
        self.embedder = embedder
        self.store = Store(folder / EMBEDDINGS_FILE, "BLOB")
        self.hits = self.misses = 0

    def __getattr__(self, name: str) -> Any:
        if name == "embedder":
            raise AttributeError(name)
        return getattr(self.embedder, name)

    def __deepcopy__(self, memo: dict[int, object]) -> CachedEmbedder:
        return self

    def encode(self, texts: list[str], **kwargs: Any) -> Any:
        import numpy as np

        if isinstance(texts, str):
            raise TypeError("texts must be a list of strings, got str")
        texts = list(texts)
        if not texts or len(texts) > BULK:
            return self.embedder.encode(texts, **kwargs)
        keys = [hashlib.sha256(json.dumps([self.embedder.name, t]).encode()).hexdigest() for t in texts]
        found = {key: np.frombuffer(blob, dtype=np.float32) for key, blob in self.store.read(keys).items()}
        missing = [i for i, key in enumerate(keys) if key not in found]
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        if missing:
            vectors = np.asarray(self.embedder.encode([texts[i] for i in missing], **kwargs), dtype=np.float32)
            fresh = {keys[i]: vector for i, vector in zip(missing, vectors, strict=True)}
            self.store.write({key: vector.tobytes() for key, vector in fresh.items()})
            found.update(fresh)
        return np.vstack([found[key] for key in keys]).astype(np.float32)


def identity(retriever: Any) -> list[Any]:
    """What a ranking depends on: the retriever's kind and, for it and its parts, index folder and parameters."""
    parts = [retriever, *(getattr(retriever, name) for name in ("sparse", "dense") if hasattr(retriever, name))]
    described: list[Any] = [type(retriever).__name__]
    for part in parts:
        folder = getattr(part, "folder", None)
        described.append([getattr(part, "name", type(part).__name__), Path(folder).name if folder else None,
                          {p: list(v) if isinstance(v, tuple) else v for p in PARAMETERS
                           if (v := getattr(part, p, None)) is not None}])
    return described
