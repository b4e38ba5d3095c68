"""Benchmark metrics as plain functions and as DSPy metrics ``metric(example, pred, trace=None)``.

Every registry name, its formula and its source are in ``docs/metrics.md``. ``get_metric(name, judge_lm=...,
reader=...)`` builds one; with ``trace`` set (during optimisation) a metric returns a bool: score >= 0.5.
Report values that are computed from other metrics' means (corpus DR, corpus G-F1) are declared in
``CORPUS_METRICS``; ``with_inputs`` adds the per-question metrics they need. ``DEFAULT_METRICS`` gives each
dataset kind's default list, ``PRIMARY_METRICS`` the one ``compile`` optimises. Plain functions outside the
registry: nDCG/Recall/MRR (``ranking``) and the DFA aggregation metrics ACE, NACE and chunk-level recall
(``aggregation``).
"""

from __future__ import annotations

from collections.abc import Callable

from disambig.metrics.corpus import CORPUS_METRICS, corpus_means, with_inputs
from disambig.metrics.defaults import DEFAULT_METRICS, PRIMARY_METRICS, default_metrics, primary_metric
from disambig.metrics.dspy_metrics import (
    JUDGE_METRICS,
    METRICS,
    READER_METRICS,
    get_metric,
    is_judge_metric,
    is_reader_metric,
    metric_names,
)
from disambig.metrics.judge import Judge
from disambig.metrics.reader import QAReader

__all__ = [
    "CORPUS_METRICS", "DEFAULT_METRICS", "JUDGE_METRICS", "METRICS", "PRIMARY_METRICS", "READER_METRICS", "Judge",
    "QAReader", "corpus_means", "default_metrics", "get_metric", "is_judge_metric", "is_reader_metric",
    "metric_names", "primary_metric", "with_inputs",
]
Metric = Callable[..., float | bool]
