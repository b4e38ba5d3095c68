"""Dense retrieval and the index store on a four-passage corpus, with a bag-of-words encoder (no model)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from retrieval_fakes import PASSAGES, VocabEmbedder

from disambig.errors import ConfigurationError
from disambig.retrieval import build_retriever
from disambig.retrieval import dense as dense_module
from disambig.retrieval.store import IndexCorruptError, IndexMissingError


def test_cosine_scores_match_the_hand_computation(corpus, settings):
    # Encoded text is "title: text". p2 "Zebra: A zebra ... stripes" = (zebra 2, stripes 1) / sqrt 5;
    # p3 "Lion: The lion hunts the zebra" = (zebra 1, lion 2) / sqrt 5; the query (zebra 1, stripes 1) / sqrt 2.
    # cos(q, p2) = 3 / sqrt 10 = 0.94868; cos(q, p3) = 1 / sqrt 10 = 0.31623; p1 and p4 share no word: 0.
    retriever = build_retriever("dense", corpus, settings, embedder=VocabEmbedder())
    hits = retriever.search("zebra stripes", k=2)
    assert [p.id for p in hits] == ["p2", "p3"]
    assert [p.score for p in hits] == pytest.approx([3 / math.sqrt(10), 1 / math.sqrt(10)], abs=1e-6)
    assert [p.rank for p in hits] == [1, 2]
    assert hits[0].title == "Zebra" and hits[0].text == PASSAGES[1]["text"]


def test_batch_search_matches_search(corpus, settings):
    retriever = build_retriever("dense", corpus, settings, embedder=VocabEmbedder())
    batch = retriever.batch_search(["zebra stripes", "penguin ice"], k=1)
    assert [hits[0].id for hits in batch] == ["p2", "p4"]
    single = retriever.search("zebra stripes", k=1)  # FAISS may take another code path for a batch of queries
    assert [(p.id, p.rank) for p in batch[0]] == [(p.id, p.rank) for p in single]
    assert [p.score for p in batch[0]] == pytest.approx([p.score for p in single], rel=1e-6)


def test_index_persists_and_is_reopened_without_encoding_the_corpus_again(corpus, settings, monkeypatch):
    first = build_retriever("dense", corpus, settings, embedder=VocabEmbedder())
    files = {p.name for p in first.folder.iterdir()}
    assert files == {"manifest.json", "passages.sqlite", "faiss.index", "vectors.npy"}  # no shards left behind
    manifest = json.loads((first.folder / "manifest.json").read_text())
    assert manifest["params"] == {"encoder": "vocab-bow"} and manifest["faiss_index"] == "IndexFlatIP"
    assert manifest["source"]["passages"] == 4 and manifest["source"]["format"] == "jsonl"
    assert manifest["source"]["sha256"] == manifest["corpus_sha256"]
    assert [p["id"] for p in first._passages] == ["p1", "p2", "p3", "p4"]
    np.testing.assert_allclose(first.vectors(), VocabEmbedder().encode(
        [f"{p['title']}: {p['text']}" for p in PASSAGES]), atol=1e-6)

    monkeypatch.setattr(dense_module, "write_faiss", lambda *a, **k: pytest.fail("index was rebuilt"))
    encoder = VocabEmbedder()
    again = build_retriever("dense", corpus, settings, embedder=encoder, auto_build=False)
    assert again.folder == first.folder
    assert again.search("lion", 1) == first.search("lion", 1)
    assert encoder.calls == 1  # the query only


def test_changed_corpus_is_indexed_afresh(corpus, settings, tmp_path):
    old = build_retriever("dense", corpus, settings, embedder=VocabEmbedder())
    with open(corpus, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"id": "p5", "title": "Ice", "text": "ice ice ice"}) + "\n")
    new = build_retriever("dense", corpus, settings, embedder=VocabEmbedder())
    assert new.folder != old.folder and old.folder.is_dir()
    assert new.size == 5 and new.search("ice", 1)[0].id == "p5"


def test_another_encoder_gets_its_own_index(corpus, settings):
    one = build_retriever("dense", corpus, settings, embedder=VocabEmbedder("enc-a"))
    two = build_retriever("dense", corpus, settings, embedder=VocabEmbedder("enc-b"))
    assert one.folder != two.folder


def test_a_compressed_index_above_the_exact_limit_finds_the_same_best_passage(corpus, settings, monkeypatch):
    monkeypatch.setattr("disambig.retrieval.faiss_index.EXACT_LIMIT", 2)
    retriever = build_retriever("dense", corpus, settings, embedder=VocabEmbedder())
    manifest = json.loads((retriever.folder / "manifest.json").read_text())
    assert (manifest["faiss_index"], manifest["faiss_factory"]) == ("IndexIVFScalarQuantizer", "IVF1,SQ8")
    assert retriever.search("zebra stripes", 1)[0].id == "p2"


@pytest.mark.parametrize(
    ("query", "k", "match"),
    [
        ("", 2, "query must be a non-empty string, got ''"),
        ("  \n", 2, "query must be a non-empty string"),
        ("zebra", 0, "k=0 must be a positive integer"),
        ("zebra", -1, "k=-1 must be a positive integer"),
        ("zebra", 5, "k=5 exceeds corpus size 4; lower k or index more passages"),
    ],
)
def test_bad_query_or_k_is_a_clear_error(corpus, settings, query, k, match):
    retriever = build_retriever("dense", corpus, settings, embedder=VocabEmbedder())
    with pytest.raises(ValueError, match=match):
        retriever.search(query, k)


def test_unknown_corpus_name_names_the_known_ones(settings):
    with pytest.raises(ConfigurationError, match="unknown corpus 'wiki-slise'; use wiki-slice, dbpedia-entity-5k"):
        build_retriever("dense", "wiki-slise", settings, embedder=VocabEmbedder())


def test_unknown_retriever_kind(settings, corpus):
    with pytest.raises(ConfigurationError, match="unknown retriever 'splade'; choose one of bm25, dense, hybrid"):
        build_retriever("splade", corpus, settings)


def test_missing_index_names_the_build_command(corpus, settings):
    with pytest.raises(IndexMissingError, match=r"no dense index .* build it with `disambig index build --corpus "
                                                r".*tiny.jsonl --kind dense`"):
        build_retriever("dense", corpus, settings, embedder=VocabEmbedder(), auto_build=False)


def test_corrupt_index_file_names_the_rebuild_command(corpus, settings):
    folder = build_retriever("dense", corpus, settings, embedder=VocabEmbedder()).folder
    (folder / "faiss.index").write_bytes(b"\x00not an index")
    retriever = build_retriever("dense", corpus, settings, embedder=VocabEmbedder(), auto_build=False)
    with pytest.raises(IndexCorruptError, match=r"faiss.index' cannot be read .* rebuild it with `disambig index build "
                                                r"--corpus .*tiny.jsonl --kind dense --force`$"):
        retriever.search("zebra", 1)


def test_corrupt_passage_store_names_the_rebuild_command(corpus, settings):
    folder = build_retriever("dense", corpus, settings, embedder=VocabEmbedder()).folder
    (folder / "passages.sqlite").write_bytes(b"\x00not a database" * 100)
    with pytest.raises(IndexCorruptError, match=r"index file '.*/passages.sqlite' is missing or corrupt "
                                                r"\(DatabaseError\); rebuild it with `disambig index build --corpus "
                                                r".*tiny.jsonl --kind dense --force`$"):
        build_retriever("dense", corpus, settings, embedder=VocabEmbedder(), auto_build=False)


def test_corrupt_manifest_names_the_rebuild_command(corpus, settings):
    folder = build_retriever("dense", corpus, settings, embedder=VocabEmbedder()).folder
    (folder / "manifest.json").write_text("{broken", encoding="utf-8")
    with pytest.raises(IndexCorruptError, match="/manifest.json' is missing or corrupt .* --kind dense --force"):
        build_retriever("dense", corpus, settings, embedder=VocabEmbedder())


def test_truncated_passage_store_is_incomplete(corpus, settings):
    import sqlite3

    folder = build_retriever("dense", corpus, settings, embedder=VocabEmbedder()).folder
    with sqlite3.connect(folder / "passages.sqlite") as db:
        db.execute("DELETE FROM passages WHERE row >= 2")
    with pytest.raises(IndexCorruptError, match="is incomplete; rebuild it with"):
        build_retriever("dense", corpus, settings, embedder=VocabEmbedder(), auto_build=False)


def test_query_encoder_of_another_dimension_is_refused(corpus, settings):
    folder_encoder = VocabEmbedder()
    build_retriever("dense", corpus, settings, embedder=folder_encoder)

    class Wider(VocabEmbedder):
        def encode(self, texts):
            return np.hstack([super().encode(texts), np.zeros((len(texts), 3), dtype=np.float32)])

    retriever = build_retriever("dense", corpus, settings, embedder=Wider(), auto_build=False)
    with pytest.raises(ConfigurationError, match="gives 9-d vectors but the index .* holds 6-d"):
        retriever.search("zebra", 1)


def test_empty_corpus_is_refused(tmp_path, settings):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match="has no passages; nothing to index"):
        build_retriever("dense", str(empty), settings, embedder=VocabEmbedder())


def test_a_deep_copied_program_shares_the_index(corpus, settings, caplog):
    # Optimizers deep-copy programs per candidate; the retriever must come along as the same object, silently.
    from disambig.programs import build_program

    retriever = build_retriever("dense", corpus, settings, embedder=VocabEmbedder())
    program = build_program("vanilla-rag", retriever=retriever)
    with caplog.at_level("WARNING"):
        copied = program.deepcopy()
    assert copied.retriever is retriever
    assert copied.rac.extract is not program.rac.extract
    assert "deep copy" not in caplog.text


def test_stored_vectors_are_the_index_rows_of_the_asked_passages(corpus, settings):
    retriever = build_retriever("dense", corpus, settings, embedder=VocabEmbedder())
    np.testing.assert_allclose(retriever.stored_vectors(["p3", "p1"]), VocabEmbedder().encode(
        [f"{p['title']}: {p['text']}" for p in (PASSAGES[2], PASSAGES[0])]), atol=1e-6)
    assert retriever.stored_vectors(["p1", "not-in-the-corpus"]) is None


def test_a_truncated_vectors_file_names_itself_and_the_rebuild_command(corpus, settings):
    retriever = build_retriever("dense", corpus, settings, embedder=VocabEmbedder())
    path = retriever.folder / "vectors.npy"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(IndexCorruptError, match=r"^vectors file '.*/vectors.npy' cannot be read \(ValueError\); "
                                                r"rebuild it with `disambig index build --corpus .*tiny.jsonl --kind "
                                                r"dense --force`$"):
        retriever.stored_vectors(["p1"])  # what the reranker and ADF's gate read; search itself does not


def test_the_reranker_reads_candidates_from_the_index_instead_of_encoding_them(corpus, settings):
    from disambig.programs.rerank import Reranker

    class CountingEmbedder(VocabEmbedder):
        texts: list[str] = []

        def encode(self, texts):
            type(self).texts = [*type(self).texts, *texts]
            return super().encode(texts)

    retriever = build_retriever("dense", corpus, settings, embedder=CountingEmbedder())
    CountingEmbedder.texts = []
    shared = Reranker(retriever, first_stage=4).search("zebra stripes", 2)
    assert CountingEmbedder.texts == ["zebra stripes", "zebra stripes"]  # the first stage, then the reranker
    other = Reranker(retriever, embedder=VocabEmbedder(), first_stage=4).search("zebra stripes", 2)
    assert [p.id for p in shared] == [p.id for p in other] == ["p2", "p3"]
    assert [p.score for p in shared] == pytest.approx([p.score for p in other], abs=1e-6)
