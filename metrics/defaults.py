"""The metrics each dataset kind is scored with when the user names none (``disambig eval``/``score``), and the one
``disambig compile`` optimises when it is given none.

ASQA: the official scorer's STR-EM, ROUGE-L (rougeLsum) and corpus DR, with the token D-F1 proxy as DR's
disambiguation input (``corpus.with_inputs(names, reader=True)`` swaps in the reader's ``disambig-f1``).
AmbigNQ: AmbigQA's official answer-set F1, the D-F1 proxy, and the ADF authors' F1 and D-F1.

The primary metric of a kind is the one its benchmark ranks systems by: DR on ASQA, answer-set F1 on AmbigNQ (whose
rows have no long answers, so DR and ROUGE-L are 0 there whatever the answer), 1 / (1 + NACE) on count questions (ACE
and NACE are errors: lower is better) and nDCG@10 on a BEIR folder's judged queries.
"""

from __future__ import annotations

DEFAULT_METRICS: dict[str, list[str]] = {
    "asqa": ["str-em", "rouge-l", "d-f1", "dr"],
    "ambignq": ["ambigqa-f1", "d-f1", "adf-f1", "adf-d-f1"],
    "aggregation": ["ace", "nace", "chunk-recall"],  # DFA paper §6.1 (NACE median: see the report's per-question)
}
FALLBACK_METRICS = ["d-f1", "answer-f1"]
PRIMARY_METRICS: dict[str, str] = {"asqa": "dr", "ambignq": "ambigqa-f1", "aggregation": "count-score",
                                   "beir": "ndcg@10"}
LOWER_IS_BETTER = frozenset({"ace", "nace"})
"""Error metrics: a lower value is the better one (a paired difference's "better" verdict is for a decrease)."""


def default_metrics(kind: str, reader: bool = False) -> list[str]:
    """The default metric names for a dataset kind (``asqa``, ``ambignq``); other kinds get the fallback."""
    from disambig.metrics.corpus import with_inputs

    names = DEFAULT_METRICS.get(kind, FALLBACK_METRICS)
    if reader and "d-f1" in names:
        names = ["disambig-f1" if n == "d-f1" else n for n in names]
    return with_inputs(names, reader=reader)


def primary_metric(kind: str) -> str:
    """The metric ``disambig compile`` optimises on a dataset kind by default (``PRIMARY_METRICS``); other kinds get
    the first fallback metric."""
    return PRIMARY_METRICS.get(kind, FALLBACK_METRICS[0])
