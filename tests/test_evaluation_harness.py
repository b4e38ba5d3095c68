"""The evaluation harness with a scripted program: resume, failures, report, plot, MLflow."""

from __future__ import annotations

import json

import dspy
import pytest

from disambig.errors import ConfigurationError
from disambig.evaluation.report import read_report
from disambig.evaluation.session import EvalConfig, run_eval


def examples(n: int = 5) -> list[dspy.Example]:
    return [dspy.Example(id=f"q{i}", question=f"question {i}?").with_inputs("question") for i in range(n)]


class Scripted:
    """Answers 'answer N' for 'question N?'; raises on the questions listed in ``fail_on``."""

    def __init__(self, fail_on: tuple[str, ...] = (), interrupt_on: str | None = None) -> None:
        self.fail_on, self.interrupt_on, self.asked = fail_on, interrupt_on, []

    def __call__(self, question: str) -> dspy.Prediction:
        self.asked.append(question)
        if question == self.interrupt_on:
            raise KeyboardInterrupt
        if question in self.fail_on:
            raise RuntimeError("LM output could not be parsed")
        number = question.split()[1].rstrip("?")
        trace = {"lm_calls": 2, "input_tokens": 100 * int(number), "output_tokens": 10, "retrieval_calls": 1,
                 "seconds": float(number)}
        return dspy.Prediction(long_answer=f"answer {number}", interpretations=[], passages=[], trace=trace)


def exact(example, pred, trace=None):
    return float(pred.long_answer == example.question.replace("question", "answer").rstrip("?"))


CONFIG = EvalConfig(program="scripted", dataset="toy", split="dev", metrics=("exact",))


def test_resume_after_interruption_matches_an_uninterrupted_run(tmp_path):
    full = run_eval(CONFIG, Scripted(), examples(), {"exact": exact}, tmp_path / "full", track=False)

    with pytest.raises(KeyboardInterrupt):
        interrupted = Scripted(interrupt_on="question 3?")
        run_eval(CONFIG, interrupted, examples(), {"exact": exact}, tmp_path / "r", track=False)
    assert len((tmp_path / "r" / "results.jsonl").read_text().splitlines()) == 3
    second = Scripted()
    resumed = run_eval(CONFIG, second, examples(), {"exact": exact}, tmp_path / "r", track=False)

    assert second.asked == ["question 3?", "question 4?"]  # finished ids are skipped
    for key in ("questions", "failures", "metrics", "efficiency"):
        assert resumed.report[key] == full.report[key]
    assert full.report["metrics"]["exact"] == 1.0


def test_failures_are_recorded_scored_zero_and_the_run_finishes(tmp_path):
    outcome = run_eval(CONFIG, Scripted(fail_on=("question 1?",)), examples(), {"exact": exact}, tmp_path, track=False)
    assert outcome.report["questions"] == 5 and outcome.report["failures"] == 1
    assert outcome.report["metrics"]["exact"] == pytest.approx(4 / 5)  # the failure counts as 0
    failed = [r for r in outcome.results if r.failed]
    assert failed[0].id == "q1" and "could not be parsed" in failed[0].error


def test_report_numbers_and_files(tmp_path):
    outcome = run_eval(CONFIG, Scripted(), examples(), {"exact": exact}, tmp_path, track=False)
    eff = outcome.report["efficiency"]
    # input tokens 0,100,200,300,400 -> mean 200; output 10 each; seconds 0..4 -> p50 = 2.0
    assert eff["input_tokens_per_q"] == 200 and eff["tokens_per_q"] == 210
    assert eff["latency_p50_s"] == 2.0 and eff["lm_calls_per_q"] == 2
    assert json.loads((tmp_path / "report.json").read_text())["metrics"]["exact"] == 1.0
    assert (tmp_path / "tradeoff.png").read_bytes()[:4] == b"\x89PNG"


def test_params_name_the_model_the_spec_resolved_to(tmp_path):
    from disambig.lm.models import DEFAULT_LOCAL_MODEL, EMBEDDED_MODELS

    run_eval(CONFIG, Scripted(), examples(1), {"exact": exact}, tmp_path / "a", track=False)
    params = json.loads((tmp_path / "a" / "params.json").read_text())
    assert params["lm_model"] == EMBEDDED_MODELS[DEFAULT_LOCAL_MODEL].file_name
    remote = EvalConfig(program="scripted", dataset="toy", lm="openai/gpt-4o-mini")
    run_eval(remote, Scripted(), examples(1), {"exact": exact}, tmp_path / "b", track=False)
    assert json.loads((tmp_path / "b" / "params.json").read_text())["lm_model"] == "openai/gpt-4o-mini"
    custom = EvalConfig(program="scripted", dataset="toy", lm="scripted")  # only a custom LM factory knows it
    run_eval(custom, Scripted(), examples(1), {"exact": exact}, tmp_path / "c", track=False)
    assert json.loads((tmp_path / "c" / "params.json").read_text())["lm_model"] == "scripted"


