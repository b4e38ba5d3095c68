"""Aggregation ("find-all", count) metrics of the DFA paper (section 6.1, Metrics and Implementation).

    ACE    = |y^ - y|                     absolute count error
    NACE   = |y^ - y| / (y + eps)         normalised; exceeds 1 when the error is larger than the true count
    Recall = |G n R| / |G|                chunk-level evidence recall

y^ is the size of the predicted entity set, y the gold size, G the gold evidence chunks and R the chunks kept
after retrieval and filtering. The paper reports NACE mean and median, ACE mean and mean recall (Table 1).
"""

from __future__ import annotations

import statistics
from collections.abc import Collection, Hashable, Iterable
from dataclasses import dataclass

EPSILON = 1e-9


def _count(value: int | Collection[Hashable], name: str) -> int:
    """A count given as an int, or the number of distinct entities in a collection."""
    count = value if isinstance(value, int) else len(set(value))
    if count < 0:
        raise ValueError(f"{name}={count} is negative; counts are entity set sizes")
    return count


def ace(predicted: int | Collection[Hashable], gold: int | Collection[Hashable]) -> float:
    """ACE = |y^ - y|. Either side may be a count or an entity collection (its distinct members are counted)."""
    return float(abs(_count(predicted, "predicted") - _count(gold, "gold")))


def nace(predicted: int | Collection[Hashable], gold: int | Collection[Hashable], eps: float = EPSILON) -> float:
    """NACE = |y^ - y| / (y + eps); with y = 0 any wrong count is huge, a right one is 0."""
    if eps <= 0:
        raise ValueError(f"eps={eps} must be positive; it keeps NACE finite when the gold count is 0")
    return ace(predicted, gold) / (_count(gold, "gold") + eps)


def chunk_recall(retained: Iterable[Hashable], gold: Iterable[Hashable]) -> float:
    """|G n R| / |G| over chunk ids: the share of gold evidence chunks kept in the filtered candidate set."""
    gold_chunks = set(gold)
    if not gold_chunks:
        raise ValueError("gold evidence is empty; chunk recall is undefined for a query without gold chunks")
    return len(gold_chunks & set(retained)) / len(gold_chunks)


@dataclass(frozen=True)
class AggregationReport:
    """Table 1 columns over a query set."""

    nace_mean: float
    nace_median: float
    ace_mean: float
    recall: float


def aggregation_report(
    predicted: list[int | Collection[Hashable]],
    gold: list[int | Collection[Hashable]],
    retained: list[Iterable[Hashable]],
    gold_chunks: list[Iterable[Hashable]],
) -> AggregationReport:
    """Mean and median NACE, mean ACE and mean chunk recall; the four lists are aligned by query."""
    sizes = {len(predicted), len(gold), len(retained), len(gold_chunks)}
    if len(sizes) != 1 or not predicted:
        raise ValueError(f"need one non-empty entry per query in each list; got lengths "
                         f"{len(predicted)}, {len(gold)}, {len(retained)}, {len(gold_chunks)}")
    naces = [nace(p, g) for p, g in zip(predicted, gold, strict=True)]
    return AggregationReport(
        nace_mean=statistics.fmean(naces),
        nace_median=statistics.median(naces),
        ace_mean=statistics.fmean(ace(p, g) for p, g in zip(predicted, gold, strict=True)),
        recall=statistics.fmean(chunk_recall(r, g) for r, g in zip(retained, gold_chunks, strict=True)),
    )
