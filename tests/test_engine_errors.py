"""Clear errors at the engine's edges: an over-long prompt and a corrupted compiled state each end in one line
naming the limit or the file and the fix; inside an evaluation the over-long prompt is a recorded failure."""

from __future__ import annotations

import json

import dspy
import pytest
from dspy.utils.exceptions import ContextWindowExceededError
from typer.testing import CliRunner

from disambig.cli import app
from disambig.errors import PromptTooLongError
from disambig.lm.adapter import CompactJSONAdapter
from disambig.lm.llama_engine import LlamaEngine

runner = CliRunner()
TOO_LONG = "prompt of 20,174 tokens exceeds the 8,192-token context window of tiny.gguf; set DISAMBIG_CTX up to 32,768"


class OverflowingLlama:
    """Raises what llama-cpp-python raises when the prompt does not fit ``n_ctx``."""

    def __init__(self, message: str = "Requested tokens (20174) exceed context window of 8192") -> None:
        self.message = message

    def create_chat_completion(self, **kwargs):
        raise ValueError(self.message)



@pytest.fixture(autouse=True)
def _fake_llama_internals(monkeypatch):
    monkeypatch.setattr("disambig.lm.llama_engine.trained_context", lambda llama: 32768)
    monkeypatch.setattr("disambig.lm.llama_engine.reset_counters", lambda llama: None)


def overflowing_lm(message: str | None = None) -> dspy.LM:
    engine = LlamaEngine("/models/tiny.gguf")
    engine._llama = OverflowingLlama(*([message] if message else []))
    return dspy.LM("local/tiny", engine=engine, cache=False, num_retries=0)


class Answer(dspy.Signature):
    """Answer the question."""

    question: str = dspy.InputField()
    answer: str = dspy.OutputField()


def test_overflow_is_the_projects_error_and_dspys_context_window_error():
    with pytest.raises(PromptTooLongError, match=TOO_LONG) as caught:
        overflowing_lm()("hello")
    assert isinstance(caught.value, ContextWindowExceededError)  # DSPy modules that shorten history still see it
    assert "\n" not in str(caught.value)


def test_overflow_passes_through_a_predictor_unchanged():
    with dspy.context(lm=overflowing_lm(), adapter=CompactJSONAdapter()), pytest.raises(PromptTooLongError):
        dspy.Predict(Answer)(question="q")


def test_other_llama_errors_are_not_disguised():
    with pytest.raises(Exception, match="something else") as caught:
        overflowing_lm("something else")("hello")
    assert not isinstance(caught.value, PromptTooLongError)


def test_overflow_inside_an_evaluation_is_a_recorded_failure():
    from disambig.evaluation.runner import answer_one

    example = dspy.Example(id="q1", question="q").with_inputs("question")
    with dspy.context(lm=overflowing_lm(), adapter=CompactJSONAdapter()):
        result = answer_one(dspy.Predict(Answer), example, {"em": lambda ex, pred: 1.0})
    assert result.failed  # recorded, the run goes on
    assert result.error.startswith("ContextWindowError: " + TOO_LONG)


def test_ask_with_an_overlong_prompt_prints_one_line(monkeypatch):
    monkeypatch.setattr("disambig.lm.runtime.build_lm", lambda settings, spec=None, **kw: overflowing_lm())
    result = runner.invoke(app, ["ask", "a very long question", "--program", "closed-book"])
    assert result.exit_code == 2
    assert result.output.strip() == f"error: {TOO_LONG} (this model's trained limit) or shorten the question, " \
                                    "the passages or the demos"


@pytest.fixture
def broken_artifact(tmp_path):
    """A closed-book artifact saved the normal way, then its state file cut off mid-way."""
    from disambig.optimizers.artifact import save_artifact
    from disambig.programs import build_program

    state = save_artifact(build_program("closed-book"), tmp_path / "broken.json",
                          {"program": "closed-book", "dataset": "asqa", "metric": "dr", "optimizer": "bootstrap"})
    state.write_text("{\n", encoding="utf-8")
    return state


def test_ask_with_a_corrupted_state_names_the_file_and_the_fix(broken_artifact):
    result = runner.invoke(app, ["ask", "q?", "--artifact", str(broken_artifact)])
    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert line == (f"error: compiled state {str(broken_artifact)!r} is not valid JSON (Expecting property name "
                    "enclosed in double quotes at line 2 column 1); restore it from version control or recompile it "
                    "with `disambig compile closed-book --dataset asqa --metric dr --optimizer bootstrap`")


def test_a_corrupted_manifest_names_the_file(broken_artifact):
    manifest = broken_artifact.parent / "manifest.json"
    manifest.write_bytes(b"\xff\xfe not json")
    result = runner.invoke(app, ["ask", "q?", "--artifact", str(broken_artifact)])
    assert result.exit_code == 2 and f"artifact manifest {str(manifest)!r} is not UTF-8 text" in result.output
    manifest.write_text(json.dumps([1, 2]), encoding="utf-8")
    result = runner.invoke(app, ["ask", "q?", "--artifact", str(broken_artifact)])
    assert "is not a JSON object" in result.output


@pytest.mark.parametrize(("entry", "said"), [
    (None, "entry 'broken' is NoneType, not a JSON object"),
    ({"program": "closed-book", "knobs": [1]}, "entry 'broken': knobs is list, not dict"),
    ({"program": 7}, "entry 'broken': program is int, not str"),
])
def test_a_manifest_entry_of_the_wrong_shape_is_one_line(broken_artifact, entry, said):
    (broken_artifact.parent / "manifest.json").write_text(json.dumps({"broken": entry}), encoding="utf-8")
    result = runner.invoke(app, ["ask", "q?", "--artifact", str(broken_artifact)])
    assert result.exit_code == 2 and said in result.output and len(result.output.strip().splitlines()) == 1


def test_a_state_that_does_not_fit_its_program_is_one_line(broken_artifact):
    broken_artifact.write_text(json.dumps({"answer": {"demos": []}, "metadata": {"dependency_versions": None}}),
                               encoding="utf-8")
    result = runner.invoke(app, ["ask", "q?", "--artifact", str(broken_artifact)])
    assert result.exit_code == 2 and "does not fit program 'closed-book' (AttributeError" in result.output
    assert "Traceback" not in result.output
