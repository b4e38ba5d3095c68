"""Rankings kept on disk, so a repeated run (``--cache``) neither starts the JVM nor opens FAISS.

The LM response cache makes a repeated run's LM calls free; what a cached re-run still paid was its retrieval:
the first BM25 search imports pyserini and starts Java (~12 s on 2 loaded cores). ``CachedRetriever`` answers a
``(query, k)`` it has seen from a SQLite file of JSON rows and asks the retriever it wraps only for the others.
Each ranking is keyed by the retriever's identity (its kind, index folders, which name the corpus content and the
encoder, and its numeric parameters), so a rebuilt index or other BM25 parameters never read a stale ranking.
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
PARAMETERS = ("k1", "b", "rrf_k", "depth", "weights")


class CachedRetriever(SharedIndex):
    """``retriever`` with its rankings stored under ``folder``; every other attribute is the wrapped one's.

    Args:
        retriever: a ``bm25``, ``dense`` or ``hybrid`` retriever (``batch_search``, ``size``).
        folder: where ``rankings.sqlite`` lives (``cache_dir/retrieval``).
    """

    def __init__(self, retriever: Any, folder: Path) -> None:
        self.retriever = retriever
        self.identity = identity(retriever)
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / RANKINGS_FILE
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS rankings (key TEXT PRIMARY KEY, passages TEXT NOT NULL)")
        self._db.commit()
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
        marks = ",".join("?" * len(keys))
        with self._lock:
            rows = self._db.execute(f"SELECT key, passages FROM rankings WHERE key IN ({marks})", keys).fetchall()
        return {key: [Passage(**p) for p in json.loads(text)] for key, text in rows}

    def _write(self, rankings: dict[str, list[Passage]]) -> None:
        rows = [(key, json.dumps([asdict(p) for p in hits])) for key, hits in rankings.items()]
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO rankings VALUES (?, ?)", rows)
            self._db.commit()


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
