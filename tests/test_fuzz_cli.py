"""Fuzzed command lines: bad --limit/--threads/--train/--val values, unknown programs, metrics and optimizers, paths
that are missing, folders or of the wrong kind, for ``eval``, ``compile``, ``batch`` and ``ask``. Each ends in one
clear error (exit code 2, no traceback) and leaves every file in the working folder as it was: the question file,
a compiled artifact, and an earlier run folder that a refused command must not touch."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from dspy.utils import DummyLM
from fuzz_support import FUZZ, TEXT, changed, one_clear_error, snapshot, working_folder
from hypothesis import given
from hypothesis import strategies as st
from program_fakes import use_in_cli
from typer.testing import CliRunner

from disambig.cli import app
from disambig.lm.adapter import CompactJSONAdapter
from disambig.metrics import metric_names
from disambig.programs import PROGRAMS

STATE = "art/closed-book/q/plain.json"
ASK = ["ask", "Who wrote the novel about the white whale?"]


def positive_int(text: str) -> bool:
    try:
        return int(text) > 0
    except ValueError:
        return False


def known(names: list[str]):
    return lambda text: text.strip() and text.strip() not in names and text.strip().lower() not in names


def word(max_size: int = 24):
    return st.text(st.characters(**TEXT), min_size=1, max_size=max_size).filter(lambda s: not s.startswith("-"))


BAD_COUNT = st.one_of(st.integers(max_value=0).map(str), st.text(st.characters(**TEXT), max_size=12)).filter(
    lambda s: not positive_int(s))
PROGRAM = word().filter(known([*PROGRAMS, "route"]))
METRIC = word().filter(lambda s: "@" not in s).filter(known(metric_names()))
OPTIMIZER = word().filter(known(["labeled-fewshot", "knn-fewshot", "bootstrap", "bootstrap-rs", "mipro", "gepa",
                                 "simba", "none"]))
MISSING = word().map(lambda s: f"missing/{s.replace('/', '_')}.jsonl")
BAD_PATH = st.one_of(MISSING, st.sampled_from([".", "art", "art/closed-book/q/manifest.json", "prev/params.json"]))
BAD_TABLE = word(12).map(lambda s: f"out-{s.replace('/', '_')}.txt")

EVAL = ["eval", "closed-book", "--dataset", "q.jsonl", "--no-track"]
COMPILE = ["compile", "closed-book", "--dataset", "q.jsonl", "--metric", "rouge-l", "--optimizer", "labeled-fewshot",
           "--no-track", "--out", "art"]
BATCH = ["batch", STATE, "-i", "in.jsonl"]
COMMANDS = {
    "eval": st.one_of(
        BAD_COUNT.map(lambda v: [*EVAL, "--limit", v]),
        BAD_COUNT.map(lambda v: [*EVAL, "--threads", v]),
        METRIC.map(lambda v: [*EVAL, "--metric", v]),
        PROGRAM.map(lambda v: ["eval", v, "--dataset", "q.jsonl", "--no-track"]),
        BAD_PATH.map(lambda v: ["eval", "closed-book", "--dataset", v, "--no-track"]),
        st.just([*EVAL, "--out", "prev"]),  # a folder holding another run: refused, untouched
    ),
    "compile": st.one_of(
        BAD_COUNT.map(lambda v: [*COMPILE, "--train", v]),
        BAD_COUNT.map(lambda v: [*COMPILE, "--val", v]),
        OPTIMIZER.map(lambda v: [*COMPILE, "--optimizer", v]),
        METRIC.map(lambda v: [*COMPILE, "--metric", v]),
        PROGRAM.map(lambda v: ["compile", v, "--dataset", "q.jsonl", "--no-track", "--out", "art"]),
    ),
    "batch": st.one_of(
        BAD_TABLE.map(lambda v: [*BATCH, "-o", v]),
        BAD_PATH.map(lambda v: ["batch", v, "-i", "in.jsonl", "-o", "out.jsonl"]),
        BAD_PATH.map(lambda v: ["batch", STATE, "-i", v, "-o", "out.jsonl"]),
        BAD_COUNT.map(lambda v: [*BATCH, "-o", "out.jsonl", "--threads", v]),
    ),
    "ask": st.one_of(
        PROGRAM.map(lambda v: [*ASK, "--program", v]),
        BAD_PATH.map(lambda v: [*ASK, "--program", "closed-book", "--artifact", v]),
        BAD_COUNT.map(lambda v: [*ASK, "--threads", v]),
    ),
}


@pytest.fixture(scope="module")
def template(tmp_path_factory, asqa_file_module) -> Path:
    """The working folder every case starts from: questions, a compiled closed-book, an earlier run."""
    from disambig.optimizers.artifact import save_artifact
    from disambig.programs import build_program

    folder = tmp_path_factory.mktemp("template")
    shutil.copy(asqa_file_module, folder / "q.jsonl")
    (folder / "in.jsonl").write_text('{"id": "a", "question": "Who won?"}\n', encoding="utf-8")
    save_artifact(build_program("closed-book"), folder / STATE, {"program": "closed-book", "optimizer": "none"})
    (folder / "prev").mkdir()
    (folder / "prev" / "params.json").write_text('{"program": "vanilla-rag", "dataset": "asqa"}\n', encoding="utf-8")
    (folder / "prev" / "results.jsonl").write_text('{"id": "x"}\n', encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def asqa_file_module() -> str:
    return str(Path(__file__).resolve().parent / "fixtures" / "asqa-mini.jsonl")


def check_refused(template: Path, monkeypatch, args: list[str]) -> None:
    use_in_cli(monkeypatch, DummyLM([{"long_answer": "Herman Melville."}] * 50, adapter=CompactJSONAdapter()))
    with working_folder() as folder:
        shutil.copytree(template, folder, dirs_exist_ok=True)
        before = snapshot(folder)
        result = CliRunner().invoke(app, args)
        one_clear_error(result)
        assert changed(before, snapshot(folder)) == []


@FUZZ
@given(args=COMMANDS["eval"])
def test_a_bad_eval_command_line_is_one_clear_error_and_changes_no_file(template, monkeypatch, args):
    check_refused(template, monkeypatch, args)


@FUZZ
@given(args=COMMANDS["compile"])
def test_a_bad_compile_command_line_is_one_clear_error_and_changes_no_file(template, monkeypatch, args):
    check_refused(template, monkeypatch, args)


@FUZZ
@given(args=COMMANDS["batch"])
def test_a_bad_batch_command_line_is_one_clear_error_and_changes_no_file(template, monkeypatch, args):
    check_refused(template, monkeypatch, args)


@FUZZ
@given(args=COMMANDS["ask"])
def test_a_bad_ask_command_line_is_one_clear_error_and_changes_no_file(template, monkeypatch, args):
    check_refused(template, monkeypatch, args)
