"""Aggregate per-question results into the run report (``report.json``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from disambig.data.atomic import write_json
from disambig.errors import ConfigurationError
from disambig.evaluation.records import QuestionResult
from disambig.metrics import corpus_means

REPORT_FILE = "report.json"
REPORT_OBJECTS = ("params", "metrics", "efficiency")
COST_KEYS = ("lm_calls", "input_tokens", "output_tokens", "retrieval_calls")


def metric_means(scores: list[dict[str, float]], names: list[str] | None = None) -> dict[str, float]:
    """Mean of each metric over all rows (a row without a score counts 0), then the corpus-level values.

    Metrics declared in ``disambig.metrics.CORPUS_METRICS`` (``dr``, ``g-f1``, ``g-precision-micro``) are
    computed from their inputs' means, e.g. dr = sqrt(mean D-F1 x mean ROUGE-L); without their inputs the
    report shows ``NAME-per-question`` (the plain mean) instead.
    """
    names = names if names is not None else sorted({name for s in scores for name in s})
    n = len(scores)
    means = {name: (sum(s.get(name, 0.0) for s in scores) / n if n else 0.0) for name in names}
    return corpus_means(means)


def build_report(results: list[QuestionResult], params: dict[str, Any]) -> dict[str, Any]:
    """Quality over all questions (a failure is scored as an empty answer), corpus-level metrics, cost and latency.

    Cost means and latency percentiles cover every question, failed ones included, so programs that fail
    on long, looping generations are not shown cheaper than they are: a failed question counts with its
    trace when it has one (the calls and tokens spent before it failed), else with zero calls and tokens
    and no latency sample (its time is unknown). ``efficiency["failures_without_trace"]`` says how many
    questions entered the cost means as zeros.
    """
    names = sorted({name for r in results for name in r.scores})
    traces = [r.trace or {} for r in results]
    return {
        "params": params,
        "questions": len(results),
        "failures": sum(r.failed for r in results),
        "metrics": metric_means([r.scores for r in results], names),
        "efficiency": efficiency(traces, failures_without_trace=sum(r.failed and not r.trace for r in results)),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def efficiency(traces: list[dict[str, Any]], failures_without_trace: int = 0) -> dict[str, float]:
    """Per-question means of LM calls, tokens and retrieval calls; latency p50/p95/p99 in seconds; dollars where
    the LM's price is known.

    Every trace counts in the means (an empty one as zeros); latency is over the traces that timed a run. When any
    call was priced (``disambig.lm.cost``): ``cost_usd`` (the run's total), ``cost_usd_per_q`` and
    ``priced_call_share`` (the share of LM calls that had a price: below 1 the dollars are a lower bound).
    """
    import numpy as np

    if not traces:
        return {}
    out = {f"{key}_per_q": float(np.mean([t.get(key, 0) for t in traces])) for key in COST_KEYS}
    timed = np.array([t["seconds"] for t in traces if "seconds" in t], dtype=float)
    for q in (50, 95, 99):
        if timed.size:
            out[f"latency_p{q}_s"] = float(np.percentile(timed, q))
    out["tokens_per_q"] = out["input_tokens_per_q"] + out["output_tokens_per_q"]
    out |= dollars(traces)
    out["failures_without_trace"] = float(failures_without_trace)
    return out


def dollars(traces: list[dict[str, Any]]) -> dict[str, float]:
    """The priced part of ``efficiency``: {} when no call had a price."""
    priced = [t for t in traces if t.get("cost_usd") is not None]
    if not priced:
        return {}
    total = float(sum(t["cost_usd"] for t in priced))
    calls = sum(t.get("lm_calls", 0) for t in traces)
    return {"cost_usd": total, "cost_usd_per_q": total / len(traces),
            "priced_call_share": sum(t.get("priced_calls", 0) for t in priced) / calls if calls else 0.0}


def write_report(report: dict[str, Any], out_dir: Path) -> Path:
    """Write ``out_dir/report.json`` atomically; return its path."""
    return write_json(out_dir / REPORT_FILE, report)


def read_report(path: Path) -> dict[str, Any]:
    """Load a report from a ``report.json`` path or the run folder that holds one.

    Raises:
        FileNotFoundError: there is no report there.
        ConfigurationError: the file is not a report (cut, not UTF-8, not a JSON object).
    """
    path = path / REPORT_FILE if path.is_dir() else path
    if not path.is_file():
        raise FileNotFoundError(f"no report at {str(path)!r}; pass a run folder or its report.json")
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"report {str(path)!r} is not the JSON a run writes ({type(exc).__name__}); "
                                 "re-run its eval to write it again") from None
    if not isinstance(report, dict) or any(not isinstance(report.get(k, {}), dict) for k in REPORT_OBJECTS):
        raise ConfigurationError(f"report {str(path)!r} is not a run's report; re-run its eval to write it again")
    return report
