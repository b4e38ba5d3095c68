"""Independent LM calls run at once (``disambig.lm.parallel``): the ordered map itself, and every program that uses it
(VerDICt, DIVA, AMD, GenQR, DFA, map-count) giving the same predictions and traces with 1 and 4 calls at once, with
the calls measured to overlap; questions at once in ``run_eval``; the setting, its variable and its limits."""

from __future__ import annotations

import json
import threading
import time
import zlib

import dspy
import pytest
from program_fakes import FakeEmbedder, FakeRetriever, ScriptedEngine

from disambig.lm.adapter import CompactJSONAdapter
from disambig.lm.batch_decode import MAX_SEQUENCES
from disambig.lm.parallel import PARALLEL_CALLS_ENV, PARALLEL_SETTING, call_workers, ordered_map
from disambig.lm.usage import measured
from disambig.programs import build_program


class OverlapEngine(ScriptedEngine):
    """A scripted engine whose every call takes 20-60 ms (by a hash of the prompt, so calls finish out of order) and
    that records the most calls it had in flight at once."""

    def __init__(self, rules: dict, delay: float = 0.02) -> None:
        super().__init__(rules)
        self.delay, self.in_flight, self.most = delay, 0, 0
        self._gate = threading.Lock()

    def complete(self, request):
        with self._gate:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
        try:
            text = request.messages[-1].text or ""
            time.sleep(self.delay * (1 + zlib.crc32(text.encode()) % 3))
            return super().complete(request)
        finally:
            with self._gate:
                self.in_flight -= 1


def overlap_lm(rules: dict) -> tuple[dspy.LM, OverlapEngine]:
    engine = OverlapEngine(rules)
    return dspy.LM("scripted/overlap", engine=engine, cache=False, num_retries=0), engine


def without_seconds(value):
    """``value`` with every ``seconds`` key dropped, at any depth (wall time is the one thing allowed to differ)."""
    if isinstance(value, dict):
        return {k: without_seconds(v) for k, v in value.items() if k != "seconds"}
    if isinstance(value, list):
        return [without_seconds(v) for v in value]
    return value


def plain(prediction) -> dict:
    return without_seconds({k: prediction[k] for k in prediction.keys()})


def run_both(rules_of, ask, adapter=None) -> tuple[dict, dict, OverlapEngine, OverlapEngine]:
    """``ask()`` with 1, then 4 calls at once, each on a fresh engine from ``rules_of()``; the two predictions as plain
    dicts and the two engines."""
    out = []
    for calls in (1, 4):
        lm, engine = overlap_lm(rules_of())
        with dspy.context(lm=lm, adapter=adapter or CompactJSONAdapter(), **{PARALLEL_SETTING: calls}):
            out.append((plain(ask()), engine))
    (serial, one), (parallel, four) = out
    return serial, parallel, one, four


def check_same_and_overlapping(serial: dict, parallel: dict, one: OverlapEngine, four: OverlapEngine) -> None:
    assert parallel == serial  # answers, notes, token counts: everything but the wall time
    assert sorted(one.usage) == sorted(four.usage) and len(one.calls) == len(four.calls)
    assert one.most == 1 and four.most > 1


# --- the ordered map -----------------------------------------------------------------------------------------------

def echo_rules() -> dict:
    return {"": lambda user: {"answer": user.rsplit("question: ", 1)[-1].strip().upper()}}


def ask_each(questions: list[str]) -> list[str]:
    return [p.answer for p in ordered_map(lambda q: dspy.Predict("question -> answer")(question=q), questions)]


def test_results_and_usage_come_in_input_order_however_the_calls_finish():
    questions = [f"q{i}" + " word" * i for i in range(8)]  # prompts of 8 lengths: their usage tells them apart
    lm, engine = overlap_lm(echo_rules())
    with dspy.context(lm=lm, adapter=CompactJSONAdapter(), **{PARALLEL_SETTING: 4}):
        with dspy.track_usage() as usage, measured() as trace:
            answers = ask_each(questions)
    assert answers == [q.upper() for q in questions]
    assert engine.most == 4
    tokens = {user.rsplit("question: ", 1)[-1].strip(): used for (_, user), used in zip(engine.calls, engine.usage,
                                                                                     strict=True)}
    merged = [(e["prompt_tokens"], e["completion_tokens"]) for e in usage.usage_data["scripted/overlap"]]
    assert merged == [tokens[q] for q in questions]  # the engine saw them in any order, merged in order
    assert trace.lm_calls == 8 and trace.input_tokens == sum(i for i, _ in merged)


def test_the_first_failure_in_input_order_is_raised_and_nothing_after_it_starts_serially():
    started: list[int] = []

    def work(i: int) -> int:
        started.append(i)
        if i in (2, 5):
            raise ValueError(f"item {i}")
        return i

    with pytest.raises(ValueError, match="item 2"):
        ordered_map(work, range(8), workers=1)
    assert started == [0, 1, 2]
    started.clear()
    with pytest.raises(ValueError, match="item 2"):
        ordered_map(work, range(8), workers=4)
    assert {0, 1, 2} <= set(started)


