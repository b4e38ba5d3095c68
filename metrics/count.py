"""ACE, NACE and chunk recall as DSPy metrics over an "aggregation" example and a count prediction.

The formulas are ``metrics/aggregation.py``'s (DFA paper §6.1). The example carries ``gold_count`` and
``gold_chunk_ids``; the prediction carries ``count`` and ``retained_chunk_ids`` (the count programs: ``dfa``,
``llm-only-count``, ``naive-rag-count``, ``map-count``). A prediction without ``count`` (a stored answer scored by
``disambig score``) is read from the long answer's leading number ("7: ..."), and without
``retained_chunk_ids`` from its passages' ids.

ACE and NACE are errors (lower is better); the evaluation harness scores a failed question as an empty answer
(a count of 0), so a failure costs the whole gold count rather than looking perfect. ``count-score`` =
1 / (1 + NACE) is the higher-is-better form for optimisers (spec ``dfa.md`` §7).
"""

from __future__ import annotations

import re
from typing import Any

from disambig.metrics.aggregation import ace, chunk_recall, nace


def predicted_count(pred: Any) -> float:
    """The prediction's count: ``count``, else the first number of its long answer, else 0."""
    count = getattr(pred, "count", None)
    if count is not None and not isinstance(count, bool):
        return float(count)
    match = re.match(r"\s*(\d+)", str(getattr(pred, "long_answer", "") or ""))
    return float(match.group(1)) if match else 0.0


def retained_ids(pred: Any) -> list[str]:
    """The chunks the prediction kept: ``retained_chunk_ids``, else its passages' ids."""
    retained = getattr(pred, "retained_chunk_ids", None)
    if retained is not None:
        return [str(i) for i in retained]
    return [str(p.get("id")) for p in getattr(pred, "passages", None) or [] if isinstance(p, dict)]


def ace_metric(example: Any, pred: Any) -> float:
    """|y^ - y| for one question."""
    return ace(predicted_count(pred), example.gold_count)


def nace_metric(example: Any, pred: Any) -> float:
    """|y^ - y| / (y + eps) for one question."""
    return nace(predicted_count(pred), example.gold_count)


def count_score(example: Any, pred: Any) -> float:
    """1 / (1 + NACE): 1 for the exact count, towards 0 as the error grows."""
    return 1.0 / (1.0 + nace_metric(example, pred))


def chunk_recall_metric(example: Any, pred: Any) -> float:
    """|G n R| / |G|; a question without gold chunks scores 1 (nothing could be missed)."""
    gold = list(getattr(example, "gold_chunk_ids", None) or [])
    return chunk_recall(retained_ids(pred), gold) if gold else 1.0


COUNT_METRICS = {"ace": ace_metric, "nace": nace_metric, "chunk-recall": chunk_recall_metric,
                 "count-score": count_score}
