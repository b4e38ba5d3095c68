"""``disambig data fetch`` offline: a fake hub returns a few hand-written rows in each hub schema.

The rows below are made up for these tests. Sequences of structs come back columnar (a dict of lists) as
``datasets`` returns them for ``Sequence`` features; one ASQA row uses the list-of-dicts shape instead, since
hub schemas declared with a list literal come back that way. Every written file is read back with the
project's own loaders.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from disambig.cli import data_cmd
from disambig.cli.app import app
from disambig.data import fetch as fetch_module
from disambig.data.corpus import load_beir_qrels, load_beir_queries, load_corpus
from disambig.data.fetch import (
    NAMES,
    PATHS,
    SPIDER_DB_REPO,
    check_names,
    fetch,
    records,
    sample_corpus,
    select_queries,
)
from disambig.data.loaders import load_dataset
from disambig.errors import ConfigurationError

runner = CliRunner()

ASQA_DEV = [
    {  # columnar sequences, as for Sequence({...}) features
        "ambiguous_question": "Who won the big race?",
        "sample_id": 101,
        "qa_pairs": {
            "context": ["c1", "c2"],
            "question": ["Who won the big race in 1990?", "Who won the big race in 2000?"],
            "short_answers": [["Ann Example"], ["Bob Sample", "B. Sample"]],
            "wikipage": ["Big Race", None],
        },
        "wikipages": {"title": ["Big Race"], "url": ["https://example.org/Big_Race"]},
        "annotations": {
            "knowledge": [{"content": ["Ann Example won the 1990 race.", "Bob Sample won in 2000."],
                           "wikipage": ["Big Race", "Big Race"]}],
            "long_answer": ["Ann Example won in 1990 and Bob Sample in 2000."],
        },
    },
    {  # list-of-dicts sequences, as for [{...}] features
        "ambiguous_question": "Where is the old bridge?",
        "sample_id": "-202",
        "qa_pairs": [{"context": "c", "question": "Where is the old bridge of Townton?",
                      "short_answers": ["Townton"], "wikipage": "Old Bridge"}],
        "wikipages": [],
        "annotations": [
            {"knowledge": [{"content": "The old bridge stands in Townton.", "wikipage": "Old Bridge"}],
             "long_answer": "It is in Townton."},
            {"knowledge": [{"content": "Ann Example won the 1990 race.", "wikipage": "Big Race"},  # repeated
                           {"content": "   ", "wikipage": None}],  # blank: skipped
             "long_answer": "Townton."},
        ],
    },
]

AMBIGNQ_FULL = [
    {
        "id": "-301", "question": "When did the tower open?",
        "annotations": {
            "type": ["multipleQAs", "singleAnswer"],
            "answer": [[], ["1901"]],
            "qaPairs": [{"question": ["When did the north tower open?", "When did the south tower open?"],
                         "answer": [["1901"], ["1905", "May 1905"]]},
                        {"question": [], "answer": []}],
        },
        "viewed_doc_titles": ["Tower"],
        "used_queries": {"query": ["tower open"], "results": [{"title": ["Tower"], "snippet": ["<b>Tower</b> ..."]}]},
        "nq_answer": ["1901"],
        "nq_doc_title": "Tower",
    },
    {
        "id": "302", "question": "Who painted the blue door?",
        "annotations": {"type": ["singleAnswer"], "answer": [["Cara Painter"]],
                        "qaPairs": [{"question": [], "answer": []}]},
        "viewed_doc_titles": [], "used_queries": {"query": [], "results": []},
        "nq_answer": [], "nq_doc_title": "",
    },
]

SPIDER_VALIDATION = [
    {"db_id": "zoo_1", "query": "SELECT count(*) FROM animal", "question": "How many animals are there?",
     "query_toks": ["SELECT"], "query_toks_no_value": ["select"], "question_toks": ["How"]},
    {"db_id": "shop_2", "query": "SELECT name FROM item", "question": "List the item names.",
     "query_toks": ["SELECT"], "query_toks_no_value": ["select"], "question_toks": ["List"]},
]

BEIR_CORPUS = [{"_id": f"<dbpedia:Doc_{i}>", "title": f"Doc {i}", "text": f"Text of document {i}."} for i in range(8)]
BEIR_QUERIES = [{"_id": "Q-1", "text": "first query"}, {"_id": "Q-2", "text": "second query"},
                {"_id": "Q-dev", "text": "a dev query"}]
BEIR_QRELS_TEST = [
    {"query-id": "Q-1", "corpus-id": "<dbpedia:Doc_0>", "score": 2},
    {"query-id": "Q-1", "corpus-id": "<dbpedia:Doc_1>", "score": 0},
    {"query-id": "Q-2", "corpus-id": "<dbpedia:Doc_2>", "score": 1},
    {"query-id": "Q-2", "corpus-id": "<dbpedia:Missing>", "score": 1},  # not in the corpus: dropped
]

TABLES = {
    ("din0s/asqa", None, "dev"): ASQA_DEV,
    ("sewon/ambig_qa", "full", "validation"): AMBIGNQ_FULL,
    ("xlangai/spider", "spider", "validation"): SPIDER_VALIDATION,
    ("json", "hf://datasets/BeIR/dbpedia-entity/corpus.jsonl.gz", "train"): BEIR_CORPUS,
    ("json", "hf://datasets/BeIR/dbpedia-entity/queries.jsonl.gz", "train"): BEIR_QUERIES,
    ("BeIR/dbpedia-entity-qrels", None, "test"): BEIR_QRELS_TEST,
}


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """Replace ``datasets.load_dataset`` and ``huggingface_hub.hf_hub_download``; return the list of calls."""
    import datasets
    import huggingface_hub

    calls: list[tuple] = []

    def load_dataset(path, name=None, split=None, streaming=False, data_files=None, **kwargs):
        key = (path, data_files or name, split)
        calls.append(key)
        return iter(TABLES[key]) if streaming else list(TABLES[key])

    def hf_hub_download(repo_id, filename, repo_type=None, **kwargs):
        calls.append((repo_id, filename, repo_type))
        db_id = Path(filename).stem
        path = tmp_path / "hub" / filename
        if not path.exists():  # the hub's local cache: a second download returns the same file
            path.parent.mkdir(parents=True, exist_ok=True)
            with sqlite3.connect(path) as db:
                db.execute("CREATE TABLE t (name TEXT)")
                db.execute("INSERT INTO t VALUES (?)", (db_id,))
        return str(path)

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", hf_hub_download)
    return calls


def test_fetch_writes_every_dataset_where_and_how_the_loaders_read_it(hub, tmp_path):
    out = tmp_path / "data"
    results = fetch(out)
    assert [r.name for r in results] == list(NAMES) and {r.status for r in results} == {"fetched"}

    asqa = load_dataset(str(out / "asqa/dev.jsonl"))
    assert [ex.id for ex in asqa] == ["101", "-202"]
    assert asqa[0].interpretations[1] == {"question": "Who won the big race in 2000?",
                                          "answers": ["Bob Sample", "B. Sample"]}
    assert asqa[1].long_answers == ["It is in Townton.", "Townton."]

    ambignq = load_dataset(str(out / "ambignq/dev.jsonl"))
    assert [len(ex.interpretations) for ex in ambignq] == [2, 1]  # first multipleQAs; else the single answers
    rows = [json.loads(line) for line in (out / "ambignq/dev.jsonl").read_text().splitlines()]
    assert rows[0]["nq_answer"] == ["1901"] and "nq_answer" not in rows[1]  # empty nq_answer is left out
    assert set(rows[0]) == {"id", "question", "annotations", "nq_answer"}

    passages = load_corpus(str(out / "corpus/wiki-slice.jsonl"))  # rejects duplicate ids
    assert [p["text"] for p in passages] == ["Ann Example won the 1990 race.", "Bob Sample won in 2000.",
                                             "The old bridge stands in Townton."]  # repeat and blank dropped
    assert all(p["id"].startswith("asqa-") for p in passages)

    beir = str(out / "beir/dbpedia-entity-5k")
    assert len(load_corpus(beir)) == 8  # fewer than 5,000 documents on the fake hub: all of them
    assert load_beir_queries(beir) == {"Q-1": "first query", "Q-2": "second query"}  # test queries only
    assert load_beir_qrels(beir) == {"Q-1": {"<dbpedia:Doc_0>": 2, "<dbpedia:Doc_1>": 0},
                                     "Q-2": {"<dbpedia:Doc_2>": 1}}

    assert json.loads((out / "spider/dev.json").read_text()) == [
        {"db_id": "zoo_1", "question": "How many animals are there?", "query": "SELECT count(*) FROM animal"},
        {"db_id": "shop_2", "question": "List the item names.", "query": "SELECT name FROM item"}]
    for db_id in ("shop_2", "zoo_1"):
        with sqlite3.connect(out / "spider" / "database" / f"{db_id}.sqlite") as db:
            assert db.execute("SELECT name FROM t").fetchall() == [(db_id,)]
    assert (SPIDER_DB_REPO, "database/zoo_1/zoo_1.sqlite", "dataset") in hub
    assert not list(out.rglob("*.tmp"))  # no temporary file left behind


def test_a_complete_dataset_is_skipped_unless_forced(hub, tmp_path):
    fetch(tmp_path, ["asqa", "spider"])
    hub.clear()
    assert {r.status for r in fetch(tmp_path, ["asqa", "spider"])} == {"skipped"} and hub == []
    (tmp_path / "spider/database/zoo_1.sqlite").unlink()  # a missing database makes Spider incomplete
    assert [r.status for r in fetch(tmp_path, ["asqa", "spider"])] == ["skipped", "fetched"]
    assert [r.status for r in fetch(tmp_path, ["asqa"], force=True)] == ["fetched"]


def test_spider_databases_from_a_local_folder(hub, tmp_path):
    local = tmp_path / "spider-release" / "database"
    for db_id in ("zoo_1", "shop_2"):
        (local / db_id).mkdir(parents=True)
        sqlite3.connect(local / db_id / f"{db_id}.sqlite").execute("CREATE TABLE t (x)").connection.close()
    fetch(tmp_path / "out", ["spider"], spider_db_dir=local)
    assert sorted(p.name for p in (tmp_path / "out/spider/database").iterdir()) == ["shop_2.sqlite", "zoo_1.sqlite"]
    assert not [call for call in hub if call[2] == "dataset"]  # nothing downloaded from the hub repo


def test_a_file_that_is_not_sqlite_is_rejected(hub, tmp_path):
    local = tmp_path / "database"
    local.mkdir()
    for db_id in ("zoo_1", "shop_2"):
        (local / f"{db_id}.sqlite").write_text("version https://git-lfs.github.com/spec/v1\n")
    with pytest.raises(ConfigurationError, match="not an SQLite file"):
        fetch(tmp_path / "out", ["spider"], spider_db_dir=local)
    assert not (tmp_path / "out/spider/dev.json").exists()


def test_cli_only_fetches_the_named_datasets_into_the_cache_by_default(hub, tmp_path, monkeypatch):
    monkeypatch.setenv("DISAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    result = runner.invoke(app, ["data", "fetch", "--only", "asqa,ambignq"])
    assert result.exit_code == 0, result.output
    written = sorted(str(p.relative_to(tmp_path / "cache" / "data")) for p in (tmp_path / "cache/data").rglob("*.*"))
    assert written == ["ambignq/dev.jsonl", "asqa/dev.jsonl"]
    assert {call[0] for call in hub} == {"din0s/asqa", "sewon/ambig_qa"}


def test_cli_only_is_repeatable_and_out_is_honoured(hub, tmp_path):
    result = runner.invoke(app, ["data", "fetch", "--out", str(tmp_path), "--only", "spider", "--only", "wiki-slice"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "spider/dev.json").is_file() and (tmp_path / "corpus/wiki-slice.jsonl").is_file()
    assert not (tmp_path / "asqa").exists()


def test_cli_unknown_name_is_one_clear_error_before_any_download(hub, tmp_path):
    result = runner.invoke(app, ["data", "fetch", "--out", str(tmp_path), "--only", "asqa", "--only", "squad"])
    assert result.exit_code == 2
    expected = "unknown dataset(s) 'squad'; choose from asqa, ambignq, wiki-slice, dbpedia-entity-5k, spider"
    assert expected in result.output
    assert hub == []


@pytest.mark.parametrize("names, expected", [
    (None, list(NAMES)),
    ([], list(NAMES)),
    (["spider", "asqa"], ["asqa", "spider"]),  # always in NAMES order
    (["asqa, wiki-slice"], ["asqa", "wiki-slice"]),
])
def test_check_names(names, expected):
    assert check_names(names) == expected


def test_the_cli_help_lists_the_fetch_module_names_and_default_repo():
    assert data_cmd.DATASET_NAMES == NAMES == tuple(PATHS)
    assert data_cmd.SPIDER_DB_REPO == fetch_module.SPIDER_DB_REPO


def test_records_reads_rows_or_columns():
    assert records({"a": [1, 2], "b": ["x", "y"]}) == [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]
    assert records([{"a": 1}]) == [{"a": 1}]
    assert records({"a": [], "b": []}) == [] and records(None) == []
    with pytest.raises(ConfigurationError, match="unequal column lengths"):
        records({"a": [1, 2], "b": ["x"]})


def test_select_queries_is_order_free_and_keeps_the_judged_budget():
    qrels = {f"q{i}": {f"d{i}-{j}": 1 for j in range(3)} for i in range(10)}  # 3 judged documents each
    chosen = select_queries(qrels, count=4, max_judged=100)
    assert len(chosen) == 4 and select_queries(dict(reversed(qrels.items())), count=4, max_judged=100) == chosen
    assert len(select_queries(qrels, count=50, max_judged=7)) == 2  # 2 x 3 = 6 judged; a third would make 9
    assert len(select_queries(qrels, count=50, max_judged=100)) == 10


def test_sample_corpus_keeps_judged_documents_and_is_order_free():
    docs = [{"_id": f"d{i}", "title": "", "text": f"t{i}"} for i in range(20)]
    sample = sample_corpus(docs, judged={"d3", "d17", "absent"}, size=6)
    ids = [doc["_id"] for doc in sample]
    assert len(ids) == 6 and {"d3", "d17"} <= set(ids) and ids == sorted(ids)
    assert sample_corpus(list(reversed(docs)), judged={"d3", "d17", "absent"}, size=6) == sample
    assert len(sample_corpus(docs, judged=set(), size=50)) == 20


@pytest.mark.parametrize(("args", "message"), [
    (["--only", ""], "--only '' names no dataset; choose from asqa, ambignq, wiki-slice, dbpedia-entity-5k, spider "
                     "(or leave --only out to fetch them all)"),  # it fetched every dataset
    (["--only", " , "], "--only ' , ' names no dataset; choose from asqa, ambignq, wiki-slice, dbpedia-entity-5k, "
                        "spider (or leave --only out to fetch them all)"),
    (["--only", "asqa", "--out", "afile/data"], "--out 'afile/data': 'afile' is a file, not a folder; write "
                                                "elsewhere"),  # it failed after the download
    (["--only", "spider", "--spider-db-dir", "empty"], "--spider-db-dir 'empty' holds no DB_ID.sqlite or "
     "DB_ID/DB_ID.sqlite file; give the database folder of the Spider release"),  # after the questions' download
    (["--only", "spider", "--spider-db-dir", "release"], "--spider-db-dir 'release' holds no DB_ID.sqlite or "
     "DB_ID/DB_ID.sqlite file; give the database folder of the Spider release"),  # its database/ folder would do
    (["--only", "spider", "--spider-db-repo", "a/b/c"], "--spider-db-repo 'a/b/c' is not a hub repo id (Repo id must "
     "be in the form 'repo_name' or 'namespace/repo_name': 'a/b/c'. Use `repo_type` argument if needed.); give "
     "OWNER/NAME, e.g. lklimkiewicz/Spider-Raw"),
])
def test_a_bad_argument_is_refused_before_anything_is_downloaded(hub, tmp_path, monkeypatch, args, message):
    """Found by fuzzing the command line: each of these downloaded first."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("x")
    (tmp_path / "empty").mkdir()
    (tmp_path / "release" / "database").mkdir(parents=True)
    sqlite3.connect(tmp_path / "release" / "database" / "zoo_1.sqlite").close()
    result = runner.invoke(app, ["data", "fetch", *(["--out", "out"] if "--out" not in args else []), *args])
    assert (result.exit_code, " ".join(result.output.split())) == (2, f"error: {message}")
    assert hub == [] and sorted(p.name for p in tmp_path.iterdir()) == ["afile", "empty", "release"]
