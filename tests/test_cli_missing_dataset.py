"""A ``--dataset`` (or ``--corpus``) meant as a path that does not exist is refused in one line that says so, by every
command taking one, before any model or index is touched (issue 38: ``eval --dataset /no/such/file.jsonl`` said
"unknown dataset", never that the file is missing); a value that is a name still lists the names."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from disambig.cli import app
from disambig.data import load_dataset
from disambig.data.root import looks_like_path
from disambig.errors import ConfigurationError

MISSING = "/no/such/file.jsonl"


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if a command builds a retriever or locates the embedded model."""
    monkeypatch.setattr("disambig.retrieval.build_retriever", lambda *a, **kw: pytest.fail("a retriever was built"))
    monkeypatch.setattr("disambig.lm.spec.local_file", lambda *a: pytest.fail("the embedded model was located"))


@pytest.mark.parametrize(("args", "message"), [
    (["eval", "closed-book", "--dataset", MISSING, "--no-track"], f"no such file: {MISSING}; the dataset is asqa,"),
    (["compile", "closed-book", "--dataset", MISSING, "--no-track"], f"no such file: {MISSING}; the dataset is asqa,"),
    (["score", "predictions.jsonl", "--dataset", MISSING], f"no such file: {MISSING}; the dataset is asqa,"),
    (["ask", "How many?", "--program", "dfa", "--dataset", MISSING], f"no such file: {MISSING}; the dataset is asqa,"),
    (["data", "asqa-retrieval", "--dataset", MISSING, "--out", "out"], f"no such file: {MISSING}; the dataset is asqa"),
    (["eval-retrieval", "--dataset", "/no/such/folder"], "no such file: /no/such/folder; pass dbpedia-entity-5k or"),
    (["eval", "closed-book", "--dataset", "nope", "--no-track"], "unknown dataset 'nope'; use asqa, ambignq,"),
])
def test_a_missing_dataset_file_is_named_in_one_line(tmp_path, monkeypatch, no_work, args, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "predictions.jsonl").write_text('{"question": "q?", "long_answer": "a"}\n', encoding="utf-8")
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1, result.output
    assert lines[0].startswith(f"error: {message}"), result.output


def test_a_missing_corpus_file_is_named_in_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["eval", "vanilla-rag", "--corpus", "gone/corpus.jsonl", "--no-track"],
                                env={"COLUMNS": "200", "DISAMBIG_CACHE_DIR": str(tmp_path / "cache")})
    assert result.exit_code == 2 and result.output.strip().splitlines() == [
        "error: no such file: gone/corpus.jsonl; the corpus is wiki-slice, dbpedia-entity-5k, a JSONL file or a BEIR "
        "folder"], result.output


@pytest.mark.parametrize(("value", "meant_as_path"), [
    ("asqa", False), ("my-set", False), ("dev.jsonl", True), ("rows.json", True), ("data/dev", True),
    ("~/dev", True), ("./asqa", True),
])
def test_a_value_with_a_folder_or_a_json_suffix_is_a_path(value, meant_as_path):
    assert looks_like_path(value) is meant_as_path


def test_load_dataset_names_the_missing_file(tmp_path):
    with pytest.raises(ConfigurationError, match=f"^no such file: {tmp_path}/gone.jsonl; the dataset is asqa, "):
        load_dataset(str(tmp_path / "gone.jsonl"))
