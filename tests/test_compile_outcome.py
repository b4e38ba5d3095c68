"""A compile that learned nothing says so in one line and registers no new model version unless
``--register-anyway``; the manifest and the state file record the outcome (``improved``, ``no-gain``, ``no-demos``)
either way. Scripted LM, the ASQA rows of ``tests/fixtures`` and hand-made rows; MLflow in the test's folder."""

from __future__ import annotations

import json
from itertools import chain, repeat

import dspy
import pytest
from dspy.utils import DummyLM
from typer.testing import CliRunner

from disambig.cli import app
from disambig.lm.adapter import CompactJSONAdapter
from disambig.optimizers.compile import CompileJob, compile_outcome, compile_program
from disambig.optimizers.recipes import Budget
from disambig.programs import build_program

runner = CliRunner()


@pytest.fixture
def constant_lm(monkeypatch):
    """Every call answers the same: the compiled program scores what the uncompiled one scored."""
    lm = DummyLM([{"long_answer": "It was Paul Simon."}] * 40, adapter=CompactJSONAdapter())
    monkeypatch.setattr("disambig.lm.runtime.build_lm", lambda settings, spec=None, **kw: lm)
    return lm


def compile_args(asqa_file, tmp_path, *extra):
    return ["compile", "closed-book", "--dataset", asqa_file, "--metric", "rouge-l", "--optimizer", "labeled-fewshot",
            "--train", "3", "--val", "2", "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}", "--out",
            str(tmp_path / "artifacts"), *extra]


def registered_versions(tmp_path) -> list:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    return client.search_model_versions("name='disambig-closed-book-asqa-mini'")


def saved(tmp_path) -> tuple[dict, dict]:
    folder = tmp_path / "artifacts" / "closed-book" / "asqa-mini"
    state = json.loads((folder / "labeled-fewshot.json").read_text())
    return json.loads((folder / "manifest.json").read_text())["labeled-fewshot"], state["metadata"]["compile"]


@pytest.mark.parametrize(("optimizer", "new_demos", "knobs_tuned", "before", "after", "outcome"), [
    ("labeled-fewshot", 0, False, 0.5, 0.9, "no-demos"),  # nothing changed: the rise is noise
    ("bootstrap", 0, False, 0.5, 0.5, "no-demos"),
    ("none", 0, False, 0.5, 0.5, "no-demos"),
    ("labeled-fewshot", 2, False, 0.5, 0.5, "no-gain"),
    ("bootstrap", 1, False, 0.5, 0.4, "no-gain"),
    ("bootstrap", 1, False, 0.5, 0.6, "improved"),
    ("none", 0, True, 0.4, 0.6, "improved"),  # the knobs were learned (DIVA's calibrated thresholds)
    ("none", 0, True, 0.6, 0.6, "no-gain"),
    ("mipro", 0, False, 0.4, 0.6, "improved"),  # instructions may have changed without a demo
    ("gepa", 0, False, 0.6, 0.4, "no-gain"),
])
def test_the_outcome_of_a_compile(optimizer, new_demos, knobs_tuned, before, after, outcome):
    assert compile_outcome(optimizer, new_demos, knobs_tuned, before, after) == outcome


def test_rows_that_fill_no_output_of_the_program_add_no_demo(tmp_path):
    """AmbigNQ-like rows carry no long answer, so closed-book's step gets no usable demo from them."""
    dspy.configure(lm=DummyLM([{"long_answer": "Person X."}] * 10, adapter=CompactJSONAdapter()),
                   adapter=CompactJSONAdapter())
    rows = [dspy.Example(id=f"q{i}", question=f"Who won prize {i}?").with_inputs("question") for i in range(4)]
    job = CompileJob("closed-book", "toy", "mentions", "labeled-fewshot", Budget(demos=2))
    result = compile_program(job, build_program("closed-book"), rows[:3], rows[3:], lambda ex, pred, trace=None: 1.0,
                             tmp_path, {"train": "x", "heldout": "y"})
    assert (result.outcome, result.manifest["new_demos"]) == ("no-demos", 0)
    state = json.loads(result.state_path.read_text())
    assert state["metadata"]["compile"]["outcome"] == "no-demos"


def test_tuned_knobs_are_scored_against_the_untuned_program(tmp_path, monkeypatch):
    """The score before is the uncompiled program's (default knobs), not the tuned one's: the tuning is what was
    learned. Scores by hand: untuned 0.25, tuned (compiled by `none`, a copy) 0.75."""
    untuned, tuned = build_program("closed-book"), build_program("closed-book")
    monkeypatch.setattr("disambig.optimizers.compile.score",
                        lambda program, examples, metric, threads=1: 0.25 if program is untuned else 0.75)
    job = CompileJob("closed-book", "toy", "mentions", "none", Budget(), knob_trials=[{"knobs": {}, "train_score": 1}])
    rows = [dspy.Example(id="q", question="Who?").with_inputs("question")]
    result = compile_program(job, tuned, rows, rows, lambda ex, pred, trace=None: 1.0, tmp_path, {}, uncompiled=untuned)
    assert (result.before, result.after, result.outcome) == (0.25, 0.75, "improved")


def test_a_compile_without_gain_says_so_and_registers_no_model_version(constant_lm, asqa_file, tmp_path):
    result = runner.invoke(app, compile_args(asqa_file, tmp_path))
    assert result.exit_code == 0, result.output
    assert ("nothing learned (no-gain): the held-out score did not improve; saved, but no new MLflow model version "
            "registered (--register-anyway registers it)") in " ".join(result.output.split())
    assert "MLflow run_id" in result.output and "MLflow registered" not in result.output
    assert registered_versions(tmp_path) == []
    manifest, recorded = saved(tmp_path)
    assert manifest["outcome"] == recorded["outcome"] == "no-gain" and manifest["new_demos"] == 2
    assert recorded["scores"]["before"] == recorded["scores"]["after"] == manifest["scores"]["after"]


def test_register_anyway_registers_a_compile_without_gain(constant_lm, asqa_file, tmp_path):
    result = runner.invoke(app, compile_args(asqa_file, tmp_path, "--register-anyway"))
    assert result.exit_code == 0, result.output
    assert "nothing learned (no-gain): the held-out score did not improve; registered anyway (--register-anyway)" \
        in " ".join(result.output.split())
    assert "MLflow registered: models:/disambig-closed-book-asqa-mini/1" in result.output
    assert len(registered_versions(tmp_path)) == 1


def test_a_compile_that_improved_is_registered_without_a_word(constant_lm, asqa_file, tmp_path, monkeypatch):
    scores = chain([0.25], repeat(0.75))  # before, then after
    monkeypatch.setattr("disambig.optimizers.compile.score", lambda *a, **kw: next(scores))
    result = runner.invoke(app, compile_args(asqa_file, tmp_path))
    assert result.exit_code == 0, result.output
    assert "before 0.2500 → after 0.7500" in result.output and "nothing learned" not in result.output
    assert "MLflow registered: models:/disambig-closed-book-asqa-mini/1" in result.output
    manifest, recorded = saved(tmp_path)
    assert manifest["outcome"] == recorded["outcome"] == "improved"


def test_without_tracking_the_line_says_only_that_it_was_saved(constant_lm, asqa_file, tmp_path):
    result = runner.invoke(app, [*compile_args(asqa_file, tmp_path), "--no-track"])
    assert result.exit_code == 0, result.output
    assert "nothing learned (no-gain): the held-out score did not improve; saved\n" in result.output
    assert not (tmp_path / "mlflow.db").exists()
