"""A compile's MLflow run is named after the artifact (``--name``), and the manifest lists every entry with the run
that logged it. Scripted LM, the ASQA rows of ``tests/fixtures``, MLflow in the test's folder."""

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
    lm = DummyLM([{"long_answer": "It was Paul Simon."}] * 60, adapter=CompactJSONAdapter())
    monkeypatch.setattr("disambig.lm.runtime.build_lm", lambda settings, spec=None, **kw: lm)


def compile_named(asqa_file, tmp_path, *extra):
    result = runner.invoke(app, ["compile", "closed-book", "--dataset", asqa_file, "--metric", "rouge-l",
                                 "--optimizer", "labeled-fewshot", "--train", "3", "--val", "2", "--tracking-uri",
                                 f"sqlite:///{tmp_path / 'mlflow.db'}", "--out", str(tmp_path / "artifacts"), *extra])
    assert result.exit_code == 0, result.output
    return result


def test_two_compiles_with_other_names_are_two_runs_each_named_and_listed_in_the_manifest(scripted_lm, asqa_file,
                                                                                          tmp_path):
    from mlflow.tracking import MlflowClient

    compile_named(asqa_file, tmp_path, "--name", "first")
    compile_named(asqa_file, tmp_path, "--name", "second", "--register-anyway")
    compile_named(asqa_file, tmp_path, "--name", "untracked", "--no-track")
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("disambig-compile").experiment_id])
    by_name = {run.info.run_name: run for run in runs}
    # both were closed-book-asqa-mini-labeled-fewshot
    assert set(by_name) == {"closed-book-asqa-mini-first", "closed-book-asqa-mini-second"}
    assert by_name["closed-book-asqa-mini-first"].data.params["name"] == "first"

    entries = json.loads((tmp_path / "artifacts" / "closed-book" / "asqa-mini" / "manifest.json").read_text())
    assert {name: entry["mlflow_run_id"] for name, entry in entries.items()} == {
        "first": by_name["closed-book-asqa-mini-first"].info.run_id,
        "second": by_name["closed-book-asqa-mini-second"].info.run_id,
        "untracked": None,
    }
    assert entries["second"]["mlflow_model"] == "models:/disambig-closed-book-asqa-mini/1"
    assert "mlflow_model" not in entries["first"]  # no gain: not registered
    assert {entry["name"] for entry in entries.values()} == {"first", "second", "untracked"}

    logged = client.download_artifacts(by_name["closed-book-asqa-mini-first"].info.run_id, "state/manifest.json",
                                       str(tmp_path))
    assert json.loads(open(logged, encoding="utf-8").read())["first"]["mlflow_run_id"] == \
        by_name["closed-book-asqa-mini-first"].info.run_id  # the run's own copy names it too


def test_without_a_name_the_run_is_named_after_the_optimizer(scripted_lm, asqa_file, tmp_path):
    from mlflow.tracking import MlflowClient

    compile_named(asqa_file, tmp_path)
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    (run,) = client.search_runs([client.get_experiment_by_name("disambig-compile").experiment_id])
    assert run.info.run_name == "closed-book-asqa-mini-labeled-fewshot"
