"""DIVA's numeric steps: diversified union of passages, pruning by mean relevance, and the retrieval grade.

Seed: DIVA (002), eq. 4 (union of top-K per pseudo-interpretation), eq. 5 (mean cosine relevance to all
pseudo-interpretations), eq. 7 and section 3.3 (Useful / PartialUseful / Useless, here from thresholds on each
pseudo-interpretation's probability of Yes).
"""

from __future__ import annotations

from collections.abc import Sequence
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


def grade(yes_probabilities: Sequence[float], useful: float = 0.5, partial: float = 0.5) -> Grade:
    """Section 3.3's grade from each pseudo-interpretation's P(Yes) (a verdict counts as 1.0 or 0.0).

    Useful when every probability reaches ``useful``; otherwise PartialUseful when some reaches ``partial``;
    otherwise (or with no readings) Useless. At 0.5 / 0.5 on Yes/No verdicts this is the paper's rule: all Yes,
    some Yes, none.
    """
    probabilities = [float(p) for p in yes_probabilities]
    if probabilities and min(probabilities) >= useful:
        return "Useful"
    if probabilities and max(probabilities) >= partial:
        return "PartialUseful"
    return "Useless"
