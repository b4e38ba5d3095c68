"""The data root: DISAMBIG_DATA_DIR / --data-dir, then ../shared/data, then the cache; one clear line when absent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from disambig.data import load_corpus, load_dataset
from disambig.data import root as data_root
from disambig.data.root import ENV_VAR, DataNotFoundError, find_named
from disambig.errors import ConfigurationError

ROW = {"id": "x1", "question": "Where is it?",
       "qa_pairs": [{"question": "Where is the tower?", "short_answers": ["Paris"]}]}


def write_root(folder: Path) -> Path:
    (folder / "asqa").mkdir(parents=True)
    (folder / "asqa" / "dev.jsonl").write_text(json.dumps(ROW) + "\n", encoding="utf-8")
    (folder / "corpus").mkdir()
    (folder / "corpus" / "wiki-slice.jsonl").write_text(json.dumps({"id": "p", "text": "Paris."}) + "\n")
    return folder


@pytest.fixture
def nowhere(tmp_path, monkeypatch):
    """No shared data beside the checkout and an empty cache: only DISAMBIG_DATA_DIR can supply data."""
    monkeypatch.setattr(data_root, "SHARED_DATA", tmp_path / "no-shared")
    monkeypatch.setenv("DISAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(ENV_VAR, raising=False)
    return tmp_path


def test_the_environment_variable_is_the_only_root_when_set(nowhere, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(write_root(nowhere / "elsewhere")))
    assert [ex.id for ex in load_dataset("asqa")] == ["x1"]
    assert load_corpus("wiki-slice") == [{"id": "p", "title": "", "text": "Paris."}]
    with pytest.raises(DataNotFoundError, match=r"'ambignq' not found; looked in .*elsewhere/ambignq/dev.jsonl"):
        load_dataset("ambignq")


def test_shared_data_then_the_cache(nowhere, monkeypatch):
    write_root(nowhere / "cache" / "data")
    assert find_named("asqa") == nowhere / "cache" / "data" / "asqa" / "dev.jsonl"
    monkeypatch.setattr(data_root, "SHARED_DATA", write_root(nowhere / "shared"))
    assert find_named("asqa") == nowhere / "shared" / "asqa" / "dev.jsonl"


def test_missing_data_is_one_line_naming_the_places_and_both_remedies(nowhere):
    with pytest.raises(DataNotFoundError) as caught:
        load_dataset("asqa")
    message = str(caught.value)
    assert "\n" not in message
    assert str(nowhere / "no-shared" / "asqa" / "dev.jsonl") in message
    assert str(nowhere / "cache" / "data" / "asqa" / "dev.jsonl") in message
    assert "--data-dir" in message and "disambig data fetch --only asqa" in message


def test_explicit_paths_bypass_the_root(nowhere):
    path = write_root(nowhere / "mine") / "asqa" / "dev.jsonl"
    assert [ex.id for ex in load_dataset(str(path))] == ["x1"]


@pytest.mark.parametrize(("load", "message"), [
    (load_dataset, "the dataset is an empty name; use asqa, ambignq, a JSONL file, a BEIR folder or hf:NAME"),
    (load_corpus, "the corpus is an empty name; use wiki-slice, dbpedia-entity-5k, a JSONL file or a BEIR folder"),
])
def test_an_empty_name_is_refused_not_read_as_the_working_folder(nowhere, monkeypatch, load, message):
    """Found by fuzzing ``data asqa-retrieval``: ``--corpus ''`` read the corpus.jsonl of the working folder."""
    monkeypatch.chdir(write_root(nowhere / "here") / "corpus")
    (nowhere / "here" / "corpus" / "corpus.jsonl").write_text(json.dumps({"id": "p", "text": "Paris."}) + "\n")
    with pytest.raises(ConfigurationError, match=f"^{message}$"):
        load("")


@pytest.mark.parametrize("load", [load_dataset, load_corpus])
def test_a_home_of_no_user_is_a_missing_file(nowhere, load):
    """``~nobody/q.jsonl`` is left as given, as a shell leaves it, instead of Path.expanduser's RuntimeError."""
    with pytest.raises(ConfigurationError, match=r"^no such file: ~disambig-no-such-user/q\.jsonl; the (data|corp)"):
        load("~disambig-no-such-user/q.jsonl")


def test_cli_data_dir_flag_reaches_the_loaders(nowhere, monkeypatch):
    from disambig.cli import app

    folder = write_root(nowhere / "flagged")
    monkeypatch.setenv(ENV_VAR, "")  # restored after the test: the flag sets it for the command's process
    result = CliRunner().invoke(app, ["--data-dir", str(folder), "eval", "closed-book", "--dataset", "nope"])
    assert result.exit_code == 2
    assert find_named("asqa") == folder.resolve() / "asqa" / "dev.jsonl"


def test_no_benchmark_file_is_in_the_repository():
    checkout = Path(__file__).resolve().parents[1]
    tracked = [p for p in (checkout / "data").rglob("*") if p.suffix in {".jsonl", ".json", ".tsv", ".sqlite"}]
    assert tracked == []
