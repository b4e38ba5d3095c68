"""Benchmark metrics as plain functions and as DSPy metrics ``metric(example, pred, trace=None)``.

Registry names (``get_metric``): em, f1, answer-f1, d-f1, d-precision, rouge-l, dr, mrecall@K; with a judge LM
(``get_metric(name, judge_lm)``): g-precision, g-recall, g-f1 (VerDICt grounded evaluation), judge-similarity,
judge-disambiguation (ADF LLM-judge scores). With ``trace`` set (during optimisation) a metric returns a bool:
score >= its threshold. Plain functions outside the registry: nDCG/Recall/MRR through ranx (``ranking``) and the
DFA aggregation metrics ACE, NACE and chunk-level recall (``aggregation``).
"""

from __future__ import annotations

from collections.abc import Callable

from disambig.metrics.dspy_metrics import JUDGE_METRICS, METRICS, get_metric, is_judge_metric
from disambig.metrics.judge import Judge

__all__ = ["JUDGE_METRICS", "METRICS", "Judge", "get_metric", "is_judge_metric"]
Metric = Callable[..., float | bool]