def test_dspy_context_reaches_the_workers():
    seen: list[str | None] = []
    with dspy.context(disambig_marker="set by the caller"):
        ordered_map(lambda _: seen.append(dspy.settings.get("disambig_marker")), range(4), workers=4)
    assert seen == ["set by the caller"] * 4


def test_how_many_calls_at_once(monkeypatch):
    from disambig.lm.llama_engine import LlamaEngine

    monkeypatch.delenv(PARALLEL_CALLS_ENV, raising=False)
    embedded = dspy.LM("local/model", engine=LlamaEngine("/nonexistent/model.gguf"), cache=False)
    remote = dspy.LM("openai/gpt-4o-mini", api_key="sk-test", cache=False)
    scripted, _ = overlap_lm({})
    with dspy.context(lm=remote):
        assert call_workers() == 8 and call_workers(3) == 3
        monkeypatch.setenv(PARALLEL_CALLS_ENV, "2")
        assert call_workers() == 2
        with dspy.context(**{PARALLEL_SETTING: 5}):
            assert call_workers() == 5 and call_workers(3) == 3
    with dspy.context(lm=embedded, **{PARALLEL_SETTING: 5}):
        assert call_workers(3) == 1  # the in-process engine runs one call at a time, whatever is asked
    monkeypatch.delenv(PARALLEL_CALLS_ENV)
    batching = dspy.LM("local/model", engine=LlamaEngine("/nonexistent/model.gguf", batch_calls=True), cache=False)
    with dspy.context(lm=batching):
        assert call_workers() == MAX_SEQUENCES and call_workers(3) == 3 and call_workers(50) == MAX_SEQUENCES
        with dspy.context(**{PARALLEL_SETTING: 5}):
            assert call_workers() == 5  # decoded together, up to MAX_SEQUENCES at once
    with dspy.context(lm=scripted):
        assert call_workers() == 1  # an engine of unknown thread safety is serial unless told
    monkeypatch.setenv(PARALLEL_CALLS_ENV, "many")
    with dspy.context(lm=remote), pytest.raises(ValueError, match="DISAMBIG_PARALLEL_CALLS='many'"):
        call_workers()


def test_the_setting_comes_from_the_variable_and_is_checked(monkeypatch):
    from disambig.settings import load_settings

    monkeypatch.setenv(PARALLEL_CALLS_ENV, "4")
    assert load_settings(threads=1).parallel_calls == 4
    monkeypatch.setenv(PARALLEL_CALLS_ENV, "-1")
    with pytest.raises(ValueError, match="parallel_calls=-1"):
        load_settings(threads=1)


# --- the programs --------------------------------------------------------------------------------------------------

def test_verdict_feedback_calls():
    from test_verdict import ListRetriever, feedback_rule

    def rules() -> dict:
        return {"Turn the question into a short, broad search query": lambda _: {"query": "football goals"},
                "ONE document, a passage from the search results": feedback_rule(),
                "Write a long-form answer of at least three sentences": lambda _: {"long_answer": "Men and women."}}

    program = build_program("verdict", retriever=ListRetriever(), embedder=FakeEmbedder())
    serial, parallel, one, four = run_both(rules, lambda: program(question="Who has the most goals in football?"))
    check_same_and_overlapping(serial, parallel, one, four)
    assert len(serial["interpretations"]) == 2 and serial["trace"]["lm_calls"] == 11


def test_diva_verifications():
    from test_programs_diva import MEN, QUESTION, WOMEN, rules

    program = build_program("diva", retriever=FakeRetriever(), embedder=FakeEmbedder(), k=2)
    serial, parallel, one, four = run_both(lambda: rules({MEN: "Yes", WOMEN: "No"}), lambda: program(question=QUESTION))
    check_same_and_overlapping(serial, parallel, one, four)
    assert serial["trace"]["notes"]["verdicts"] == [True, False]


def test_amd_answers_and_reflections():
    from test_amd import QUERY, amd_rules

    from disambig.programs.amd.program import AMD

    program = AMD()
    serial, parallel, one, four = run_both(lambda: amd_rules(keep=lambda user: "zebras" not in user),
                                           lambda: program(query=QUERY))
    check_same_and_overlapping(serial, parallel, one, four)
    assert serial["notes"]["kept"] == [True, False, True]


def test_genqr_phrasings():
    from disambig.programs.amd.expansion import GenQR

    program = GenQR(instructions=4)
    rules = {"": lambda user: {"keywords": ["stripes", user[-12:]]}}
    serial, parallel, one, four = run_both(lambda: rules, lambda: program(query="zebra stripes"))
    check_same_and_overlapping(serial, parallel, one, four)
    assert len(serial["texts"]) == 4


