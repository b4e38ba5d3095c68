"""``--corpus prebuilt:wikipedia-dpr-100w`` (and its short name ``wikipedia-dpr``) in every command that searches a
corpus: search, ask, eval, compile, eval-retrieval, and batch over the compiled state (``serve`` loads a model as
batch does), offline, against the four-passage Lucene index that ``test_prebuilt_index`` writes in pyserini's cache
layout. The LM is scripted."""

from __future__ import annotations

import json

import pytest
from program_fakes import scripted_lm
from test_prebuilt_index import NAME, no_network, pyserini_cache, write_dpr_like_index  # noqa: F401
from typer.testing import CliRunner

from disambig.cli import app
from disambig.lm.adapter import CompactJSONAdapter
from disambig.retrieval.prebuilt import prebuilt_folder

runner = CliRunner()
RULES = {
    "Using only the numbered passages": lambda _: {"disambiguations": [{"question": "Which zebra?", "answer": "Zebra",
                                                                        "passage": 1}]},
    "Write a long-form answer of at least three sentences": lambda _: {"long_answer": "Zebras have stripes."},
}


@pytest.fixture(autouse=True)
def fetched(pyserini_cache, no_network, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("DISAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    write_dpr_like_index(prebuilt_folder(NAME))


@pytest.fixture
def scripted(monkeypatch):
    lm, engine = scripted_lm(RULES)
    lm.adapter = CompactJSONAdapter()
    monkeypatch.setattr("disambig.lm.runtime.build_lm", lambda settings, spec=None, **kw: lm)
    return engine


def invoke(*args: str):
    result = runner.invoke(app, list(args), env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    return result.output


CORPORA = [f"prebuilt:{NAME}", "wikipedia-dpr"]
RAG = ("--retriever", "bm25", "--option", "first_stage=0", "--option", "k=2")  # the fixture has 4 passages


@pytest.mark.parametrize("corpus", CORPORA)
def test_search(corpus):
    assert "p2" in invoke("search", "zebra stripes", "--corpus", corpus, "--retriever", "bm25", "-k", "1")


@pytest.mark.parametrize("corpus", CORPORA)
def test_ask(corpus, scripted):
    output = invoke("ask", "What has stripes?", "--program", "vanilla-rag", "--corpus", corpus, *RAG)
    assert "Zebras have stripes." in output


def test_eval(scripted, asqa_file, tmp_path):
    invoke("eval", "vanilla-rag", "--dataset", asqa_file, "--limit", "1", "--corpus", "wikipedia-dpr", *RAG,
           "--metric", "rouge-l", "--no-track", "--out", str(tmp_path / "run"))
    row = json.loads((tmp_path / "run" / "results.jsonl").read_text().splitlines()[0])
    assert row["prediction"]["passages"][0]["id"].startswith("p")


def test_compile_then_batch_over_the_compiled_state(scripted, asqa_file, tmp_path):
    invoke("compile", "vanilla-rag", "--dataset", asqa_file, "--metric", "rouge-l", "--optimizer", "labeled-fewshot",
           "--train", "3", "--val", "2", "--corpus", "wikipedia-dpr", "--retriever", "bm25", "--no-track",
           "--out", str(tmp_path / "compiled"))
    (state,) = (tmp_path / "compiled").rglob("labeled-fewshot.json")
    (tmp_path / "in.jsonl").write_text(json.dumps({"question": "What has stripes?"}) + "\n")
    invoke("batch", str(state), "--input", str(tmp_path / "in.jsonl"), "--output", str(tmp_path / "out.jsonl"))
    (row,) = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert row["long_answer"] == "Zebras have stripes." and row["error"] is None
    assert row["passages"][0]["id"] == "p2"  # searched the prebuilt index the compiled state names


def test_eval_retrieval_over_a_benchmark_naming_the_prebuilt_corpus(tmp_path):
    bench = tmp_path / "bench"
    (bench / "qrels").mkdir(parents=True)
    (bench / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "zebra stripes"}) + "\n")
    (bench / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tp2\t1\n")
    (bench / "manifest.json").write_text(json.dumps({"corpus": "wikipedia-dpr"}))
    output = invoke("eval-retrieval", "--dataset", str(bench), "--retriever", "bm25", "--split", "test")
    assert "1.000" in output or "1.0" in output
