"""``bench/quality/grounded.py``: several stored runs judged on one shared U_q, resumably."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from grounded_fakes import DIVA_ROW, VERDICT_ROW, judge_lm, write_asqa, write_run
from program_fakes import FakeRetriever

from disambig.evaluation.proxy import ProxySource, SharedProxy
from disambig.metrics import Judge

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    return importlib.import_module("bench.quality.grounded")


def test_bench_judges_runs_on_one_proxy_and_resumes(tmp_path, bench):
    dataset = write_asqa(tmp_path / "goals.jsonl")
    runs = [write_run(tmp_path / "verdict-goals", dataset, VERDICT_ROW, "aaa111"),
            write_run(tmp_path / "diva-goals", dataset, DIVA_ROW, "bbb222")]
    retriever = FakeRetriever()
    proxy = SharedProxy(ProxySource(top=3), retriever)
    lm = judge_lm()
    rows = [bench.grounded_row(run, Judge(lm), "openai/judge-a", proxy) for run in runs]
    assert retriever.calls == 1 and rows[0]["proxy"] == rows[1]["proxy"]
    assert [r["metrics"]["g-precision"] for r in rows] == [1.0, 1.0]
    assert rows[0]["cost"]["lm_calls_per_q"] == 2.0 and rows[1]["code"] == "bbb222"
    text = bench.table(rows)
    assert "| verdict | local | 1 | 0 | 1.00 | 100.00 |" in text and "G-F1" in text
    calls = len(lm.history)
    again = [bench.grounded_row(run, Judge(lm), "openai/judge-a", proxy) for run in runs]
    assert len(lm.history) == calls and [r["judge"]["reused"] for r in again] == [1, 1]
    assert [r["metrics"] for r in again] == [r["metrics"] for r in rows]
    assert (runs[0] / bench.LOG_FILE).is_file()
