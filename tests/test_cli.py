"""The command line through typer's runner; the LM is scripted."""

from __future__ import annotations

import pytest
from dspy.utils import DummyLM
from typer.testing import CliRunner

from disambig import __version__
from disambig.cli import app
from disambig.lm.adapter import CompactJSONAdapter

runner = CliRunner()


@pytest.fixture
def scripted_lm(monkeypatch):
    lm = DummyLM([{"long_answer": "42."}], adapter=CompactJSONAdapter())
    monkeypatch.setattr("disambig.lm.runtime.build_lm", lambda settings, spec=None, **kw: lm)


def test_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and __version__ in result.output


def test_ask_closed_book_prints_answer_and_cost(scripted_lm):
    result = runner.invoke(app, ["ask", "What is the answer?", "--program", "closed-book"])
    assert result.exit_code == 0, result.output
    assert "42." in result.output
    assert "LM calls 1" in result.output


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["ask", "   "], "question is empty"),
        (["ask", "q?", "--program", "nope"], "unknown program"),
        (["ask", "q?", "--lm", "gpt4"], "unknown LM spec"),
        (["ask", "q?", "--lm", "local:/no/such/model.gguf"], "does not exist"),
    ],
)
def test_bad_input_exits_nonzero_with_a_clear_error(args, match):
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert match in result.output


@pytest.mark.slow
def test_lm_check_on_embedded_model():
    # SmolLM2, not the default Qwen2.5-Coder-1.5B (~17 s more): the rows do not depend on the model, the default is
    # tests/test_lm_models.py's (`local` names it; it assembles, verifies and answers)
    result = runner.invoke(app, ["lm", "check", "--lm", "local:smollm2"])
    assert result.exit_code == 0, result.output
    assert "prefill tokens/s" in result.output and "decode tokens/s" in result.output


def test_lm_check_of_a_remote_lm_it_cannot_call_is_one_line(monkeypatch):
    """Found by fuzzing ``lm check --lm``: a remote LM without its key (or an unknown model, or no network) failed
    its first call with a traceback."""
    from dspy.clients.base_lm import BaseLM
    from dspy.utils.exceptions import LMNotConfiguredError

    def no_key(*args, **kwargs):
        raise LMNotConfiguredError("[openai/zzz] no API key found for provider 'openai-chat'.\n  - Set OPENAI_API_KEY")

    monkeypatch.setattr(BaseLM, "__call__", no_key)
    result = runner.invoke(app, ["lm", "check", "--lm", "openai/zzz"])
    assert (result.exit_code, result.output.strip()) == (2, "error: the LM 'openai/zzz' failed its first call: "
                                                            "[openai/zzz] no API key found for provider 'openai-chat'.")


@pytest.mark.parametrize(("args", "shown"), [
    (["data", "fetch", "--only", "spider", "--spider-db-repo", "a\rb"], "error: --spider-db-repo 'a\\rb' is not a hub "
     "repo id (Repo id must use alphanumeric chars, '-', '_' or '.'. The name cannot start or end with '-' or '.' and "
     "the maximum length is 96: 'a b'.); give OWNER/NAME, e.g. lklimkiewicz/Spider-Raw"),  # the hub's message
    (["compile", "route", "--candidates", "closed-book", "--option", "x\x1e.k=1", "--no-track"],
     "error: --option x .KEY=VALUE: 'x\\x1e' is not a candidate (closed-book)"),  # a value quoted as given
])
def test_an_error_quoting_a_line_break_is_still_one_line(monkeypatch, tmp_path, args, shown):
    """Found by fuzzing the command lines: a message quoting a value with a line break (\\r, \\x1e) as it was given
    was split over lines, or overwritten in a terminal; the error line now makes every run of whitespace one space."""
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and result.output.strip().splitlines() == [shown], result.output


@pytest.mark.parametrize(("trace", "shown"), [
    ({"cut_by_repetition": 1, "cut_by_length": 0}, " · replies cut: 1 looping, 0 at the token cap"),
    ({"cut_by_repetition": 0, "cut_by_length": 2}, " · replies cut: 0 looping, 2 at the token cap"),
    ({"cut_by_repetition": 0, "cut_by_length": 0}, ""),
    ({}, ""),  # a trace from before the counts existed
])
def test_ask_says_when_the_engine_cut_a_reply(trace, shown):
    from disambig.cli.ask_cmd import cut_note

    assert cut_note(trace) == shown
