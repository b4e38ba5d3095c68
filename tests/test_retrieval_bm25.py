"""BM25 on Lucene (pyserini) over a four-passage corpus: scores by hand, persistence, damage, bad input.

The JVM starts once per test process (~15 s for the first test here).
"""

from __future__ import annotations

import json
import math
import shutil

import pytest
from retrieval_fakes import VocabEmbedder

from disambig.errors import ConfigurationError
from disambig.retrieval import bm25 as bm25_module
from disambig.retrieval import build_retriever
from disambig.retrieval.bm25 import split_raw
from disambig.retrieval.store import IndexCorruptError


def test_bm25_scores_match_lucene_formula_by_hand(corpus, settings):
    # Lucene BM25: sum over query terms of idf * tf / (tf + k1 * (1 - b + b * dl / avgdl)),
    # idf = ln(1 + (N - n + 0.5) / (n + 0.5)). With b = 0 the length drops out; N = 4, k1 = 0.9.
    # The indexed text is title + text, Porter-stemmed, stopwords dropped.
    #   "zebra": n = 2 (p2, p3) -> idf = ln(1 + 2.5 / 2.5) = ln 2 = 0.693147
    #   "stripe": n = 1 (p2)    -> idf = ln(1 + 3.5 / 1.5) = 1.203973
    #   p2: zebra tf 2 (title + text), stripe tf 1 -> 0.693147 * 2 / 2.9 + 1.203973 / 1.9 = 0.478032 + 0.633670
    #   p3: zebra tf 1                            -> 0.693147 / 1.9 = 0.364814
    # Anserini rounds scores to 4 decimals.
    retriever = build_retriever("bm25", corpus, settings, b=0.0)
    hits = retriever.search("zebra stripes", k=4)
    assert [p.id for p in hits] == ["p2", "p3"]  # p1 and p4 match no term
    expected_p2 = math.log(2) * 2 / 2.9 + math.log(1 + 3.5 / 1.5) / 1.9
    assert [p.score for p in hits] == pytest.approx([expected_p2, math.log(2) / 1.9], abs=1e-4)
    assert hits[0].title == "Zebra" and hits[0].rank == 1


def test_obvious_best_document_with_default_parameters(corpus, settings):
    retriever = build_retriever("bm25", corpus, settings)
    assert retriever.search("Where do penguins swim?", k=1)[0].id == "p4"
    assert [hits[0].id for hits in retriever.batch_search(["aardvark ants", "lion savanna"], k=2)] == ["p1", "p3"]


def test_index_persists_and_is_reopened_without_rebuilding(corpus, settings, monkeypatch):
    first = build_retriever("bm25", corpus, settings)
    manifest = json.loads((first.folder / "manifest.json").read_text())
    assert manifest["kind"] == "bm25" and manifest["passages"] == 4 and manifest["format"] == 1
    assert (first.folder / "lucene").is_dir()
    monkeypatch.setattr(bm25_module, "write_lucene", lambda *a, **k: pytest.fail("index was rebuilt"))
    again = build_retriever("bm25", corpus, settings, auto_build=False)
    assert again.folder == first.folder
    assert again.search("zebra", 2) == first.search("zebra", 2)


def test_changed_corpus_is_indexed_afresh(corpus, settings):
    old = build_retriever("bm25", corpus, settings)
    with open(corpus, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"id": "p5", "title": "Walrus", "text": "A walrus has tusks."}) + "\n")
    new = build_retriever("bm25", corpus, settings)
    assert new.folder != old.folder
    assert new.size == 5 and new.search("walrus tusks", 1)[0].id == "p5"
    assert old.search("zebra", 1)[0].id == "p2"  # the old index is untouched


@pytest.mark.parametrize(
    ("query", "k", "match"),
    [
        ("", 2, "query must be a non-empty string, got ''"),
        ("\t ", 2, "query must be a non-empty string"),
        ("zebra", 0, "k=0 must be a positive integer"),
        ("zebra", -3, "k=-3 must be a positive integer"),
        ("zebra", 5, "k=5 exceeds corpus size 4; lower k or index more passages"),
    ],
)
def test_bad_query_or_k_is_a_clear_error(corpus, settings, query, k, match):
    retriever = build_retriever("bm25", corpus, settings)
    with pytest.raises(ValueError, match=match):
        retriever.search(query, k)
    with pytest.raises(ValueError, match=match):
        retriever.batch_search(["lion", query], k)


@pytest.mark.parametrize(("kwargs", "match"), [({"k1": -1.0}, "k1=-1.0 must be non-negative"),
                                                ({"b": 1.5}, "b=1.5 must lie between 0 and 1")])
def test_bad_bm25_parameters(corpus, settings, kwargs, match):
    with pytest.raises(ValueError, match=match):
        build_retriever("bm25", corpus, settings, **kwargs)


def test_unknown_corpus_name(settings):
    with pytest.raises(ConfigurationError, match="unknown corpus 'wikislice'"):
        build_retriever("bm25", "wikislice", settings)


def test_corrupt_lucene_segment_names_the_rebuild_command(corpus, settings):
    folder = build_retriever("bm25", corpus, settings).folder
    for segment in (folder / "lucene").glob("segments_*"):
        segment.write_bytes(b"garbage")
    retriever = build_retriever("bm25", corpus, settings, auto_build=False)
    with pytest.raises(IndexCorruptError, match=r"cannot be opened .* rebuild it with `disambig index build --corpus "
                                                r".*tiny.jsonl --kind bm25 --force`"):
        retriever.search("zebra", 1)


def test_missing_lucene_folder_names_the_rebuild_command(corpus, settings):
    folder = build_retriever("bm25", corpus, settings).folder
    shutil.rmtree(folder / "lucene")
    with pytest.raises(IndexCorruptError, match="no Lucene index at .* --kind bm25 --force"):
        build_retriever("bm25", corpus, settings, auto_build=False).search("zebra", 1)


def test_unknown_prebuilt_index_is_refused_before_any_download(settings):
    with pytest.raises(ConfigurationError, match="unknown prebuilt index 'wikipedia-dpx'.*wikipedia-dpr"):
        build_retriever("bm25", "prebuilt:wikipedia-dpx", settings)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"id": "1", "contents": "\\"Aaron\\"\\nAaron is a prophet."}', ("Aaron", "Aaron is a prophet.")),
        ('{"id": "2", "title": "T", "text": "body"}', ("T", "body")),
        ('{"id": "3", "contents": "one line"}', ("", "one line")),
        ("plain text", ("", "plain text")),
    ],
)
def test_stored_prebuilt_documents_split_into_title_and_text(raw, expected):
    assert split_raw(raw) == expected


def test_hybrid_on_real_indexes_fuses_by_passage_id(corpus, settings):
    # bm25 "zebra stripes": p2, p3. dense: p2 (3/sqrt 10), p3 (1/sqrt 10), then p1/p4 at 0.
    # RRF (k = 60): p2 = 1/61 + 1/61 = 0.0327869, p3 = 1/62 + 1/62 = 0.0322581.
    hybrid = build_retriever("hybrid", corpus, settings, embedder=VocabEmbedder())
    hits = hybrid.search("zebra stripes", k=2)
    assert [p.id for p in hits] == ["p2", "p3"]
    assert [p.score for p in hits] == pytest.approx([2 / 61, 2 / 62])
    assert hybrid.embedder is hybrid.dense.embedder
