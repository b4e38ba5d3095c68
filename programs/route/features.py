"""What the router looks at before it spends an LM call: one look at the first-stage retrieval, as named numbers.

Every feature is a small function of an ``Observation`` (the question, its embedding, the sparse and dense hits and
the dense hits' stored vectors), registered by name in ``FEATURES``; a feature vector is those functions applied in
a fixed order. The ambiguity detector also reads the question embedding itself (``embedding_names``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from disambig.errors import ConfigurationError
from disambig.programs.adf.geometry import coherence
from disambig.retrieval.passage import Passage

DEPTH = 20  # hits taken from each first-stage list
TOP = 10  # hits the list-shape features read


@dataclass(frozen=True)
class Observation:
    """One look at a question's first-stage retrieval (sparse and dense lists, best first)."""

    question: str
    embedding: np.ndarray
    sparse: tuple[Passage, ...]
    dense: tuple[Passage, ...]
    dense_vectors: np.ndarray  # ``(n, d)`` stored vectors of the top dense hits (n may be 0)


def observe(question: str, retriever: Any, depth: int = DEPTH) -> Observation:
    """Search ``question`` once in each list of a hybrid ``retriever`` (one with ``sparse``, ``dense`` and
    ``embedder``) and keep what the features read.

    Raises:
        ConfigurationError: the retriever is not a sparse + dense pair.
    """
    sparse, dense = getattr(retriever, "sparse", None), getattr(retriever, "dense", None)
    if sparse is None or dense is None:
        raise ConfigurationError(f"the router reads both first-stage lists; it needs the hybrid retriever, got "
                                 f"{getattr(retriever, 'name', type(retriever).__name__)!r} (use --retriever hybrid)")
    embedding = np.asarray(dense.embedder.encode([question])[0], dtype=np.float32)
    depth = min(depth, sparse.size, dense.size)
    dense_hits = dense.search_vectors(embedding[None, :], depth)[0]
    top_ids = [p.id for p in dense_hits[:TOP]]
    vectors = dense.stored_vectors(top_ids)
    if vectors is None:
        vectors = dense.embedder.encode([f"{p.title} {p.text}" for p in dense_hits[:TOP]])
    return Observation(question, embedding, tuple(sparse.search(question, depth)), tuple(dense_hits),
                       np.asarray(vectors, dtype=np.float32))


def dense_top1(obs: Observation) -> float:
    """Cosine of the best dense hit."""
    return _score(obs.dense, 0)


def dense_gap(obs: Observation) -> float:
    """How far the best dense hit stands above the fifth (a sharp head suggests one clear reading)."""
    return _score(obs.dense, 0) - _score(obs.dense, 4)


def dense_mean5(obs: Observation) -> float:
    """Mean cosine of the top five dense hits."""
    return float(np.mean([p.score for p in obs.dense[:5]])) if obs.dense else 0.0


def bm25_top1(obs: Observation) -> float:
    """BM25 score of the best sparse hit, per question term (raw scores grow with the question's length)."""
    return _score(obs.sparse, 0) / max(1, question_terms(obs))


def bm25_gap(obs: Observation) -> float:
    """Relative drop from the best sparse hit to the fifth: ``(s1 - s5) / s1``; 0 without hits."""
    top = _score(obs.sparse, 0)
    return (top - _score(obs.sparse, 4)) / top if top > 0 else 0.0


def list_overlap(obs: Observation) -> float:
    """Share of the top-10 dense passages also in the top-10 sparse ones (the two lists agree)."""
    sparse = {p.id for p in obs.sparse[:TOP]}
    dense = [p.id for p in obs.dense[:TOP]]
    return sum(i in sparse for i in dense) / len(dense) if dense else 0.0


def distinct_titles(obs: Observation) -> float:
    """Distinct page titles among the top-10 hits of both lists, as a share of those hits."""
    titles = _titles(obs)
    return len(set(titles)) / len(titles) if titles else 0.0


