"""pyserini's prebuilt dense index, offline: the test writes a four-passage FAISS flat inner-product ``index`` and a
``docid`` file where pyserini keeps ``wikipedia-dpr-100w.dpr-multi`` (``$PYSERINI_CACHE/indexes/{stem}.{md5}/``),
next to the Lucene fixture of ``test_prebuilt_index`` whose stored documents give the passage texts. The DPR query
encoder is replaced by ``VocabEmbedder`` (injected at ``prebuilt_dense.query_encoder``), which also made the
passage vectors.

Vectors (VocabEmbedder axes zebra, stripes, lion, ants, penguin, ice over ``"Title: text"``):
p1 = ants (0,0,0,1,0,0); p2 = (2 zebra, 1 stripes)/sqrt(5); p3 = (1 zebra, 2 lion)/sqrt(5); p4 = ice (0,...,0,1)
("Penguins" is not the vocabulary's "penguin"). "zebra stripes" = (1,1,0,0,0,0)/sqrt(2), so the inner products are
p2 = 3/sqrt(10) = 0.9487, p3 = 1/sqrt(10) = 0.3162, p1 = p4 = 0.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from retrieval_fakes import PASSAGES, VocabEmbedder
from test_prebuilt_index import NAME, no_network, pyserini_cache, write_dpr_like_index  # noqa: F401
from typer.testing import CliRunner

from disambig.cli import app
from disambig.retrieval import build_retriever, prebuilt_dense
from disambig.retrieval.dense import passage_text
from disambig.retrieval.prebuilt import DENSE_INDEXES, prebuilt_folder
from disambig.retrieval.store import IndexCorruptError, IndexMissingError

DENSE = DENSE_INDEXES[NAME]
FETCH = rf"`disambig index fetch {NAME} --dense`"
runner = CliRunner()
DPR_QUERY_ENCODER = prebuilt_dense.query_encoder


def write_dpr_like_dense_index(folder) -> None:
    """pyserini's FAISS layout: ``index`` (IndexFlatIP over the passage vectors) and ``docid`` (one id a line)."""
    import faiss

    vectors = VocabEmbedder().encode([passage_text(p) for p in PASSAGES])
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    folder.mkdir(parents=True)
    faiss.write_index(index, str(folder / "index"))
    (folder / "docid").write_text("".join(f"{p['id']}\n" for p in PASSAGES))