def test_dfa_judge_batches():
    from test_dfa import CHUNKS, dfa_rules, plan

    program = build_program("dfa", embedder=FakeEmbedder(), corpus=CHUNKS, batch_tokens=20, cluster_method="none")
    serial, parallel, one, four = run_both(lambda: dfa_rules([plan(["Ashley"])], ["complete"]),
                                           lambda: program(question="How many flights go to Ashley?"),
                                           adapter=dspy.JSONAdapter())
    check_same_and_overlapping(serial, parallel, one, four)
    assert serial["count"] == 3 and len(serial["trace"]["notes"]["batches"]) > 1


def test_map_count_chunk_calls():
    from test_dfa import CHUNKS, judge_rule

    program = build_program("map-count", corpus=CHUNKS)
    serial, parallel, one, four = run_both(lambda: {"List every entity of the given type": judge_rule("Ashley")},
                                           lambda: program(question="How many flights go to Ashley?"),
                                           adapter=dspy.JSONAdapter())
    check_same_and_overlapping(serial, parallel, one, four)
    assert serial["count"] == 3 and serial["trace"]["notes"]["lc_judge"] == len(CHUNKS)


# --- questions at once ---------------------------------------------------------------------------------------------

def test_run_eval_gives_the_same_rows_with_any_number_of_threads_and_calls(tmp_path):
    from test_verdict import ListRetriever, feedback_rule

    from disambig.evaluation.session import EvalConfig, run_eval

    examples = [dspy.Example(id=f"q{i}", question=f"Who has the most goals in football, take {i}?")
                .with_inputs("question") for i in range(4)]
    rules = {"Turn the question into a short, broad search query": lambda _: {"query": "football goals"},
             "ONE document, a passage from the search results": feedback_rule(),
             "Write a long-form answer of at least three sentences": lambda user: {"long_answer": user[-20:]}}
    runs = {}
    for threads, calls in ((1, 1), (4, 4)):
        lm, engine = overlap_lm(rules)
        program = build_program("verdict", retriever=ListRetriever(), embedder=FakeEmbedder(), k=4)
        with dspy.context(lm=lm, adapter=CompactJSONAdapter(), **{PARALLEL_SETTING: calls}):
            outcome = run_eval(EvalConfig(program="verdict", dataset="toy"), program, examples, {},
                               tmp_path / str(threads), threads=threads, track=False)
        runs[threads] = ([without_seconds({"id": r.id, "prediction": r.prediction, "trace": r.trace, "error": r.error})
                          for r in outcome.results], engine.most)
    assert runs[4][0] == runs[1][0]
    assert runs[1][1] == 1 and runs[4][1] > 4  # questions and their calls overlapped


def test_questions_at_once_are_one_on_the_in_process_model_and_threads_on_a_remote_lm():
    from disambig.cli.eval_cmd import eval_workers
    from disambig.lm.llama_engine import LlamaEngine
    from disambig.lm.parallel import question_workers
    from disambig.optimizers.batch import rows_at_once
    from disambig.settings import Settings

    local, remote = Settings(lm="local:smollm2", threads=4), Settings(lm="openai/gpt-4o-mini", threads=4)
    assert (eval_workers(local), eval_workers(remote)) == (1, 4)  # eval, and compile's scoring and optimizers
    assert (rows_at_once("local", local), rows_at_once("local", remote), rows_at_once("spark", local)) == (1, 4, 2000)
    embedded = dspy.LM("local/model", engine=LlamaEngine("/nonexistent/model.gguf"), cache=False)
    assert (question_workers(embedded, 4), question_workers(overlap_lm({})[0], 4)) == (1, 4)  # a served model


def test_the_command_lines_parallel_calls_reach_the_program(tmp_path, monkeypatch, asqa_file):
    from program_fakes import use_in_cli
    from test_programs_diva import MEN, WOMEN, rules
    from typer.testing import CliRunner

    from disambig.cli import app

    monkeypatch.setenv(PARALLEL_CALLS_ENV, "0")  # so the variable the option sets is undone after the test
    retriever = FakeRetriever()
    retriever.embedder = FakeEmbedder()  # DIVA's reranker takes its retriever's encoder
    calls = {}
    for n in ("1", "3"):
        lm, engine = overlap_lm(rules({MEN: "Yes", WOMEN: "No"}))
        use_in_cli(monkeypatch, lm, retriever)
        result = CliRunner().invoke(app, ["eval", "diva", "--dataset", asqa_file, "--limit", "2", "--metric",
                                          "rouge-l", "--no-track", "--parallel-calls", n, "--out", str(tmp_path / n)])
        assert result.exit_code == 0, result.output
        calls[n] = engine.most
    assert calls == {"1": 1, "3": 2}  # DIVA's two verifications at once
    one, three = ([without_seconds(json.loads(line)["prediction"]) for line in
                   (tmp_path / n / "results.jsonl").read_text().splitlines()] for n in ("1", "3"))
    assert sorted(map(json.dumps, one)) == sorted(map(json.dumps, three))
