"""Aggregation ("find-all", count) metrics of the DFA paper (section 6.1, Metrics and Implementation).

    ACE    = |y^ - y|                     absolute count error
    NACE   = |y^ - y| / (y + eps)         normalised; exceeds 1 when the error is larger than the true count
    Recall = |G n R| / |G|                chunk-level evidence recall

y^ is the size of the predicted entity set, y the gold size, G the gold evidence chunks and R the chunks kept
after retrieval and filtering. The paper reports NACE mean and median, ACE mean and mean recall (Table 1).

Counts. Either side of ACE/NACE may be a count (an ``int``, a ``float``, a NumPy number, or a numeric string
such as ``"11"`` or ``" 3.0 "``) or a collection of entities (list, tuple, set, frozenset), whose *distinct*
members are counted by exact equality. Anything else (``bool``, ``None``, a non-numeric string, a negative,
NaN or infinite number) is rejected with a ``ValueError``.

Gold count 0 (our convention; the paper leaves it open and its benchmarks have none). The paper's formula
would give y^/eps, about 1e9 per wrong entity, which swamps any mean. For y = 0 we divide by 1 instead:
NACE = y^ (a right answer, y^ = 0, scores 0). Chunk recall is undefined without gold chunks: ``chunk_recall``
raises, and ``aggregation_report`` averages recall over the queries that have gold chunks only. Recall is
macro-averaged over queries; the paper does not say, so this is an assumption.
"""

from __future__ import annotations

import math
import numbers
import statistics
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any

EPSILON = 1e-9
ENTITY_COLLECTIONS = (list, tuple, set, frozenset)


def to_count(value: Any, name: str) -> float:
    """A count from a number, a numeric string or an entity collection (its distinct members)."""
    if isinstance(value, ENTITY_COLLECTIONS):
        return float(len(set(value)))
    if isinstance(value, bool) or value is None:
        raise ValueError(f"{name}={value!r} is not a count; pass a number, a numeric string or a list of entities")
    if isinstance(value, str | bytes):
        value = _parse(value, name)
    elif not isinstance(value, numbers.Real):  # NumPy integers and floats are registered as numbers.Real
        raise ValueError(f"{name}={value!r} ({type(value).__name__}) is not a count; pass a number, a numeric "
                         "string or a list of entities")
    count = float(value)
    if not math.isfinite(count) or count < 0:
        raise ValueError(f"{name}={value!r} is not a count; counts are finite, non-negative entity set sizes")
    return count


def _parse(text: str | bytes, name: str) -> float:
    raw = text.decode() if isinstance(text, bytes) else text
    try:
        return float(raw.strip())
    except ValueError:
        raise ValueError(f"{name}={text!r} is not a numeric string; pass e.g. '11', or a list of entities") from None


def ace(predicted: Any, gold: Any) -> float:
    """ACE = |y^ - y|."""
    return abs(to_count(predicted, "predicted") - to_count(gold, "gold"))


def nace(predicted: Any, gold: Any, eps: float = EPSILON) -> float:
    """NACE = |y^ - y| / (y + eps); for a gold count of 0, |y^ - 0| / 1 (see the module docstring)."""
    if eps <= 0:
        raise ValueError(f"eps={eps} must be positive; it keeps NACE finite for small gold counts")
    y = to_count(gold, "gold")
    return ace(predicted, gold) / (y + eps if y > 0 else 1.0)


def chunk_recall(retained: Iterable[Hashable], gold: Iterable[Hashable]) -> float:
    """|G n R| / |G| over chunk ids: the share of gold evidence chunks kept in the filtered candidate set."""
    gold_chunks = set(gold)
    if not gold_chunks:
        raise ValueError("gold evidence is empty; chunk recall is undefined for a query without gold chunks")
    return len(gold_chunks & set(retained)) / len(gold_chunks)


@dataclass(frozen=True)
class AggregationReport:
    """Table 1 columns over a query set; ``recall`` is over the ``recall_queries`` that have gold chunks."""

    nace_mean: float
    nace_median: float
    ace_mean: float
    recall: float
    recall_queries: int


def aggregation_report(
    predicted: list[Any],
    gold: list[Any],
    retained: list[Iterable[Hashable]],
    gold_chunks: list[Iterable[Hashable]],
) -> AggregationReport:
    """Mean and median NACE, mean ACE and mean chunk recall; the four lists are aligned by query."""
    sizes = {len(predicted), len(gold), len(retained), len(gold_chunks)}
    if len(sizes) != 1 or not predicted:
        raise ValueError(f"need one non-empty entry per query in each list; got lengths "
                         f"{len(predicted)}, {len(gold)}, {len(retained)}, {len(gold_chunks)}")
    naces = [nace(p, g) for p, g in zip(predicted, gold, strict=True)]
    with_gold = [(list(r), set(g)) for r, g in zip(retained, gold_chunks, strict=True)]
    recalls = [chunk_recall(r, g) for r, g in with_gold if g]
    return AggregationReport(
        nace_mean=statistics.fmean(naces),
        nace_median=statistics.median(naces),
        ace_mean=statistics.fmean(ace(p, g) for p, g in zip(predicted, gold, strict=True)),
        recall=statistics.fmean(recalls) if recalls else 0.0,
        recall_queries=len(recalls),
    )
