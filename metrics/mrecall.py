"""MRecall@k (Min et al. 2021, as DIVA uses it) over the passages a program retrieved.

Retrieval succeeds when the top-k passages contain an answer of every gold interpretation, or of at
least k interpretations when there are more than k. An interpretation's answer is contained when any of
its aliases appears, normalised, in a passage's title + text.
"""

from __future__ import annotations

from typing import Any

from disambig.data.text import normalize


def passage_text(passage: Any) -> str:
    if isinstance(passage, str):
        return passage
    if isinstance(passage, dict):
        return f"{passage.get('title', '')} {passage.get('text', '')}"
    return f"{getattr(passage, 'title', '')} {getattr(passage, 'text', '')}"


def mrecall_at_k(interpretations: list[dict], passages: list[Any], k: int = 5) -> float:
    """1.0 when min(k, #interpretations) interpretations have an answer in the top-k passages, else 0.0."""
    if k <= 0:
        raise ValueError(f"k={k} must be positive")
    if not interpretations:
        return 0.0
    haystack = f" {' '.join(normalize(passage_text(p)) for p in passages[:k])} "
    found = sum(
        any(normalize(a) and f" {normalize(a)} " in haystack for a in gold.get("answers", []))
        for gold in interpretations
    )
    return float(found >= min(k, len(interpretations)))
