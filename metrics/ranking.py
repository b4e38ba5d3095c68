"""Ranking metrics (nDCG@k, Recall@k, MRR@k) through ranx, from qrels and run dictionaries."""

from __future__ import annotations

import threading

_RANX = threading.Lock()
"""ranx's numba kernels run on numba's workqueue layer, which aborts the process when two threads enter it at once
(a metric scored in ``dspy.Evaluate``'s threads): calls are serialised."""


def ranking_scores(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]],
                   metrics: list[str]) -> dict[str, float]:
    """Mean of each ranx metric (e.g. ``ndcg@10``, ``recall@100``, ``mrr@10``) over the queries in ``qrels``.

    Queries with no retrieved passage score 0; documents judged 0 are not relevant.
    """
    from ranx import Qrels, Run, evaluate

    if not qrels:
        raise ValueError("qrels are empty; nothing to evaluate")
    full_run = {q: run.get(q) or {"__none__": 0.0} for q in qrels}
    with _RANX:
        result = evaluate(Qrels(qrels), Run(full_run), metrics, make_comparable=True)
    return {metrics[0]: float(result)} if len(metrics) == 1 else {k: float(v) for k, v in result.items()}


def query_score(qrels: dict[str, int], passage_ids: list[str], metric: str) -> float:
    """One query's ranx ``metric`` (``ndcg@10``, ``recall@100``) of passages given in rank order against its
    judgments ``{doc_id: grade}``; a repeated id counts at its first rank, and the order given is kept whatever
    the passages' scores (ties included)."""
    ranked = list(dict.fromkeys(passage_ids))
    run = {pid: float(len(ranked) - rank) for rank, pid in enumerate(ranked)}
    return ranking_scores({"q": dict(qrels)}, {"q": run}, [metric])[metric]