def title_entropy(obs: Observation) -> float:
    """Entropy (nats) of the page titles of the top-10 hits of both lists: many pages, spread evenly, is high."""
    counts = Counter(_titles(obs)).values()
    total = sum(counts)
    return -sum(c / total * math.log(c / total) for c in counts) if total else 0.0


def passage_variance(obs: Observation) -> float:
    """ADF's eq. 1 on the top dense hits' vectors: mean squared distance to their centroid."""
    return coherence(obs.dense_vectors).variance if len(obs.dense_vectors) else 0.0


def passage_separation(obs: Observation) -> float:
    """ADF's eq. 2 on the top dense hits' vectors: silhouette of a 2-means split (0 when undefined)."""
    return coherence(obs.dense_vectors).separation if len(obs.dense_vectors) else 0.0


def question_terms(obs: Observation) -> int:
    """Words in the question."""
    return len(re.findall(r"\w+", obs.question))


def asks_count(obs: Observation) -> float:
    """1 for a "how many" / "how much" question."""
    return float(bool(re.search(r"\bhow (many|much)\b", obs.question, re.IGNORECASE)))


def asks_time(obs: Observation) -> float:
    """1 for a question about a time ("when", "what year", "what date")."""
    return float(bool(re.search(r"^\s*when\b|\bwhat (year|date|time)\b", obs.question, re.IGNORECASE)))


def asks_person(obs: Observation) -> float:
    """1 for a "who" / "whom" question."""
    return float(bool(re.search(r"\bwho(m|se)?\b", obs.question, re.IGNORECASE)))


def names_year(obs: Observation) -> float:
    """1 when the question names a year (a time frame is already fixed)."""
    return float(bool(re.search(r"\b(1[5-9]|20)\d\d\b", obs.question)))


FEATURES: dict[str, Callable[[Observation], float]] = {
    "dense_top1": dense_top1,
    "dense_gap": dense_gap,
    "dense_mean5": dense_mean5,
    "bm25_top1": bm25_top1,
    "bm25_gap": bm25_gap,
    "list_overlap": list_overlap,
    "distinct_titles": distinct_titles,
    "title_entropy": title_entropy,
    "passage_variance": passage_variance,
    "passage_separation": passage_separation,
    "question_terms": question_terms,
    "asks_count": asks_count,
    "asks_time": asks_time,
    "asks_person": asks_person,
    "names_year": names_year,
}
"""The retrieval and question features, by name, in vector order."""


def embedding_names(dimension: int) -> list[str]:
    """The names of the question embedding's components as features: ``emb_0`` ... ``emb_{d-1}``."""
    return [f"emb_{i}" for i in range(dimension)]


def feature_vector(obs: Observation, names: Sequence[str]) -> np.ndarray:
    """The values of the features ``names`` (registered ones and ``emb_i``) in that order.

    Raises:
        ConfigurationError: a name that is neither registered nor an embedding component of this observation.
    """
    values = []
    for name in names:
        if name in FEATURES:
            values.append(float(FEATURES[name](obs)))
        elif name.startswith("emb_") and name[4:].isdigit() and int(name[4:]) < len(obs.embedding):
            values.append(float(obs.embedding[int(name[4:])]))
        else:
            raise ConfigurationError(f"unknown router feature {name!r}; features: {', '.join(FEATURES)}, "
                                     f"emb_0..emb_{len(obs.embedding) - 1}")
    return np.asarray(values, dtype=np.float64)


def named(obs: Observation) -> dict[str, float]:
    """Every registered feature of ``obs`` by name (what a trace records)."""
    return {name: round(float(fn(obs)), 6) for name, fn in FEATURES.items()}


def _score(hits: Sequence[Passage], i: int) -> float:
    return float(hits[min(i, len(hits) - 1)].score) if hits else 0.0


def _titles(obs: Observation) -> list[str]:
    return [p.title for p in (*obs.sparse[:TOP], *obs.dense[:TOP])]
