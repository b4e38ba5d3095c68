"""Reciprocal Rank Fusion, keyed on passage id (never title)."""

from __future__ import annotations

from dataclasses import replace

from disambig.retrieval.passage import Passage

RRF_K = 60


def rrf(
    ranked_lists: list[list[Passage]], k: int = RRF_K, weights: list[float] | None = None, top: int | None = None
) -> list[Passage]:
    """Fuse ranked lists: ``score(d) = sum_i w_i / (k + rank_i(d))`` over the lists that contain ``d``.

    Cormack, Clarke and Büttcher (2009), with ``k = 60`` and optional per-list weights ``w_i`` (1 by default).
    Ranks are 1-based positions in each list. Ties keep first-seen order. Returns the passages with the fused
    score and new ranks, at most ``top`` of them.
    """
    if isinstance(k, bool) or not isinstance(k, int | float) or k <= 0:
        raise ValueError(f"RRF k={k!r} must be a positive number")
    weights = [1.0] * len(ranked_lists) if weights is None else list(weights)
    if len(weights) != len(ranked_lists):
        raise ValueError(f"{len(weights)} weights for {len(ranked_lists)} ranked lists; give one weight per list")
    if any(w < 0 for w in weights) or (weights and not any(weights)):
        raise ValueError(f"weights={weights} must be non-negative and not all zero")
    if top is not None and top <= 0:
        raise ValueError(f"top={top} must be positive (or None for every fused passage)")
    scores: dict[str, float] = {}
    first: dict[str, Passage] = {}
    for weight, ranked in zip(weights, ranked_lists, strict=True):
        for position, passage in enumerate(ranked, 1):
            scores[passage.id] = scores.get(passage.id, 0.0) + weight / (k + position)
            first.setdefault(passage.id, passage)
    order = sorted(scores, key=lambda pid: -scores[pid])[:top]
    return [replace(first[pid], score=scores[pid], rank=rank) for rank, pid in enumerate(order, 1)]
