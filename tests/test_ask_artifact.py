"""``ask --artifact``: the compiled program runs as itself; a ``--program`` naming another is refused in one line,
by the same check ``eval`` uses (scripted LM, a closed-book state saved in the test's folder)."""

from __future__ import annotations

import pytest
from dspy.utils import DummyLM
from typer.testing import CliRunner

from disambig.cli import app
from disambig.lm.adapter import CompactJSONAdapter
from disambig.optimizers.artifact import save_artifact
from disambig.programs import build_program

runner = CliRunner()


@pytest.fixture
def scripted_lm(monkeypatch):
    lm = DummyLM([{"long_answer": "Compiled says 42."}] * 4, adapter=CompactJSONAdapter())
    monkeypatch.setattr("disambig.lm.runtime.build_lm", lambda settings, spec=None, **kw: lm)


@pytest.fixture
def closed_book_state(tmp_path) -> str:
    manifest = {"program": "closed-book", "optimizer": "none"}
    return str(save_artifact(build_program("closed-book"), tmp_path / "art" / "plain.json", manifest))


@pytest.mark.parametrize("program", [[], ["--program", "closed-book"]])
def test_ask_runs_the_artifacts_own_program(scripted_lm, closed_book_state, program):
    result = runner.invoke(app, ["ask", "What is the answer?", "--artifact", closed_book_state, *program])
    assert result.exit_code == 0, result.output
    assert "Compiled says 42." in result.output


@pytest.mark.parametrize("command", [["ask", "What is the answer?", "--program", "diva"],
                                     ["eval", "diva", "--no-track"]])
def test_another_program_than_the_artifacts_is_refused_in_one_line(scripted_lm, closed_book_state, asqa_file,
                                                                    command):
    args = [*command, "--artifact", closed_book_state] + (["--dataset", asqa_file] if command[0] == "eval" else [])
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "is a compiled 'closed-book', not 'diva'; name 'closed-book' as the program" in result.output
    assert "Compiled says" not in result.output and "Traceback" not in result.output
