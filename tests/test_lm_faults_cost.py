"""A remote LM's faults and cost, against scripted OpenAI-compatible servers on loopback: the timeout and retries of
the settings reach the LM, 503/429 replies are retried (with the server's Retry-After) and a hang times out; an
eval re-run asks only the questions that failed; dollars of a priced model reach the trace, the report and MLflow,
from the bundled price map."""

from __future__ import annotations

import json
import os

import dspy
import pytest
from openai_fakes import MODEL, FakeOpenAI, _Handler, scripted_answer

from disambig.lm import make_lm
from disambig.lm.adapter import CompactJSONAdapter
from disambig.lm.cost import LOCAL_COST_MAP_ENV
from disambig.lm.runtime import build_lm
from disambig.settings import Settings


class FlakyHandler(_Handler):
    """Answers the first ``server.failures`` chat requests with ``server.status`` (and ``Retry-After: 0``)."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self.server.posts += 1
        if self.server.posts <= self.server.failures:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            data = json.dumps({"error": {"message": "busy", "type": "server_error"}}).encode()
            self.send_response(self.server.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Retry-After", "0")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        super().do_POST()


class FlakyOpenAI(FakeOpenAI):
    def __init__(self, failures: int, status: int) -> None:
        super().__init__()
        self.RequestHandlerClass = FlakyHandler
        self.failures, self.status, self.posts = failures, status, 0


@pytest.fixture
def server():
    fake = FakeOpenAI(hang_s=30).start()
    yield fake
    fake.stop()


def settings_for(base: str, tmp_path, **overrides) -> Settings:
    return Settings(lm=f"openai/{MODEL}", api_base=base, cache_dir=str(tmp_path), threads=1, **overrides)


def ask(lm, question: str) -> str:
    with dspy.context(lm=lm, adapter=CompactJSONAdapter()):
        return dspy.Predict("question -> long_answer")(question=question).long_answer


def test_the_timeout_and_retries_of_the_settings_reach_a_remote_lm_only(server, tmp_path):
    lm = build_lm(settings_for(server.base, tmp_path, lm_timeout=2.5, lm_retries=1))
    assert lm.kwargs["timeout"] == 2.5 and lm.num_retries == 1
    default = build_lm(settings_for(server.base, tmp_path))
    assert default.kwargs["timeout"] == 600.0 and default.num_retries == 3
    local = build_lm(Settings(lm="local:smollm2", cache_dir=str(tmp_path), threads=1, lm_timeout=2.5))
    assert local.num_retries == 0 and "timeout" not in local.kwargs  # the in-process engine neither waits nor retries


@pytest.mark.parametrize(("status", "error"), [(503, "LMServerError"), (429, "LMRateLimitError")])
def test_a_busy_server_is_asked_again(tmp_path, status, error):
    flaky = FlakyOpenAI(failures=2, status=status).start()
    try:
        lm = build_lm(settings_for(flaky.base, tmp_path, lm_retries=2))
        assert ask(lm, "Who won?") == scripted_answer("Who won?") and flaky.posts == 3
        flaky.posts = 0
        with pytest.raises(Exception, match="busy") as failed:
            ask(build_lm(settings_for(flaky.base, tmp_path, lm_retries=0)), "Who lost?")
        assert type(failed.value).__name__ == error and flaky.posts == 1  # the reason an eval row keeps
    finally:
        flaky.stop()


def test_a_hanging_request_times_out_after_its_retries(server, tmp_path):
    lm = build_lm(settings_for(server.base, tmp_path, lm_timeout=0.5, lm_retries=1))
    with pytest.raises(Exception, match="(?i)time"):
        ask(lm, "Who won? HANG")
    assert server.questions.count("Who won? HANG") == 2  # the first attempt and one retry


def test_a_rerun_asks_only_the_questions_that_failed_and_keeps_one_row_each(tmp_path):
    from test_evaluation_harness import CONFIG, Scripted, exact, examples

    from disambig.evaluation.session import run_eval

    first = run_eval(CONFIG, Scripted(fail_on=("question 1?", "question 3?")), examples(), {"exact": exact}, tmp_path,
                     track=False)
    assert first.report["failures"] == 2
    again = Scripted()
    second = run_eval(CONFIG, again, examples(), {"exact": exact}, tmp_path, track=False)
    assert again.asked == ["question 1?", "question 3?"]
    assert second.report["failures"] == 0 and second.report["metrics"]["exact"] == 1.0
    ids = [json.loads(line)["id"] for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert sorted(ids) == [f"q{i}" for i in range(5)]  # no question twice


def test_dollars_of_a_priced_model_reach_the_trace_the_report_and_mlflow(server, tmp_path, monkeypatch):
    import mlflow

    from disambig.evaluation.session import EvalConfig, run_eval
    from disambig.programs import build_program

    monkeypatch.delenv(LOCAL_COST_MAP_ENV, raising=False)
    lm = make_lm("openai/gpt-4o-mini", api_base=server.base, api_key="sk-test", num_retries=0)
    assert os.environ[LOCAL_COST_MAP_ENV] == "True"  # prices come from the bundled map, not the network
    questions = [dspy.Example(id=f"q{i}", question=f"Who won prize {i}?").with_inputs("question") for i in range(2)]
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with dspy.context(lm=lm, adapter=CompactJSONAdapter()):
        outcome = run_eval(EvalConfig(program="closed-book", dataset="toy", lm="openai/gpt-4o-mini"),
                           build_program("closed-book"), questions, {}, tmp_path / "run", tracking_uri=uri)
    # each call: the server's usage says 10 prompt tokens ($0.15/M) and one completion token a word of its reply
    # ($0.60/M): '{"long_answer":', '"Scripted', 'answer', 'to', 'Who', 'won', 'prize', 'N?"}' -> 8
    expected = 10 * 0.15e-6 + 8 * 0.60e-6
    for row in outcome.results:
        assert row.trace["priced_calls"] == 1 and row.trace["cost_usd"] == pytest.approx(expected)
    efficiency = outcome.report["efficiency"]
    assert efficiency["cost_usd"] == pytest.approx(2 * expected) and efficiency["priced_call_share"] == 1.0
    mlflow.set_tracking_uri(uri)
    assert mlflow.get_run(outcome.mlflow_run_id).data.metrics["cost_usd_per_q"] == pytest.approx(expected)
    assert lm.history[-1]["cost_details"]["metadata"]["source"] == "local"


def test_a_model_without_a_price_has_no_dollars(server, tmp_path):
    from disambig.evaluation.report import efficiency
    from disambig.lm.usage import measured

    lm = make_lm(f"openai/{MODEL}", api_base=server.base, api_key="sk-test", num_retries=0)
    with measured() as trace:
        ask(lm, "Who won?")
    assert trace.lm_calls == 1 and trace.cost_usd is None and trace.priced_calls == 0
    assert "cost_usd" not in efficiency([{"lm_calls": 1, "cost_usd": None}])


def priced_lm(settings=None):
    """A ``DISAMBIG_LM_FACTORY`` target: gpt-4o-mini (a priced model) at the scripted server ``FAKE_OPENAI_BASE``."""
    return make_lm("openai/gpt-4o-mini", api_base=os.environ["FAKE_OPENAI_BASE"], api_key="sk-test", num_retries=0)


def test_batch_rows_carry_their_dollars(server, tmp_path, monkeypatch):
    import pandas as pd
    from typer.testing import CliRunner

    from disambig.cli import app
    from disambig.optimizers.artifact import save_artifact
    from disambig.programs import build_program

    monkeypatch.setenv("DISAMBIG_LM_FACTORY", f"{__file__}:priced_lm")
    monkeypatch.setenv("FAKE_OPENAI_BASE", server.base)
    monkeypatch.setenv("DISAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    state = save_artifact(build_program("closed-book"), tmp_path / "art" / "plain.json",
                          {"program": "closed-book", "optimizer": "none"})
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps({"id": f"q{i}", "question": f"Who won prize {i}?"}) + "\n" for i in range(3)))
    result = CliRunner().invoke(app, ["batch", str(state), "-i", str(source), "-o", str(tmp_path / "out.jsonl"),
                                      "--lm", "openai/gpt-4o-mini", "--threads", "3",
                                      "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"])
    assert result.exit_code == 0, result.output
    out = pd.read_json(tmp_path / "out.jsonl", lines=True)
    assert [t["cost_usd"] for t in out["trace"]] == pytest.approx([10 * 0.15e-6 + 8 * 0.60e-6] * 3)
    assert sorted(server.questions) == [f"Who won prize {i}?" for i in range(3)]


def test_ask_prints_the_dollars_and_says_when_some_calls_had_no_price():
    from disambig.cli.ask_cmd import cost_note

    assert cost_note({"lm_calls": 2, "cost_usd": None, "priced_calls": 0}) == ""
    assert cost_note({"lm_calls": 2, "cost_usd": 1.2e-5, "priced_calls": 2}) == " · $0.000012"
    assert cost_note({"lm_calls": 2, "cost_usd": 1.2e-5, "priced_calls": 1}) == " · $0.000012 (1 of 2 calls priced)"
