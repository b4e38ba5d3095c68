"""ROUGE-L F-measure (``rouge-score``, stemmed) of a long answer, max over reference long answers."""

from __future__ import annotations

from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def _scorer() -> Any:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


def rouge_l(prediction: str, references: list[str]) -> float:
    """Max ROUGE-L F over references; 0 for an empty prediction or no references."""
    if not prediction.strip() or not references:
        return 0.0
    return max(_scorer().score(ref, prediction)["rougeL"].fmeasure for ref in references)
