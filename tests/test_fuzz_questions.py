"""Fuzzed question files: bytes that are not UTF-8, lines that are not JSON objects, rows with fields missing or of
the wrong type, huge questions, all mixed with good rows. ``eval`` on an ASQA-format file and ``batch`` on JSONL and
CSV each end in one clear error (exit code 2, no traceback) or answer the file with a per-row error; the question
file is never changed, and nothing is written but the run's own output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from batch_fakes import FACTORY
from dspy.utils import DummyLM
from fuzz_support import FUZZ, TEXT, changed, snapshot, working_folder
from hypothesis import given
from hypothesis import strategies as st
from program_fakes import use_in_cli
from typer.testing import CliRunner

from disambig.cli import app
from disambig.lm.adapter import CompactJSONAdapter

STATE = "art/closed-book/plain.json"
HUGE = "Who won " + "the prize " * 200_000 + "?"  # 2 MB of question

SCALAR = st.none() | st.booleans() | st.integers() | st.floats() | st.text(st.characters(**TEXT), max_size=20)
JSON = st.recursive(SCALAR, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                       max_size=3), max_leaves=6)


def good_row(i: int) -> dict:
    return {"id": f"q{i}", "question": f"Who won prize number {i}?",
            "qa_pairs": [{"question": f"Who won prize number {i}?", "short_answers": [f"winner {i}"]}],
            "annotations": [{"long_answer": f"The winner was winner {i}.", "knowledge": []}]}


@st.composite
def broken_row(draw) -> dict:
    """A good row with one field removed or replaced by any JSON value, possibly deep inside."""
    row = good_row(draw(st.integers(0, 99)))
    where = draw(st.sampled_from(["id", "question", "qa_pairs", "annotations", "qa_pairs.0", "qa_pairs.0.question",
                                  "qa_pairs.0.short_answers", "annotations.0", "annotations.0.long_answer",
                                  "annotations.0.knowledge"]))
    *path, last = where.split(".")
    holder = row
    for key in path:
        holder = holder[int(key) if key.isdigit() else key]
    key = int(last) if last.isdigit() else last
    if draw(st.booleans()) and isinstance(holder, dict):
        del holder[key]
    else:
        holder[key] = draw(JSON)
    return row


LINE = st.one_of(
    st.integers(0, 99).map(lambda i: json.dumps(good_row(i)).encode()),
    broken_row().map(lambda r: json.dumps(r).encode()),
    JSON.map(lambda v: json.dumps(v).encode()),  # a line that is JSON but maybe not an object
    st.binary(max_size=40),  # bytes that are rarely UTF-8, rarely JSON
    st.text(st.characters(**TEXT), max_size=40).map(str.encode),
    st.just(json.dumps(good_row(7) | {"question": HUGE}).encode()),
    st.sampled_from([b"\xef\xbb\xbf" + json.dumps(good_row(1)).encode(), b"", b"\r", b"{\"id\": \"x\", \"question\":"]),
)
FILE = st.lists(LINE, min_size=0, max_size=6).map(lambda lines: b"\n".join(line.replace(b"\n", b" ")
                                                                         for line in lines))


def outcome(result, output: str) -> None:
    """Exit 0 (the file answered, bad rows failing alone) or 2 (one clear error); never a traceback."""
    assert result.exit_code in (0, 2), (result.exit_code, result.output[-2000:], result.exception)
    assert "Traceback" not in result.output, result.output[-2000:]
    if result.exit_code == 2:
        assert "error:" in result.output or "Error" in result.output, result.output[-2000:]


@pytest.fixture(scope="module")
def state_template(tmp_path_factory) -> Path:
    from disambig.optimizers.artifact import save_artifact
    from disambig.programs import build_program

    folder = tmp_path_factory.mktemp("template")
    save_artifact(build_program("closed-book"), folder / STATE, {"program": "closed-book", "optimizer": "none"})
    return folder


@FUZZ
@given(content=FILE)
def test_eval_of_a_hostile_question_file_is_one_clear_error_or_per_row_errors(monkeypatch, content):
    use_in_cli(monkeypatch, DummyLM([{"long_answer": "Winner 1."}] * 50, adapter=CompactJSONAdapter()))
    with working_folder() as folder:
        (folder / "q.jsonl").write_bytes(content)
        before = snapshot(folder)
        result = CliRunner().invoke(app, ["eval", "closed-book", "--dataset", "q.jsonl", "--no-track", "--out", "run"])
        outcome(result, "run")
        assert changed(before, snapshot(folder), allowed=("run/",)) == []


@FUZZ
@given(content=FILE, suffix=st.sampled_from([".jsonl", ".csv"]))
def test_batch_of_a_hostile_question_file_is_one_clear_error_or_per_row_errors(state_template, monkeypatch, content,
                                                                               suffix):
    monkeypatch.setenv("DISAMBIG_LM_FACTORY", FACTORY)
    with working_folder() as folder:
        shutil.copytree(state_template, folder, dirs_exist_ok=True)
        monkeypatch.setenv("DISAMBIG_CACHE_DIR", str(folder / "cache"))
        (folder / f"in{suffix}").write_bytes(content)
        before = snapshot(folder)
        result = CliRunner().invoke(app, ["batch", STATE, "-i", f"in{suffix}", "-o", "out.jsonl"])
        outcome(result, "out.jsonl")
        assert changed(before, snapshot(folder), allowed=("out.jsonl", ".out.jsonl.", "cache/")) == []
