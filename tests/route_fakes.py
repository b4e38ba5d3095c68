"""A hybrid retriever of in-memory parts for the router tests: word-overlap sparse list, hashed bag-of-words dense
list with stored vectors (no model, no JVM)."""

from __future__ import annotations

import numpy as np
from program_fakes import CORPUS, FakeEmbedder, FakeRetriever

from disambig.retrieval.passage import Passage


class FakeDense:
    """Cosine ranking of ``CORPUS`` under ``FakeEmbedder``, with the index's own vectors."""

    name = "dense"

    def __init__(self, passages: list[Passage] | None = None) -> None:
        self.passages = list(CORPUS if passages is None else passages)
        self.embedder = FakeEmbedder()
        self._vectors = self.embedder.encode([f"{p.title} {p.text}" for p in self.passages])

    @property
    def size(self) -> int:
        return len(self.passages)

    def search(self, query: str, k: int = 10) -> list[Passage]:
        return self.search_vectors(self.embedder.encode([query]), k)[0]

    def search_vectors(self, vectors: np.ndarray, k: int) -> list[list[Passage]]:
        out = []
        for v in np.atleast_2d(vectors):
            scores = self._vectors @ v
            order = np.argsort(-scores, kind="stable")[:k]
            out.append([Passage(self.passages[j].id, self.passages[j].title, self.passages[j].text,
                                float(scores[j]), r) for r, j in enumerate(order, 1)])
        return out

    def stored_vectors(self, ids: list[str]) -> np.ndarray:
        rows = {p.id: j for j, p in enumerate(self.passages)}
        return self._vectors[[rows[i] for i in ids]]


class FakeHybrid:
    """``sparse`` + ``dense``; ``search`` is the sparse list (what the candidates retrieve with here)."""

    name = "hybrid"

    def __init__(self) -> None:
        self.sparse, self.dense = FakeRetriever(), FakeDense()

    @property
    def size(self) -> int:
        return self.sparse.size

    @property
    def embedder(self) -> FakeEmbedder:
        return self.dense.embedder

    def search(self, query: str, k: int = 10) -> list[Passage]:
        return self.sparse.search(query, k)

    def batch_search(self, queries: list[str], k: int = 10) -> list[list[Passage]]:
        return [self.search(q, k) for q in queries]

    def __deepcopy__(self, memo: dict) -> FakeHybrid:
        return self
