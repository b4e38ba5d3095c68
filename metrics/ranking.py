"""Ranking metrics (nDCG@k, Recall@k, MRR@k) through ranx, from qrels and run dictionaries."""

from __future__ import annotations


def ranking_scores(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]],
                   metrics: list[str]) -> dict[str, float]:
    """Mean of each ranx metric (e.g. ``ndcg@10``, ``recall@100``, ``mrr@10``) over the queries in ``qrels``.

    Queries with no retrieved passage score 0; documents judged 0 are not relevant.
    """
    from ranx import Qrels, Run, evaluate

    if not qrels:
        raise ValueError("qrels are empty; nothing to evaluate")
    full_run = {q: run.get(q) or {"__none__": 0.0} for q in qrels}
    result = evaluate(Qrels(qrels), Run(full_run), metrics, make_comparable=True)
    return {metrics[0]: float(result)} if len(metrics) == 1 else {k: float(v) for k, v in result.items()}
