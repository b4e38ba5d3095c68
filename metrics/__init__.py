"""Benchmark metrics as plain functions and as DSPy metrics ``metric(example, pred, trace=None)``.

Registry names (``get_metric``): em, f1, answer-f1, d-f1, d-precision, rouge-l, dr, mrecall@K.
With ``trace`` set (during optimisation) a metric returns a bool: score >= its threshold.
"""

from __future__ import annotations

from collections.abc import Callable

from disambig.metrics.dspy_metrics import METRICS, get_metric

__all__ = ["METRICS", "get_metric"]
Metric = Callable[..., float | bool]
