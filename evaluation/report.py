"""Aggregate per-question results into the run report (``report.json``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from disambig.evaluation.records import QuestionResult

REPORT_FILE = "report.json"
COST_KEYS = ("lm_calls", "input_tokens", "output_tokens", "retrieval_calls")


def build_report(results: list[QuestionResult], params: dict[str, Any]) -> dict[str, Any]:
    """Mean of every metric over all questions (failures score 0) plus cost and latency percentiles.

    Cost means and latency percentiles are over the questions that finished (a failure has no trace).
    """
    names = sorted({name for r in results for name in r.scores})
    n = len(results)
    quality = {name: (sum(r.scores.get(name, 0.0) for r in results) / n if n else 0.0) for name in names}
    finished = [r.trace for r in results if not r.failed and r.trace]
    return {
        "params": params,
        "questions": n,
        "failures": sum(r.failed for r in results),
        "metrics": quality,
        "efficiency": efficiency(finished),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def efficiency(traces: list[dict[str, Any]]) -> dict[str, float]:
    """Per-question means of LM calls, tokens and retrieval calls; latency p50/p95/p99 in seconds."""
    import numpy as np

    if not traces:
        return {}
    out = {f"{key}_per_q": float(np.mean([t.get(key, 0) for t in traces])) for key in COST_KEYS}
    seconds = np.array([t.get("seconds", 0.0) for t in traces], dtype=float)
    for q in (50, 95, 99):
        out[f"latency_p{q}_s"] = float(np.percentile(seconds, q))
    out["tokens_per_q"] = out["input_tokens_per_q"] + out["output_tokens_per_q"]
    return out


def write_report(report: dict[str, Any], out_dir: Path) -> Path:
    path = out_dir / REPORT_FILE
    path.write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    return path


def read_report(path: Path) -> dict[str, Any]:
    """Load a report from a ``report.json`` path or the run folder that holds one."""
    path = path / REPORT_FILE if path.is_dir() else path
    if not path.is_file():
        raise FileNotFoundError(f"no report at {str(path)!r}; pass a run folder or its report.json")
    return json.loads(path.read_text(encoding="utf-8"))
