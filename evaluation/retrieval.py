"""Score a retriever on a BEIR-format test collection (`metrics/ranking.py`: nDCG@10, Recall@100, MRR@10)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

METRICS = ("ndcg@10", "recall@100", "mrr@10")
QUERY_BATCH = 16


@dataclass(frozen=True)
class RetrievalReport:
    """Mean metrics over the judged queries, and what it took to get them."""

    retriever: str
    dataset: str
    queries: int
    metrics: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    per_query: dict[str, dict[str, float]] = field(default_factory=dict)
    """Each judged query's metrics by query id: what a paired comparison of two retrievers resamples."""

    def to_dict(self) -> dict[str, Any]:
        return {"retriever": self.retriever, "dataset": self.dataset, "queries": self.queries,
                "metrics": dict(self.metrics), "seconds": self.seconds,
                "per_query": {q: dict(scores) for q, scores in self.per_query.items()}}


def run_queries(retriever: Any, queries: dict[str, str], k: int,
                on_batch: Callable[[int], None] | None = None) -> dict[str, dict[str, float]]:
    """A run ``{query_id: {passage_id: score}}`` of the top ``k`` passages per query."""
    run: dict[str, dict[str, float]] = {}
    qids = list(queries)
    for start in range(0, len(qids), QUERY_BATCH):
        batch = qids[start : start + QUERY_BATCH]
        for qid, hits in zip(batch, retriever.batch_search([queries[q] for q in batch], k), strict=True):
            run[qid] = {p.id: p.score for p in hits}
        if on_batch:
            on_batch(len(batch))
    return run


def evaluate_retriever(retriever: Any, dataset: str, split: str = "test", metrics: tuple[str, ...] = METRICS,
                       on_batch: Callable[[int], None] | None = None) -> RetrievalReport:
    """Search every judged query of a BEIR folder (``dbpedia-entity-5k`` or a path) and score the run.

    The depth searched is the largest cut-off among ``metrics`` (100 for the defaults). Queries without
    judgments are skipped. ``seconds`` counts the searches only, not opening the index or loading the model.
    """
    from disambig.data.corpus import load_beir_qrels, load_beir_queries
    from disambig.metrics.ranking import mean_scores, query_scores

    qrels = load_beir_qrels(dataset, split)
    queries = {q: text for q, text in load_beir_queries(dataset).items() if q in qrels}
    if not queries:
        raise ValueError(f"no query of {dataset!r} has judgments in qrels/{split}.tsv; nothing to evaluate")
    depth = min(max(cutoff(m) for m in metrics), retriever.size)
    retriever.batch_search([next(iter(queries.values()))], 1)  # open the index (JVM, model) outside the timing
    start = time.perf_counter()
    run = run_queries(retriever, queries, depth, on_batch)
    seconds = time.perf_counter() - start
    per_query = query_scores({q: qrels[q] for q in queries}, run, list(metrics))
    return RetrievalReport(retriever.name, dataset, len(queries), mean_scores(per_query, list(metrics)),
                           round(seconds, 2), per_query)


def cutoff(metric: str) -> int:
    """The ``k`` of ``name@k`` (10 when a metric has none)."""
    _, _, k = metric.partition("@")
    if k and not k.isdigit():
        raise ValueError(f"metric {metric!r} has no integer cut-off; write it as name@k, e.g. ndcg@10")
    return int(k) if k else 10
