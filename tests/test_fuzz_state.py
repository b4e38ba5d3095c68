"""Fuzzed compiled artifacts: a state or manifest cut at any byte, replaced by any JSON value or by bytes that are
not UTF-8, a manifest entry with any field removed or of any type (another program's name, knobs, fingerprint,
retriever), a state from another dependency version. ``ask --artifact``, ``eval --artifact`` and ``batch`` each end in
one clear error (exit code 2, no traceback) or run as the intact artifact would; the artifact's files and the
questions are never changed."""

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
from disambig.programs import PROGRAMS

STATE = Path("art/closed-book/q/plain.json")
MANIFEST = STATE.with_name("manifest.json")
SCALAR = st.none() | st.booleans() | st.integers() | st.floats() | st.text(st.characters(**TEXT), max_size=20)
JSON = st.recursive(SCALAR, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                       max_size=3), max_leaves=6)
FIELD = st.sampled_from(["program", "knobs", "optimizer", "fingerprint", "retriever", "state_file", "structure",
                         "dataset", "metric"])
RETRIEVER = st.one_of(JSON.filter(lambda v: not isinstance(v, str)), st.text(max_size=10).map(lambda s: f"x{s}:y"))


def cut(path: Path, at: float) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * at)])


def edit_entry(change) -> callable:
    def apply(folder: Path) -> None:
        entries = json.loads((folder / MANIFEST).read_text())
        change(entries)
        (folder / MANIFEST).write_text(json.dumps(entries), encoding="utf-8")

    return apply


def set_field(field: str, value) -> callable:
    return edit_entry(lambda e: e["plain"].update({field: value}))


def without(field: str) -> callable:
    return edit_entry(lambda e: e["plain"].pop(field, None))


def versions(value) -> callable:
    def apply(folder: Path) -> None:
        state = json.loads((folder / STATE).read_text())
        state.setdefault("metadata", {})["dependency_versions"] = value
        (folder / STATE).write_text(json.dumps(state), encoding="utf-8")

    return apply


MUTATION = st.one_of(
    st.floats(0, 0.999).map(lambda at: lambda folder: cut(folder / STATE, at)),
    st.floats(0, 0.999).map(lambda at: lambda folder: cut(folder / MANIFEST, at)),
    JSON.map(lambda v: lambda folder: (folder / STATE).write_text(json.dumps(v), encoding="utf-8")),
    st.binary(min_size=1, max_size=30).map(lambda b: lambda folder: (folder / STATE).write_bytes(b"\xff" + b)),
    JSON.map(lambda v: edit_entry(lambda e: e.update({"plain": v}))),
    st.tuples(FIELD.filter(lambda f: f != "retriever"), JSON).map(lambda fv: set_field(*fv)),
    RETRIEVER.map(lambda v: set_field("retriever", v)),
    st.sampled_from(sorted(PROGRAMS)).map(lambda name: set_field("program", name)),  # another program's state
    FIELD.map(without),
    st.dictionaries(st.text(max_size=8), JSON, max_size=3).map(lambda k: set_field("knobs", k)),
    JSON.map(versions),
)


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    from disambig.optimizers.artifact import save_artifact
    from disambig.programs import build_program

    folder = tmp_path_factory.mktemp("template")
    save_artifact(build_program("closed-book"), folder / STATE, {"program": "closed-book", "optimizer": "none",
                                                                 "retriever": "", "knobs": {}})
    (folder / "q.jsonl").write_bytes((Path(__file__).parent / "fixtures" / "asqa-mini.jsonl").read_bytes())
    (folder / "in.jsonl").write_text('{"id": "a", "question": "Who won?"}\n', encoding="utf-8")
    return folder


def check(template: Path, mutate, args: list[str], allowed: tuple[str, ...]) -> None:
    with working_folder() as folder:
        shutil.copytree(template, folder, dirs_exist_ok=True)
        mutate(folder)
        before = snapshot(folder)
        result = CliRunner().invoke(app, args)
        assert result.exit_code in (0, 2), (result.exit_code, result.output[-2000:], result.exception)
        assert "Traceback" not in result.output, result.output[-2000:]
        if result.exit_code == 2:
            assert "error:" in result.output, result.output[-2000:]
        assert changed(before, snapshot(folder), allowed=allowed) == []


@FUZZ
@given(mutate=MUTATION, command=st.sampled_from(["ask", "eval"]))
def test_ask_and_eval_of_a_damaged_artifact_are_one_clear_error(template, monkeypatch, mutate, command):
    use_in_cli(monkeypatch, DummyLM([{"long_answer": "Herman Melville."}] * 50, adapter=CompactJSONAdapter()))
    args = {"ask": ["ask", "Who wrote the novel about the white whale?", "--program", "closed-book"],
            "eval": ["eval", "closed-book", "--dataset", "q.jsonl", "--no-track", "--out", "run"]}[command]
    check(template, mutate, [*args, "--artifact", str(STATE)], allowed=("run/",))


@FUZZ
@given(mutate=MUTATION)
def test_batch_of_a_damaged_artifact_is_one_clear_error(template, monkeypatch, mutate):
    monkeypatch.setenv("DISAMBIG_LM_FACTORY", FACTORY)
    check(template, mutate, ["batch", str(STATE), "-i", "in.jsonl", "-o", "out.jsonl"],
          allowed=("out.jsonl", ".out.jsonl.", "cache/"))
