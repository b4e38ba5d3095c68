"""eval, compare and compile through the command line, with a scripted LM on hand-made dataset rows."""

from __future__ import annotations

import json

import pytest
from dspy.utils import DummyLM
from typer.testing import CliRunner

from disambig.cli import app
from disambig.evaluation.code_version import code_stamp
from disambig.lm.adapter import CompactJSONAdapter
from disambig.run_setup import default_metrics

runner = CliRunner()


@pytest.fixture
def scripted_lm(monkeypatch):
    lm = DummyLM([{"long_answer": "It was Paul Simon."}] * 40, adapter=CompactJSONAdapter())
    monkeypatch.setattr("disambig.lm.runtime.build_lm", lambda settings, spec=None, **kw: lm)


def test_eval_of_a_file_scores_every_row_with_its_formats_metrics_then_compare(scripted_lm, tmp_path, asqa_file):
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", "closed-book", "--dataset", asqa_file, "--no-track", "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    assert report["questions"] == 6 and report["params"]["split"] == "all"  # a file is evaluated whole
    assert set(default_metrics("asqa", with_retrieval=False)) == set(report["metrics"])
    assert {"str-em", "rouge-l", "dr"} <= set(report["metrics"]) and report["efficiency"]["lm_calls_per_q"] == 1
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and all(row["code"] == code_stamp() for row in rows)
    assert report["code"] == [code_stamp() | {"rows": 6}]
    compared = runner.invoke(app, ["compare", str(out), str(out / "report.json")])
    assert compared.exit_code == 0 and compared.output.count("closed-book (asqa-mini)") == 2


def test_resuming_with_other_code_is_refused_unless_allowed(scripted_lm, tmp_path, asqa_file):
    out = tmp_path / "run"
    args = ["eval", "closed-book", "--dataset", asqa_file, "--limit", "2", "--no-track", "--out", str(out)]
    assert runner.invoke(app, args).exit_code == 0
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    rows[0]["code"] = {**rows[0]["code"], "commit": "0123456789ab"}
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    refused = runner.invoke(app, args)
    assert refused.exit_code == 2 and "other code (0123456789ab" in refused.output, refused.output
    assert "--allow-mixed-code" in refused.output
    assert runner.invoke(app, [*args, "--allow-mixed-code"]).exit_code == 0


def test_compile_saves_an_artifact(scripted_lm, tmp_path, asqa_file):
    result = runner.invoke(app, ["compile", "closed-book", "--dataset", asqa_file, "--metric", "rouge-l",
                                 "--optimizer", "labeled-fewshot", "--train", "3", "--val", "2", "--no-track",
                                 "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "before" in result.output and "after" in result.output
    state = tmp_path / "closed-book" / "asqa-mini" / "labeled-fewshot.json"
    assert len(json.loads(state.read_text())["answer"]["demos"]) == 2


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["eval", "nope", "--no-track"], "unknown program"),
        (["eval", "closed-book", "--dataset", "nope", "--no-track"], "unknown dataset"),
        (["eval", "closed-book", "--metric", "bleu", "--no-track"], "unknown metric"),
        (["compile", "closed-book", "--optimizer", "magic", "--no-track"], "unknown optimizer"),
        (["compile", "closed-book", "--optimizer", "labeled-fewshot", "--teacher-lm", "local:smollm2", "--no-track"],
         "bootstraps none"),
        (["compile", "route", "--teacher-lm", "local:smollm2", "--no-track"], "--teacher-lm is for programs"),
        (["compile", "closed-book", "--teacher-lm", "local:smollm", "--no-track"], "no embedded model 'smollm'"),
        (["compare", "/no/such/run"], "no report"),
    ],
)
def test_bad_input_is_a_clear_error(scripted_lm, args, match):
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and match in result.output, result.output


def test_a_renamed_program_names_its_new_name(scripted_lm, asqa_file):
    result = runner.invoke(app, ["eval", "dtv-no-verify", "--dataset", asqa_file, "--no-track"])
    assert result.exit_code == 2 and "renamed 'per-reading-rag'" in result.output, result.output


def test_compile_records_its_run_in_the_tracking_store_it_is_given(scripted_lm, tmp_path, asqa_file, monkeypatch):
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'other.db'}")  # restored after the test
    given = f"sqlite:///{tmp_path / 'given.db'}"
    result = runner.invoke(app, ["compile", "closed-book", "--dataset", asqa_file, "--metric", "rouge-l",
                                 "--optimizer", "labeled-fewshot", "--train", "3", "--val", "2", "--no-register",
                                 "--tracking-uri", given, "--out", str(tmp_path / "artifacts")])
    assert result.exit_code == 0, result.output
    experiment = MlflowClient(given).get_experiment_by_name("disambig-compile")
    assert len(MlflowClient(given).search_runs([experiment.experiment_id])) == 1
    assert not (tmp_path / "other.db").exists()


def test_skip_answers_a_block_of_the_split_and_is_part_of_the_run(scripted_lm, tmp_path, asqa_file):
    every = [json.loads(line)["id"] for line in open(asqa_file, encoding="utf-8")]
    out = tmp_path / "block"
    args = ["eval", "closed-book", "--dataset", asqa_file, "--limit", "5", "--skip", "3", "--no-track", "--out",
            str(out)]
    assert runner.invoke(app, args).exit_code == 0
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [row["id"] for row in rows] == every[3:5]
    assert json.loads((out / "params.json").read_text())["skip"] == 3
    other_block = runner.invoke(app, [*args[:-4], "1", "--no-track", "--out", str(out)])
    assert other_block.exit_code == 2 and "different skip" in other_block.output, other_block.output
    nothing_left = runner.invoke(app, [*args[:-4], "5", "--no-track", "--out", str(tmp_path / "none")])
    assert nothing_left.exit_code == 2 and "--skip 5 leaves none of the first 5 questions" in nothing_left.output
    assert "or raise --limit" in nothing_left.output
    past_the_end = runner.invoke(app, ["eval", "closed-book", "--dataset", asqa_file, "--skip", "6", "--no-track",
                                         "--out", str(tmp_path / "none")])
    assert past_the_end.exit_code == 2 and "--skip 6 leaves none of the 6 questions" in past_the_end.output
    assert "raise --limit" not in past_the_end.output
