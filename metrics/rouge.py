"""ROUGE-L F-measure of a long answer, max over reference long answers (``rouge-score``, Porter-stemmed).

Two variants:

- ``rougeLsum`` (default, ASQA's official ``scoring.py``): prediction and references are lower-cased and split
  into sentences (``sentences.split_sentences``), one per line; the summary-level LCS is taken over the
  sentence union. The official scorer keeps the better of the two references, which is this maximum.
- ``rougeL`` (what the ADF authors' code computes): one LCS over the whole token sequences, no sentence split.

An empty prediction or no references score 0.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Literal

from disambig.metrics.sentences import split_sentences

Variant = Literal["rougeLsum", "rougeL"]


@lru_cache(maxsize=2)
def _scorer(variant: Variant) -> Any:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer([variant], use_stemmer=True)


def prepare_lsum(text: str) -> str:
    """ASQA's preprocessing for ROUGE-Lsum: lower-case, then one sentence per line."""
    return "\n".join(split_sentences(text.lower()))


def rouge_l(prediction: str, references: list[str], variant: Variant = "rougeLsum") -> float:
    """Max ROUGE-L F over references; 0 for an empty prediction or no references."""
    if variant not in ("rougeLsum", "rougeL"):
        raise ValueError(f"variant={variant!r}; choose 'rougeLsum' (ASQA official) or 'rougeL' (ADF code)")
    references = [r for r in references if r and r.strip()]
    if not prediction.strip() or not references:
        return 0.0
    if variant == "rougeLsum":
        prediction, references = prepare_lsum(prediction), [prepare_lsum(r) for r in references]
    return max(_scorer(variant).score(ref, prediction)[variant].fmeasure for ref in references)
