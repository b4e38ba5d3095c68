"""``--cache`` keeps rankings on disk: a repeated query is answered without the wrapped retriever."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from program_fakes import FakeRetriever
from retrieval_fakes import VocabEmbedder

from disambig.retrieval import build_retriever
from disambig.retrieval.cache import BULK, CachedEmbedder, CachedRetriever


def test_a_repeated_query_is_read_from_disk_even_by_a_new_process(tmp_path):
    first = CachedRetriever(FakeRetriever(), tmp_path)
    hits = first.batch_search(["goals in football", "who won the cup"], 3)
    assert first.retriever.calls == 2 and (first.hits, first.misses) == (0, 2)
    again = CachedRetriever(FakeRetriever(), tmp_path)  # a later run: a new wrapper on the same file
    assert again.search("who won the cup", 3) == hits[1]
    assert again.batch_search(["goals in football"], 3) == [hits[0]]
    assert again.retriever.calls == 0 and again.hits == 2


def test_another_k_or_another_index_is_a_miss(tmp_path):
    cached = CachedRetriever(FakeRetriever(), tmp_path)
    cached.search("goals in football", 3)
    cached.search("goals in football", 2)
    assert cached.retriever.calls == 2
    other = FakeRetriever()
    other.folder = tmp_path / "wiki-slice-bm25-0123456789ab"  # another index: its own identity
    assert CachedRetriever(other, tmp_path).search("goals in football", 3) and other.calls == 1


def test_the_wrapper_passes_everything_else_through_and_is_shared_by_copies(tmp_path):
    inner = FakeRetriever()
    cached = CachedRetriever(inner, tmp_path)
    assert cached.size == inner.size and cached.passages is inner.passages and cached.name == "fake"
    assert copy.deepcopy(cached) is cached


def test_cache_setting_wraps_the_built_retriever(corpus, settings):
    plain = build_retriever("dense", corpus, settings, embedder=VocabEmbedder())
    cached = build_retriever("dense", corpus, settings.with_overrides(lm_cache=True), embedder=VocabEmbedder())
    assert not isinstance(plain, CachedRetriever) and isinstance(cached, CachedRetriever)
    assert cached.search("zebra stripes", 2) == plain.search("zebra stripes", 2)
    assert cached.stored_vectors(["p2"]) is not None  # the reranker still reads the index's vectors
    assert isinstance(cached.embedder, CachedEmbedder) and cached.embedder.embedder.name == "vocab-bow"


class CountingEmbedder(VocabEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.encoded: list[str] = []

    def encode(self, texts, **kwargs):
        self.encoded += list(texts)
        return super().encode(texts)


def test_query_embeddings_are_read_from_disk_and_keep_the_encoders_name(tmp_path):
    first = CachedEmbedder(CountingEmbedder(), tmp_path)
    vectors = first.encode(["zebra stripes", "penguin ice"])
    again = CachedEmbedder(CountingEmbedder(), tmp_path)
    np.testing.assert_array_equal(again.encode(["penguin ice", "zebra stripes"]), vectors[::-1])
    assert again.embedder.encoded == [] and again.hits == 2
    assert again.encode(["lion"]).shape == (1, vectors.shape[1]) and again.embedder.encoded == ["lion"]
    assert again.name == VocabEmbedder().name  # the dense index is keyed by it


def test_a_bulk_encode_is_not_kept(tmp_path):
    cached = CachedEmbedder(CountingEmbedder(), tmp_path)
    texts = [f"passage {i}" for i in range(BULK + 1)]
    cached.encode(texts)
    cached.encode(texts)
    assert len(cached.embedder.encoded) == 2 * len(texts) and cached.hits == 0


def test_a_cached_bm25_retriever_offers_a_cached_encoder_to_its_reranker(corpus, settings):
    cached = build_retriever("bm25", corpus, settings.with_overrides(lm_cache=True))
    assert isinstance(cached, CachedRetriever) and isinstance(cached.embedder, CachedEmbedder)
    with pytest.raises(TypeError, match="list of strings"):
        cached.embedder.encode("one string")
