"""One bad row never sinks a run: an LM that raises (HTTP 500), hangs past its timeout or answers something that is
not JSON fails that row with its reason, and every other row is answered — in ``eval`` and in local ``batch``.

The LM is the real remote path as a user configures it (``--lm openai/echo``, ``DISAMBIG_API_BASE`` at a scripted
OpenAI-compatible server on loopback, ``tests/openai_fakes.py``), with ``DISAMBIG_LM_TIMEOUT=1`` so a hang costs a
second, not the default 600 s, and ``DISAMBIG_LM_RETRIES=0`` (a retry would ask the same scripted fault again).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pandas as pd
import pytest
from openai_fakes import MODEL, FakeOpenAI, scripted_answer
from typer.testing import CliRunner

from disambig.cli import app

TIMEOUT_S = 1.0
QUESTIONS = {"ok-1": "Who won prize 1?", "hang": "Who won prize 2? HANG", "malformed": "Who won prize 3? MALFORMED",
             "raises": "Who won prize 4? BROKEN", "ok-5": "Who won prize 5?"}
REASONS = {"hang": "(?i)time", "malformed": "(?i)pars|json", "raises": "500|server"}


@pytest.fixture
def server(monkeypatch):
    from disambig.lm import endpoint

    fake = FakeOpenAI(hang_s=30).start()
    monkeypatch.setattr(endpoint, "_checked", set())
    for name, value in {"DISAMBIG_API_BASE": fake.base, "DISAMBIG_LM_TIMEOUT": str(TIMEOUT_S),
                        "DISAMBIG_LM_RETRIES": "0", "DISAMBIG_LM": f"openai/{MODEL}"}.items():
        monkeypatch.setenv(name, value)
    yield fake
    fake.stop()


def asqa_rows() -> list[dict]:
    return [{"id": qid, "question": q, "qa_pairs": [{"question": q, "short_answers": ["x"]}],
             "annotations": [{"long_answer": "x", "knowledge": []}]} for qid, q in QUESTIONS.items()]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def check_rows(errors: dict[str, str | None], answers: dict[str, str]) -> None:
    for qid, pattern in REASONS.items():
        assert errors[qid], f"{qid} should have failed"
        assert re.search(pattern, errors[qid]), (qid, errors[qid])
    for qid in ("ok-1", "ok-5"):
        assert errors[qid] is None and answers[qid] == scripted_answer(QUESTIONS[qid])


def test_eval_fails_only_the_faulty_rows_and_answers_the_others(tmp_path, server):
    dataset = write_jsonl(tmp_path / "faults.jsonl", asqa_rows())
    began = time.monotonic()
    result = CliRunner().invoke(app, ["eval", "closed-book", "--dataset", str(dataset), "--threads", "2", "--no-track",
                                      "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert time.monotonic() - began < 20  # the hanging row cost its timeout, not the server's 30 s
    rows = {r["id"]: r for r in map(json.loads, (tmp_path / "run" / "results.jsonl").read_text().splitlines())}
    assert sorted(rows) == sorted(QUESTIONS)
    check_rows({k: r["error"] for k, r in rows.items()},
               {k: (r["prediction"] or {}).get("long_answer", "") for k, r in rows.items()})
    assert json.loads((tmp_path / "run" / "report.json").read_text())["failures"] == 3


def test_local_batch_keeps_each_faulty_rows_reason_and_answers_the_others(tmp_path, server, monkeypatch):
    from disambig.optimizers.artifact import save_artifact
    from disambig.programs import build_program

    monkeypatch.setenv("DISAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    state = save_artifact(build_program("closed-book"), tmp_path / "art" / "plain.json",
                          {"program": "closed-book", "optimizer": "none"})
    source = write_jsonl(tmp_path / "in.jsonl", [{"id": k, "question": q} for k, q in QUESTIONS.items()])
    result = CliRunner().invoke(app, ["batch", str(state), "-i", str(source), "-o", str(tmp_path / "out.jsonl"),
                                      "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"])
    assert result.exit_code == 0, result.output
    assert "answered 5 (3 failed)" in result.output
    out = pd.read_json(tmp_path / "out.jsonl", lines=True)
    check_rows(dict(zip(out["id"], [e if isinstance(e, str) else None for e in out["error"]], strict=True)),
               dict(zip(out["id"], out["long_answer"], strict=True)))
