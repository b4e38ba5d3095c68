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


RAC_RULES = {  # vanilla-rag's two steps: the reading of passage 1, then the long answer
    "Using only the numbered passages": lambda _: {"disambiguations": [
        {"question": "Men?", "answer": "Ronaldo", "passage": 1}]},
    "Write a long-form answer of at least three sentences": lambda _: {"long_answer": "Ronaldo leads the men."},
}


@pytest.fixture
def rag_state(tmp_path) -> str:
    """A vanilla-rag compiled against dense search of compiled.jsonl (its manifest's retriever)."""
    from program_fakes import FakeRetriever

    program = build_program("vanilla-rag", retriever=FakeRetriever(), k=1, first_stage=0)
    manifest = {"program": "vanilla-rag", "optimizer": "none", "retriever": "dense:compiled.jsonl",
                "knobs": {"k": 1, "first_stage": 0}}
    return str(save_artifact(program, tmp_path / "art" / "rag.json", manifest))


@pytest.fixture
def searched(monkeypatch) -> list[tuple[str, str]]:
    """Each retriever built, as (kind, corpus); each searches one page named after its corpus."""
    from program_fakes import FakeRetriever, scripted_lm, use_in_cli

    from disambig.retrieval.passage import Passage

    built: list[tuple[str, str]] = []

    def build_retriever(kind, corpus="wiki-slice", settings=None, **kwargs):
        built.append((kind, corpus))
        return FakeRetriever([Passage("p1", f"Page of {corpus}", "Ronaldo has the most goals.")])

    use_in_cli(monkeypatch, scripted_lm(RAC_RULES)[0])
    monkeypatch.setattr("disambig.retrieval.build_retriever", build_retriever)
    return built


@pytest.mark.parametrize(("options", "expected"), [
    ([], ("dense", "compiled.jsonl")),  # the manifest's retriever
    (["--corpus", "mine.jsonl"], ("dense", "mine.jsonl")),  # was ignored: compiled.jsonl was searched
    (["--retriever", "bm25"], ("bm25", "compiled.jsonl")),  # was bm25 over wiki-slice
    (["--retriever", "bm25", "--corpus", "mine.jsonl"], ("bm25", "mine.jsonl")),
])
def test_ask_with_an_artifact_searches_the_corpus_given_with_the_manifests_retriever(searched, rag_state, options,
                                                                                    expected):
    result = runner.invoke(app, ["ask", "Who scored most?", "--artifact", rag_state, *options])
    assert result.exit_code == 0, result.output
    assert searched == [expected]
    assert f"Page of {expected[1]}" in result.output  # the cited passage comes from the corpus searched
