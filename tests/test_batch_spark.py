"""disambig batch and eval on a local[2] Spark through mlflow.pyfunc.spark_udf, with the scripted LM each Spark
worker builds from DISAMBIG_LM_FACTORY: the same answers as the local engine, a poisoned row's error kept, a re-run
answering nothing twice, the LM built once per worker process, and the same report as an in-process eval."""

from __future__ import annotations

import json

import pytest
from batch_fakes import POISON, scripted_lm
from test_batch import calls, questions, scripted, state, write_questions  # noqa: F401 - fixtures

from disambig.optimizers.batch import run_batch
from disambig.optimizers.batch_io import read_table

pytestmark = pytest.mark.slow  # make install puts the disambig[spark] extra in; without it these fail, not skip

COMPARED = ["id", "question", "long_answer", "interpretations", "passage_ids", "passages", "error"]


def test_spark_answers_equal_local_keep_errors_and_resume(tmp_path, scripted, state, monkeypatch):  # noqa: F811
    source = write_questions(tmp_path / "in.parquet", questions(20, poison=7))
    run_batch(state, source, tmp_path / "local.jsonl", engine="local")
    spark_log = tmp_path / "spark-calls.jsonl"
    builds = tmp_path / "spark-builds.txt"
    monkeypatch.setenv("DISAMBIG_SCRIPTED_LOG", str(spark_log))
    monkeypatch.setenv("DISAMBIG_SCRIPTED_BUILDS", str(builds))

    first = run_batch(state, source, tmp_path / "spark.jsonl", engine="spark", master="local[2]", partitions=4)
    local, spark = read_table(tmp_path / "local.jsonl"), read_table(tmp_path / "spark.jsonl")
    assert (first.answered, first.failed) == (20, 1)
    assert spark[COMPARED].to_dict("records") == local[COMPARED].to_dict("records")
    assert "poisoned question" in spark["error"][7] and sum(e is None for e in spark["error"]) == 19
    pids = builds.read_text().split()
    assert 1 <= len(pids) == len(set(pids)) <= 4  # one LM per worker process, not per task or row

    again = run_batch(state, source, tmp_path / "spark.jsonl", engine="spark", master="local[2]", partitions=4)
    assert (again.answered, again.failed, again.skipped) == (1, 1, 19)
    asked = calls(spark_log)
    assert sorted(set(asked)) == sorted(q["question"] for q in questions(20, poison=7))
    assert [q for q in asked if asked.count(q) > 1] == [f"Who won prize 7? {POISON}"] * 2  # only the failure retried


def test_eval_engine_spark_reports_what_the_local_run_reports(tmp_path, scripted, asqa_file):  # noqa: F811
    import dspy
    from typer.testing import CliRunner

    from disambig.cli.app import app
    from disambig.data import load_dataset
    from disambig.evaluation.session import EvalConfig, run_eval
    from disambig.lm.adapter import CompactJSONAdapter
    from disambig.programs import build_program
    from disambig.run_setup import resolve_metrics
    from disambig.settings import Settings

    names = ["str-em", "rouge-l", "d-f1", "dr"]
    out = tmp_path / "spark-run"
    result = CliRunner().invoke(app, ["eval", "closed-book", "--dataset", asqa_file, "--split", "all",
                                      "--lm", "openai/unused", "--no-track", "--out", str(out), "--engine", "spark",
                                      "--master", "local[2]", *[a for n in names for a in ("--metric", n)]])
    assert result.exit_code == 0, result.output
    spark_report = json.loads((out / "report.json").read_text())

    dspy.configure(lm=scripted_lm(), adapter=CompactJSONAdapter())
    examples = load_dataset(asqa_file, split="all")
    config = EvalConfig(program="closed-book", dataset=asqa_file, split="all", lm="openai/unused",
                        metrics=tuple(names))
    local = run_eval(config, build_program("closed-book"), examples, resolve_metrics(names, Settings()),
                     tmp_path / "local-run", track=False).report
    assert spark_report["metrics"] == local["metrics"]
    assert (spark_report["questions"], spark_report["failures"]) == (local["questions"], 0)
    assert spark_report["efficiency"]["lm_calls_per_q"] == 1.0