@pytest.fixture
def fetched(pyserini_cache, no_network, tmp_path, monkeypatch):  # noqa: F811
    """Both prebuilt indexes in pyserini's cache, the fake query encoder injected; returns the dense folder."""
    monkeypatch.setenv("DISAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("disambig.retrieval.prebuilt_dense.query_encoder", lambda corpus: VocabEmbedder("fake-dpr"))
    write_dpr_like_index(prebuilt_folder(NAME))
    write_dpr_like_dense_index(prebuilt_folder(DENSE, "dense"))
    return prebuilt_folder(DENSE, "dense")


def test_the_dense_index_is_pyserinis_dpr_multi_in_its_cache_layout(pyserini_cache):  # noqa: F811
    stem, md5 = "faiss.wikipedia-dpr-100w.dpr_multi.20200127.f403c3", "fe307ef2e60ab6e6f3ad66e24a4144ae"
    assert DENSE == "wikipedia-dpr-100w.dpr-multi"
    assert prebuilt_folder(DENSE, "dense") == pyserini_cache / "indexes" / f"{stem}.{md5}"


def test_dense_search_ranks_by_the_query_encoders_inner_product_with_texts_from_lucene(fetched, settings):
    retriever = build_retriever("dense", "wikipedia-dpr", settings, auto_build=False)
    assert retriever.size == 4 and retriever.embedder.name == "fake-dpr"
    top, second = retriever.search("zebra stripes", 2)
    assert (top.id, top.title, top.text) == ("p2", "Zebra", "A zebra has black and white stripes.")
    assert top.score == pytest.approx(3 / math.sqrt(10), abs=1e-6)
    assert (second.id, second.score) == ("p3", pytest.approx(1 / math.sqrt(10), abs=1e-6))


def test_hybrid_fuses_the_prebuilt_bm25_and_dense_lists(fetched, settings):
    # BM25 ranks p2 (zebra x2, stripes) first and p3 (zebra) second, as dense does: RRF p2 = 2/61, p3 = 2/62.
    retriever = build_retriever("hybrid", "prebuilt:wikipedia-dpr-100w", settings, auto_build=False)
    top, second = retriever.search("zebra stripes", 2)
    assert (top.id, top.score) == ("p2", pytest.approx(2 / 61))
    assert (second.id, second.score) == ("p3", pytest.approx(2 / 62))


@pytest.mark.parametrize("retriever", ["dense", "hybrid"])
def test_search_command_over_wikipedia_dpr(fetched, retriever):
    result = runner.invoke(app, ["search", "zebra stripes", "--corpus", "wikipedia-dpr", "--retriever", retriever,
                                 "-k", "1"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert "p2" in result.output and "Zebra" in result.output


def test_fetch_dense_lists_both_indexes_and_fetches_the_query_encoder(fetched, monkeypatch):
    asked = []
    monkeypatch.setattr("disambig.retrieval.prebuilt_dense.download_query_encoder",
                        lambda corpus: asked.append(corpus) or "facebook/dpr-question_encoder-multiset-base")
    result = runner.invoke(app, ["index", "fetch", NAME, "--dense"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert asked == [NAME] and str(fetched) in result.output and str(prebuilt_folder(NAME)) in result.output
    assert "dense (facebook/dpr-question_encoder-multiset-base)" in result.output


def test_a_missing_query_encoder_is_one_line_naming_the_model_and_the_fetch(fetched, monkeypatch):
    monkeypatch.setattr(prebuilt_dense, "query_encoder", DPR_QUERY_ENCODER)  # the real one, for a model no cache has
    monkeypatch.setattr("disambig.retrieval.prebuilt.QUERY_ENCODERS", {DENSE: "disambig-tests/no-such-dpr-encoder"})
    result = runner.invoke(app, ["search", "zebra stripes", "--corpus", "wikipedia-dpr", "--retriever", "dense",
                                 "-k", "1"], env={"COLUMNS": "300"})
    assert result.exit_code != 0
    (line,) = [line for line in result.output.splitlines() if line.strip()]
    assert "'disambig-tests/no-such-dpr-encoder'" in line and f"disambig index fetch {NAME} --dense" in line


@pytest.mark.parametrize(("damage", "file", "what"), [
    (lambda folder: (folder / "index").write_bytes(b"not a FAISS index"), "index", "cannot be read"),
    (lambda folder: (folder / "index").unlink(), "index", "cannot be read"),
    (lambda folder: (folder / "docid").write_text("p1\np2\n"), "docid", "lists 2 docids for 4 vectors"),
    (lambda folder: (folder / "docid").unlink(), "docid", "cannot be read"),
])
def test_a_damaged_file_names_itself_and_the_fetch_command(fetched, settings, damage, file, what):
    damage(fetched)
    with pytest.raises(IndexCorruptError, match=rf"file '{fetched / file}' {what}.*; delete .* {FETCH}"):
        build_retriever("dense", "wikipedia-dpr", settings, auto_build=False).search("zebra", 1)


def test_a_dense_index_not_fetched_names_the_fetch_command(pyserini_cache, no_network, settings):  # noqa: F811
    write_dpr_like_index(prebuilt_folder(NAME))
    with pytest.raises(IndexMissingError, match=rf"'{DENSE}' is not in pyserini's cache .*{FETCH}"):
        build_retriever("dense", "wikipedia-dpr", settings, auto_build=False)


def test_a_prebuilt_corpus_without_a_paired_dense_index_is_refused(settings):
    with pytest.raises(ValueError, match="no prebuilt dense index is paired with 'msmarco-v1-passage'.*bm25"):
        build_retriever("hybrid", "prebuilt:msmarco-v1-passage", settings)


def test_the_fake_vectors_are_those_the_docstring_works_out():
    vectors = VocabEmbedder().encode([passage_text(p) for p in PASSAGES])
    np.testing.assert_allclose(vectors[1, :2], np.array([2, 1]) / math.sqrt(5), rtol=1e-6)


@pytest.mark.parametrize("kind", ["dense", "hybrid"])
def test_programs_compare_passages_with_their_own_encoder_not_the_dpr_question_encoder(kind, fetched, settings,
                                                                                        monkeypatch):
    from disambig.programs.rerank import embedder_of
    from disambig.retrieval.embedder import Embedder
    from disambig.retrieval.prebuilt_dense import DprQueryEncoder

    dpr = DprQueryEncoder("facebook/dpr-question_encoder-multiset-base", "wikipedia-dpr-100w")  # loads on encode
    monkeypatch.setattr("disambig.retrieval.prebuilt_dense.query_encoder", lambda corpus: dpr)
    retriever = build_retriever(kind, "wikipedia-dpr", settings, auto_build=False)
    assert retriever.embedder is dpr  # searches still encode questions with DPR
    chosen = embedder_of(retriever)  # ADF's gate, reranking: passages and questions in one space
    assert isinstance(chosen, Embedder) and chosen.name == "all-MiniLM-L6-v2"
    own = VocabEmbedder("minilm-like")  # an encoder that embeds passages too is kept
    assert embedder_of(type("Dense", (), {"embedder": own})()) is own
