"""eval, compare and compile through the command line, with a scripted LM on real dataset rows."""

from __future__ import annotations

import json

import pytest
from dspy.utils import DummyLM
from typer.testing import CliRunner

from disambig.cli import app
from disambig.lm.adapter import CompactJSONAdapter

runner = CliRunner()


@pytest.fixture
def scripted_lm(monkeypatch):
    lm = DummyLM([{"long_answer": "It was Paul Simon."}] * 40, adapter=CompactJSONAdapter())
    monkeypatch.setattr("disambig.lm.runtime.build_lm", lambda settings, spec=None, **kw: lm)


def test_eval_then_compare(scripted_lm, tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", "closed-book", "--dataset", "asqa", "--limit", "3", "--no-track",
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    assert report["questions"] == 3 and set(report["metrics"]) == {"d-f1", "rouge-l", "dr", "answer-f1"}
    assert len((out / "results.jsonl").read_text().splitlines()) == 3
    compared = runner.invoke(app, ["compare", str(out), str(out / "report.json")])
    assert compared.exit_code == 0 and compared.output.count("closed-book (asqa)") == 2


def test_compile_saves_an_artifact(scripted_lm, tmp_path):
    result = runner.invoke(app, ["compile", "closed-book", "--dataset", "asqa", "--metric", "rouge-l",
                                 "--optimizer", "labeled-fewshot", "--train", "3", "--val", "2", "--no-track",
                                 "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "before" in result.output and "after" in result.output
    state = tmp_path / "closed-book" / "asqa" / "labeled-fewshot.json"
    assert len(json.loads(state.read_text())["answer"]["demos"]) == 2


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["eval", "nope", "--no-track"], "unknown program"),
        (["eval", "closed-book", "--dataset", "nope", "--no-track"], "unknown dataset"),
        (["eval", "closed-book", "--metric", "bleu", "--no-track"], "unknown metric"),
        (["compile", "closed-book", "--optimizer", "magic", "--no-track"], "unknown optimizer"),
        (["compare", "/no/such/run"], "no report"),
    ],
)
def test_bad_input_is_a_clear_error(scripted_lm, args, match):
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and match in result.output, result.output
