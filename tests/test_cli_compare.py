"""``disambig compare``: the runs side by side with each run's difference to a reference run on one metric, its 95%
paired-bootstrap interval and verdict, from the runs' stored per-question scores (hand-made run folders, no LM)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from disambig.cli import app

runner = CliRunner()


def run(folder: Path, program: str, scores: dict[str, dict[str, float]], dataset: str = "ambignq") -> Path:
    """A run folder as ``disambig eval --out`` leaves it: its report and one results row per question."""
    folder.mkdir()
    names = sorted({name for by_metric in scores.values() for name in by_metric})
    means = {name: sum(s.get(name, 0.0) for s in scores.values()) / len(scores) for name in names}
    report = {"params": {"program": program, "dataset": dataset}, "metrics": means, "questions": len(scores),
              "failures": 0, "efficiency": {"lm_calls_per_q": 1.0}}
    (folder / "report.json").write_text(json.dumps(report))
    (folder / "results.jsonl").write_text("".join(json.dumps({"id": q, "scores": s}) + "\n" for q, s in scores.items()))
    return folder


def f1(*values: float) -> dict[str, dict[str, float]]:
    return {f"q{n}": {"ambigqa-f1": v} for n, v in enumerate(values, 1)}


@pytest.fixture
def runs(tmp_path):
    return [run(tmp_path / "base", "vanilla-rag", f1(0, 0, 0, 0)),
            run(tmp_path / "all", "adf", f1(1, 1, 1, 1)),         # +1 on every question: every resample says +1
            run(tmp_path / "same", "diva", f1(0, 0, 0, 0)),       # equal everywhere: 0, a tie
            run(tmp_path / "more", "verdict", f1(1, 0, 0, 0, 1))]  # q5 is not the reference's: paired on 4


def test_each_run_gets_its_paired_difference_to_the_first_on_the_primary_metric(runs):
    result = runner.invoke(app, ["compare", *map(str, runs)])
    assert result.exit_code == 0, result.output
    assert "Δ ambigqa-f1 vs run 1 [95% CI]" in result.output  # AmbigNQ's primary metric
    lines = {line.split("│")[1].strip(): line for line in result.output.splitlines() if "│" in line}
    assert "reference" in lines["1. vanilla-rag (ambignq)"]
    assert "+1.000 [+1.000, +1.000] better" in lines["2. adf (ambignq)"]
    assert "+0.000 [+0.000, +0.000] tie" in lines["3. diva (ambignq)"]
    # on q1..q4 the mean is 0.25 against 0 (one question of four): the interval reaches 0, so a tie, on 4 of 5
    assert "+0.250 [+0.000, +0.750] tie on 4" in lines["4. verdict (ambignq)"]


def test_another_reference_and_an_error_metric_where_lower_is_better(tmp_path):
    nace = [run(tmp_path / name, name, {f"q{n}": {"nace": v} for n, v in enumerate(values, 1)}, "counts.jsonl")
            for name, values in (("dfa", (0.5, 0.5, 0.5)), ("naive", (1.0, 1.0, 1.0)))]
    result = runner.invoke(app, ["compare", *map(str, nace), "--reference", "2", "--metric", "nace"])
    assert result.exit_code == 0, result.output
    lines = {line.split("│")[1].strip(): line for line in result.output.splitlines() if "│" in line}
    assert "-0.500 [-0.500, -0.500] better" in lines["1. dfa (counts)"] and "reference" in lines["2. naive (counts)"]


@pytest.mark.parametrize(("args", "match"), [
    (["--reference", "5"], "--reference 5 names a run, but 4 were given"),
    (["--metric", "bleu"], "no per-question 'bleu' in the scores"),
])
def test_a_reference_or_metric_that_is_not_there_is_a_clear_error(runs, args, match):
    result = runner.invoke(app, ["compare", *map(str, runs), *args])
    assert result.exit_code == 2 and match in result.output, result.output