def test_a_folder_answered_by_another_model_under_the_same_spec_is_refused(tmp_path):
    run_eval(CONFIG, Scripted(), examples(1), {"exact": exact}, tmp_path, track=False)
    params = json.loads((tmp_path / "params.json").read_text())
    (tmp_path / "params.json").write_text(json.dumps(params | {"lm_model": "SmolLM2-135M-Instruct.Q4_1.gguf"}))
    with pytest.raises(ConfigurationError, match="model .SmolLM2"):
        run_eval(CONFIG, Scripted(), examples(2), {"exact": exact}, tmp_path, track=False)


def test_a_larger_limit_goes_on_to_the_new_questions_and_a_smaller_one_is_refused(tmp_path):
    first = EvalConfig(program="scripted", dataset="toy", split="dev", metrics=("exact",), limit=2)
    run_eval(first, Scripted(), examples(2), {"exact": exact}, tmp_path, track=False)
    grown = Scripted()
    more = run_eval(EvalConfig(**{**vars(first), "limit": 4}), grown, examples(4), {"exact": exact}, tmp_path,
                    track=False)
    assert grown.asked == ["question 2?", "question 3?"] and more.report["questions"] == 4
    assert json.loads((tmp_path / "params.json").read_text())["limit"] == 4
    with pytest.raises(ConfigurationError, match="different limit"):
        run_eval(first, Scripted(), examples(2), {"exact": exact}, tmp_path, track=False)


def test_a_folder_with_another_run_is_refused(tmp_path):
    run_eval(CONFIG, Scripted(), examples(2), {"exact": exact}, tmp_path, track=False)
    other = EvalConfig(program="scripted", dataset="toy", split="dev", lm="openai/gpt-4o-mini")
    with pytest.raises(ConfigurationError, match="different lm"):
        run_eval(other, Scripted(), examples(2), {"exact": exact}, tmp_path, track=False)


@pytest.mark.parametrize("content", [b'{"program": "scri', b"\xff\xfe", b"[1, 2]"])
def test_a_damaged_params_file_is_refused_naming_it(tmp_path, content):
    (tmp_path / "params.json").write_bytes(content)
    with pytest.raises(ConfigurationError, match=r"params.json.*delete the folder to start over"):
        run_eval(CONFIG, Scripted(), examples(2), {"exact": exact}, tmp_path, track=False)
    assert (tmp_path / "params.json").read_bytes() == content


@pytest.mark.parametrize("content", [b'{"params": {"prog', b"\xff", b"[1]", b'{"metrics": [1]}'])
def test_a_damaged_report_beside_the_run_is_left_out_of_the_plot_and_named_by_compare(tmp_path, content, caplog):
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "report.json").write_bytes(content)
    outcome = run_eval(CONFIG, Scripted(), examples(2), {"exact": exact}, tmp_path / "run", track=False)
    assert outcome.report["questions"] == 2 and "left out of the trade-off plot" in caplog.text
    with pytest.raises(ConfigurationError, match="other/report.json.*re-run its eval"):
        read_report(tmp_path / "other")


def test_mlflow_run_holds_params_metrics_and_artifacts(tmp_path):
    import mlflow

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    outcome = run_eval(CONFIG, Scripted(), examples(3), {"exact": exact}, tmp_path / "run", tracking_uri=uri)
    mlflow.set_tracking_uri(uri)
    run = mlflow.get_run(outcome.mlflow_run_id)
    assert run.data.params["program"] == "scripted" and run.data.metrics["exact"] == 1.0
    artifacts = {a.path for a in mlflow.MlflowClient(uri).list_artifacts(outcome.mlflow_run_id)}
    assert {"report.json", "tradeoff.png", "results.jsonl"} <= artifacts


def test_a_failure_keeps_what_the_attempt_cost(tmp_path):
    from dspy.utils import DummyLM

    def ask_then_fail(question: str) -> dspy.Prediction:
        dspy.Predict("question -> answer")(question=question)  # one LM call, then the program breaks
        raise RuntimeError("could not parse")

    lm = DummyLM([{"answer": "x"}] * 3)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        outcome = run_eval(CONFIG, ask_then_fail, examples(1), {"exact": exact}, tmp_path, track=False)
    (failed,) = outcome.results
    assert failed.failed and failed.trace["lm_calls"] == 1 and failed.trace["seconds"] > 0


def test_a_failure_is_scored_as_an_empty_answer_so_error_metrics_charge_it(tmp_path):
    from disambig.metrics import get_metric

    example = dspy.Example(id="c1", question="question 1?", gold_count=7, gold_chunk_ids=["a"]).with_inputs("question")
    metrics = {"nace": get_metric("nace"), "ace": get_metric("ace"), "exact": exact}
    outcome = run_eval(CONFIG, Scripted(fail_on=("question 1?",)), [example], metrics, tmp_path, track=False)
    # an empty answer counts 0: ACE = |0 - 7| = 7, NACE = 7 / 7 = 1 (not the 0 of a perfect count)
    assert outcome.results[0].scores == {"nace": pytest.approx(1.0), "ace": 7.0, "exact": 0.0}
