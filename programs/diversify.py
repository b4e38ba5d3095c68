"""DIVA's numeric steps: diversified union of passages, pruning by mean relevance, and the retrieval grade.

Seed: DIVA (002), eq. 4 (union of top-K per pseudo-interpretation), eq. 5 (mean cosine relevance to all
pseudo-interpretations), eq. 7 and section 3.3 (Useful / PartialUseful / Useless).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

Grade = Literal["Useful", "PartialUseful", "Useless"]


def union_top_k(similarity: np.ndarray, k: int) -> list[int]:
    """Eq. 4: the union over rows (pseudo-interpretations) of each row's top-``k`` columns (candidates).

    Args:
        similarity: ``(interpretations, candidates)`` relevance scores.
        k: passages kept per interpretation.

    Returns:
        Candidate indices, best rank first (all rank-1 picks, then rank-2 picks, ...), without repeats.
    """
    if k < 1:
        raise ValueError(f"k={k} must be at least 1")
    sim = np.atleast_2d(np.asarray(similarity, dtype=float))
    if sim.size == 0:
        return []
    order = np.argsort(-sim, axis=1, kind="stable")[:, :k]
    picked: list[int] = []
    for rank in range(order.shape[1]):
        for row in order[:, rank]:
            if int(row) not in picked:
                picked.append(int(row))
    return picked


def mean_relevance(similarity: np.ndarray) -> np.ndarray:
    """Eq. 5: each candidate's cosine relevance averaged over all pseudo-interpretations."""
    return np.atleast_2d(np.asarray(similarity, dtype=float)).mean(axis=0)


def prune(similarity: np.ndarray, pool: list[int], k: int) -> list[int]:
    """Keep the ``k`` candidates of ``pool`` with the highest mean relevance (ties: earlier in ``pool``)."""
    if k < 1:
        raise ValueError(f"k={k} must be at least 1")
    scores = mean_relevance(similarity)
    return sorted(pool, key=lambda i: (-scores[i], pool.index(i)))[:k]


def grade(verdicts: list[bool]) -> Grade:
    """Useful when every pseudo-interpretation is answered by the passages, Useless when none is."""
    if verdicts and all(verdicts):
        return "Useful"
    if any(verdicts):
        return "PartialUseful"
    return "Useless"
