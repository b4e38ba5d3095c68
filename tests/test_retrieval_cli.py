"""``disambig index build``, ``disambig search`` and ``disambig eval-retrieval`` on a four-passage corpus."""

from __future__ import annotations

import json

import pytest
from index_cli import invoke
from retrieval_fakes import PASSAGES

pytestmark = pytest.mark.usefixtures("index_cache")


def test_index_build_then_up_to_date_then_forced(corpus):
    first = invoke("index", "build", "--corpus", corpus, "--kind", "bm25")
    assert first.exit_code == 0, first.output
    assert "built" in first.output and "4" in first.output
    again = invoke("index", "build", "--corpus", corpus, "--kind", "bm25")
    assert again.exit_code == 0 and "up to date" in again.output
    forced = invoke("index", "build", "--corpus", corpus, "--kind", "bm25", "--force")
    assert forced.exit_code == 0 and "built" in forced.output


def test_search_prints_a_ranked_table(corpus):
    assert invoke("index", "build", "--corpus", corpus, "--kind", "all").exit_code == 0
    for retriever in ("bm25", "dense", "hybrid"):
        result = invoke("search", "zebra stripes", "--corpus", corpus, "--retriever", retriever, "-k", "2")
        assert result.exit_code == 0, result.output
        rows = [line for line in result.output.splitlines() if " p2 " in line or " p3 " in line]
        assert len(rows) == 2 and " p2 " in rows[0] and "Zebra" in rows[0]


def test_search_without_an_index_names_the_build_command(corpus):
    result = invoke("search", "zebra", "--corpus", corpus)
    assert result.exit_code == 2
    assert "no bm25 index" in result.output and f"disambig index build --corpus {corpus} --kind bm25" in result.output


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["search", "  ", "-k", "2"], "query must be a non-empty string"),
        (["search", "zebra", "-k", "0"], "k=0 must be a positive integer"),
        (["search", "zebra", "-k", "9"], "k=9 exceeds corpus size 4"),
        (["search", "zebra", "--retriever", "splade"], "unknown retriever 'splade'"),
        (["search", "zebra", "--corpus", "no-such-corpus"], "unknown corpus 'no-such-corpus'"),
        (["index", "build", "--kind", "sparse"], "unknown index kind 'sparse'; choose bm25, dense or all"),
        (["index", "build", "--corpus", "no-such-corpus"], "unknown corpus 'no-such-corpus'"),
    ],
)
def test_bad_input_exits_2_with_a_clear_error(corpus, args, match):
    assert invoke("index", "build", "--corpus", corpus, "--kind", "bm25").exit_code == 0
    args = [*args, "--corpus", corpus] if "--corpus" not in args and args[0] == "search" else args
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert match in result.output


def test_search_on_a_corrupt_index_names_the_rebuild_command(corpus, index_cache):
    assert invoke("index", "build", "--corpus", corpus, "--kind", "bm25").exit_code == 0
    (folder,) = (index_cache / "indexes").iterdir()
    (folder / "manifest.json").write_text("not json")
    result = invoke("search", "zebra", "--corpus", corpus)
    assert result.exit_code == 2
    assert f"disambig index build --corpus {corpus} --kind bm25 --force" in result.output


@pytest.fixture
def beir(tmp_path):
    """A BEIR folder over the four passages. Judgments and what BM25 returns (hand-checked):
    q1 "zebra stripes" rel p2        -> p2 first            nDCG@10 1, MRR@10 1, Recall@100 1
    q2 "ants"          rel p1        -> p1 only             1, 1, 1
    q3 "penguin ice"   rel p4, p2=0  -> p4 first            1, 1, 1
    q4 "lion"          rel p2, p3=0  -> p3 only (no p2)     0, 0, 0
    Means over the 4 queries: 0.75 for each metric.
    """
    folder = tmp_path / "tiny-beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": p["id"], "title": p["title"], "text": p["text"]}) + "\n" for p in PASSAGES))
    queries = {"q1": "zebra stripes", "q2": "ants", "q3": "penguin ice", "q4": "lion"}
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries.items()))
    qrels = [("q1", "p2", 2), ("q2", "p1", 1), ("q3", "p4", 2), ("q3", "p2", 0), ("q4", "p2", 1), ("q4", "p3", 0)]
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in qrels))
    return folder


def test_eval_retrieval_reports_hand_computed_scores(beir, tmp_path):
    out = tmp_path / "scores.json"
    result = invoke("eval-retrieval", "--dataset", str(beir), "--retriever", "bm25", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert result.output.count("0.7500") == 3
    (report,) = json.loads(out.read_text())
    assert report["queries"] == 4
    assert report["metrics"] == pytest.approx({"ndcg@10": 0.75, "recall@100": 0.75, "mrr@10": 0.75})


def test_eval_retrieval_runs_every_retriever_asked_for(beir):
    result = invoke("eval-retrieval", "--dataset", str(beir), "-r", "bm25", "-r", "dense", "-r", "hybrid")
    assert result.exit_code == 0, result.output
    assert all(name in result.output for name in ("bm25", "dense", "hybrid"))


def test_eval_retrieval_rejects_an_unknown_retriever(beir):
    result = invoke("eval-retrieval", "--dataset", str(beir), "-r", "tfidf")
    assert result.exit_code == 2 and "unknown retriever 'tfidf'" in result.output
