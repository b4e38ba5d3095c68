"""Ranking metrics (nDCG@k, Recall@k, MRR@k) from qrels and run dictionaries, in plain Python.

The definitions are the usual trec_eval / ranx ones. A document is relevant when judged 1 or more. nDCG takes the
graded judgment as the gain at rank i over log2(i + 1) (Järvelin and Kekäläinen), normalised by the same sum over
the query's k best judgments (0 when it has none). Recall@k is the relevant documents in the top k over all relevant
ones (0 when none); MRR@k is 1 / the rank of the first relevant document in the top k. A query's documents are
ranked by score, highest first; documents with equal scores keep the order the run lists them in (a retriever's own
rank order). The mean is over the queries in ``qrels``, in sorted order; a query the run lacks scores 0.
"""

from __future__ import annotations

import math

import numpy as np

KINDS = ("ndcg", "recall", "mrr")


def parse_metric(metric: str) -> tuple[str, int]:
    """``("ndcg", 10)`` for ``ndcg@10``; a metric without ``@k`` looks at every retrieved document (k = 0)."""
    name, at, k = metric.partition("@")
    if name not in KINDS or (at and not k.isdigit()):
        raise ValueError(f"unknown ranking metric {metric!r}; use one of {', '.join(KINDS)} with an optional @k")
    return name, int(k or 0)


def ranked(scores: dict[str, float]) -> list[str]:
    """Document ids by score, highest first; equal scores in the order given (a stable sort)."""
    return sorted(scores, key=lambda doc: -scores[doc])


def query_metric(judged: dict[str, int], ranking: list[str], metric: str) -> float:
    """One query's ``metric`` of ``ranking`` (ids, best first) against its judgments ``{doc_id: grade}``."""
    kind, k = parse_metric(metric)
    relevant = {doc: grade for doc, grade in judged.items() if grade >= 1}
    top = ranking[:k] if k else ranking
    if not relevant or not top:
        return 0.0
    hits = [relevant.get(doc, 0) for doc in top]
    if kind == "recall":
        return sum(1 for gain in hits if gain) / len(relevant)
    if kind == "mrr":
        return next((1.0 / rank for rank, gain in enumerate(hits, 1) if gain), 0.0)
    ideal = sorted(relevant.values(), reverse=True)[: k or None]
    return dcg(hits) / dcg(ideal)


def dcg(gains: list[int]) -> float:
    """Σ gain_i / log2(i + 1) over ranks i = 1.. (summed in rank order)."""
    total = 0.0
    for rank, gain in enumerate(gains, 1):
        total += gain / math.log2(rank + 1)
    return total


def ranking_scores(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]],
                   metrics: list[str]) -> dict[str, float]:
    """Mean of each metric (e.g. ``ndcg@10``, ``recall@100``, ``mrr@10``) over the queries in ``qrels``.

    Queries with no retrieved passage score 0; documents judged 0 are not relevant.
    """
    return mean_scores(query_scores(qrels, run, metrics), metrics)


def query_scores(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]],
                 metrics: list[str]) -> dict[str, dict[str, float]]:
    """Each judged query's metrics, ``{query_id: {metric: value}}``, what ``ranking_scores`` averages (and what a
    paired comparison of two retrievers resamples)."""
    if not qrels:
        raise ValueError("qrels are empty; nothing to evaluate")
    for metric in metrics:
        parse_metric(metric)
    rankings = {q: ranked(run.get(q) or {}) for q in sorted(qrels)}
    return {q: {metric: query_metric(qrels[q], rankings[q], metric) for metric in metrics} for q in rankings}


def mean_scores(per_query: dict[str, dict[str, float]], metrics: list[str]) -> dict[str, float]:
    """Each metric's mean over the queries of ``query_scores``."""
    return {metric: float(np.mean([scores[metric] for scores in per_query.values()])) for metric in metrics}


def query_score(qrels: dict[str, int], passage_ids: list[str], metric: str) -> float:
    """One query's ``metric`` (``ndcg@10``, ``recall@100``) of passages given in rank order against its
    judgments ``{doc_id: grade}``; a repeated id counts at its first rank."""
    return query_metric(dict(qrels), list(dict.fromkeys(passage_ids)), metric)
