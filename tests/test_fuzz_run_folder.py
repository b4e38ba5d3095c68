"""Fuzzed run folders: an ``eval`` resumed over a params.json, results.jsonl or report.json cut at any byte, replaced by
any JSON value or by bytes that are not UTF-8 ends in one clear error (exit code 2, no traceback) or finishes the
run; nothing outside the run folder changes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from dspy.utils import DummyLM
from fuzz_support import FUZZ, TEXT, changed, snapshot, working_folder
from hypothesis import given
from hypothesis import strategies as st
from program_fakes import use_in_cli
from typer.testing import CliRunner

from disambig.cli import app
from disambig.lm.adapter import CompactJSONAdapter

ARGS = ["eval", "closed-book", "--dataset", "q.jsonl", "--no-track", "--out", "run"]
SCALAR = st.none() | st.booleans() | st.integers() | st.floats() | st.text(st.characters(**TEXT), max_size=20)
JSON = st.recursive(SCALAR, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                       max_size=3), max_leaves=6)
FILE = st.sampled_from(["params.json", "results.jsonl", "report.json"])
DAMAGE = st.one_of(
    st.floats(0, 0.999).map(lambda at: lambda data: data[: int(len(data) * at)]),
    JSON.map(lambda v: lambda data: json.dumps(v).encode()),
    st.binary(min_size=1, max_size=30).map(lambda b: lambda data: b"\xff" + b),
    st.binary(min_size=1, max_size=30).map(lambda b: lambda data: data + b),
)


def lm() -> DummyLM:
    return DummyLM([{"long_answer": "Herman Melville."}] * 50, adapter=CompactJSONAdapter())


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A finished three-question run of closed-book on the mini ASQA file."""
    folder = tmp_path_factory.mktemp("template")
    (folder / "q.jsonl").write_bytes((Path(__file__).parent / "fixtures" / "asqa-mini.jsonl").read_bytes())
    with pytest.MonkeyPatch.context() as patch, working_folder() as work:
        use_in_cli(patch, lm())
        shutil.copy(folder / "q.jsonl", work / "q.jsonl")
        result = CliRunner().invoke(app, [*ARGS[:-2], "--limit", "3", "--out", str(folder / "run")])
        assert result.exit_code == 0, result.output
    return folder


@FUZZ
@given(name=FILE, damage=DAMAGE)
def test_resuming_a_damaged_run_folder_is_one_clear_error_or_a_finished_run(template, monkeypatch, name, damage):
    use_in_cli(monkeypatch, lm())
    with working_folder() as folder:
        shutil.copytree(template, folder, dirs_exist_ok=True)
        target = folder / "run" / name
        target.write_bytes(damage(target.read_bytes()))
        before = snapshot(folder)
        result = CliRunner().invoke(app, [*ARGS[:-2], "--limit", "3", "--out", "run"])
        assert result.exit_code in (0, 2), (result.exit_code, result.output[-2000:], result.exception)
        assert "Traceback" not in result.output, result.output[-2000:]
        if result.exit_code == 2:
            assert "error:" in result.output and "'run" in result.output, result.output[-2000:]  # names the folder
        else:
            assert json.loads((folder / "run" / "report.json").read_text())["questions"] == 3
        assert changed(before, snapshot(folder), allowed=("run/",)) == []
