"""The dense index by size: exact up to 100k vectors, a compressed inverted file above, or a forced factory."""

from __future__ import annotations

import json

import numpy as np
import pytest
from retrieval_fakes import VocabEmbedder

from disambig.errors import ConfigurationError
from disambig.retrieval import build_retriever
from disambig.retrieval import faiss_index as fi
from disambig.retrieval.factory import ensure_index, needs_build


def clustered(n: int, dim: int = 32, centres: int = 20, seed: int = 0) -> np.ndarray:
    """``n`` unit vectors around ``centres`` random directions (noise 0.3): structure an inverted file can use."""
    rng = np.random.default_rng(seed)
    middle = rng.standard_normal((centres, dim))
    x = middle[rng.integers(0, centres, n)] + 0.3 * rng.standard_normal((n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def recall(found: np.ndarray, exact: np.ndarray) -> float:
    """Mean share of the exact top-k ids that the approximate top-k also holds."""
    return float(np.mean([len(set(f) & set(e)) / len(e) for f, e in zip(found, exact, strict=True)]))


@pytest.mark.parametrize(("n", "cells"), [(4, 1), (1_000_000, 4096), (21_000_000, 16384), (100_000, 1024)])
def test_cells_are_the_power_of_two_nearest_four_root_n(n, cells):
    # 4 * sqrt(1e6) = 4000 -> 2^12; 4 * sqrt(21e6) = 18,330 -> 2^14.16 -> 2^14; 4 * sqrt(1e5) = 1,265 -> 2^10.3;
    # 4 passages: at most 4 // 39 = 0 cells, so 1.
    assert fi.cells_for(n) == cells


def test_exact_up_to_the_limit_and_a_scalar_quantised_inverted_file_above():
    assert fi.default_factory(8_840) == "Flat"  # the wiki slice stays exact
    assert fi.default_factory(100_000) == "Flat"
    assert fi.default_factory(100_001) == "IVF1024,SQ8"
    assert fi.default_factory(1_000_000) == "IVF4096,SQ8"


@pytest.mark.parametrize(("nlist", "nprobe"), [(16, 16), (128, 64), (226, 64), (4096, 64), (8192, 128),
                                               (16384, 256)])
def test_default_nprobe_is_64_cells_or_one_in_64(nlist, nprobe):
    assert fi.default_nprobe(nlist) == nprobe  # min(nlist, max(64, nlist // 64))


def test_forced_ivf_pq_searches_round_trips_and_its_recall_is_measured(tmp_path):
    vectors, queries = clustered(3000), clustered(50, seed=1)
    shards = [vectors[:1000], vectors[1000:2200], vectors[2200:]]  # filled shard by shard
    # "np": no polysemous training, which only renumbers the PQ centroids for Hamming filtering (off in search): the
    # same codes and recall, 0.6 s of training instead of 17 s.
    index = fi.fill_index("IVF16,PQ8np", shards)
    assert type(index).__name__ == "IndexIVFPQ" and index.ntotal == 3000
    fi.configure(index, fi.default_search("IVF16,PQ8np", index))
    assert fi.faiss_ivf(index).nprobe == 16  # fewer cells than the floor of 64: all of them

    fi.configure(index, fi.SearchParams(nprobe=4))
    _, found = index.search(queries, 10)
    fi.write(index, tmp_path / "ivfpq.index")
    reopened = fi.read(tmp_path / "ivfpq.index")
    fi.configure(reopened, fi.SearchParams(nprobe=4))
    np.testing.assert_array_equal(reopened.search(queries, 10)[1], found)

    _, exact = fi.fill_index("Flat", shards).search(queries, 10)
    measured = recall(found, exact)
    assert 0.5 < measured <= 1.0  # 8-byte codes of 32-d vectors: approximate, but far above chance (10/3000)
    fi.configure(reopened, fi.SearchParams(nprobe=16))  # every cell: only the quantisation is left
    assert recall(reopened.search(queries, 10)[1], exact) >= measured


def test_training_sample_is_drawn_across_shards_in_row_order():
    shards = [np.arange(10, dtype=np.float32).reshape(5, 2), np.arange(10, 16, dtype=np.float32).reshape(3, 2)]
    everything = fi.training_sample(shards, 100)
    np.testing.assert_array_equal(everything, np.arange(16, dtype=np.float32).reshape(8, 2))
    some = fi.training_sample(shards, 4)
    assert some.shape == (4, 2) and list(some[:, 0]) == sorted(some[:, 0])
    np.testing.assert_array_equal(some, fi.training_sample(shards, 4))  # fixed seed


@pytest.mark.parametrize("factory", ["", "IVF4,Nonsense", "PQ7"])
def test_a_factory_faiss_cannot_make_is_a_clear_error(factory):
    with pytest.raises(ConfigurationError, match=r"faiss (cannot make index|factory must be).*'IVF4096,SQ8'"):
        fi.new_index(factory, 32)


@pytest.mark.parametrize(("nprobe", "ef_search"), [(0, None), (None, -3), (1.5, None), (True, None)])
def test_search_parameters_must_be_positive_integers(nprobe, ef_search):
    with pytest.raises(ConfigurationError, match="must be a positive integer"):
        fi.SearchParams(nprobe, ef_search)


def test_a_small_corpus_keeps_the_exact_index(corpus, settings):
    retriever = build_retriever("dense", corpus, settings, embedder=VocabEmbedder())
    manifest = json.loads((retriever.folder / "manifest.json").read_text())
    assert manifest["faiss_factory"] == "Flat" and manifest["faiss_index"] == "IndexFlatIP"
    assert manifest["search"] == {}


def test_an_index_without_factory_in_its_manifest_still_searches_the_same(corpus, settings):
    # Indexes built before this change (the wiki slice's) have no faiss_factory / search in their manifest.
    retriever = build_retriever("dense", corpus, settings, embedder=VocabEmbedder())
    before = retriever.search("zebra stripes", 3)
    path = retriever.folder / "manifest.json"
    manifest = json.loads(path.read_text())
    path.write_text(json.dumps({k: v for k, v in manifest.items() if k not in ("faiss_factory", "search")}))
    assert not needs_build("dense", corpus, settings.cache_dir, VocabEmbedder(), "Flat")
    again = build_retriever("dense", corpus, settings, embedder=VocabEmbedder(), auto_build=False)
    assert again.search("zebra stripes", 3) == before


def test_another_factory_is_built_from_the_stored_vectors_without_encoding_again(corpus, settings, monkeypatch):
    folder = ensure_index("dense", corpus, settings.cache_dir, VocabEmbedder())
    vectors = np.load(folder / "vectors.npy")
    monkeypatch.setattr(VocabEmbedder, "encode", lambda self, texts: pytest.fail("encoded again"))
    ensure_index("dense", corpus, settings.cache_dir, VocabEmbedder(), faiss_factory="IVF2,SQ8",
                 search=fi.SearchParams(nprobe=2))
    manifest = json.loads((folder / "manifest.json").read_text())
    assert (manifest["faiss_factory"], manifest["search"], manifest["passages"]) == ("IVF2,SQ8", {"nprobe": 2}, 4)
    assert fi.read(folder / "faiss.index").ntotal == 4 and np.array_equal(np.load(folder / "vectors.npy"), vectors)


def test_a_forced_factory_rebuilds_and_search_parameters_update_in_place(corpus, settings):
    exact = build_retriever("dense", corpus, settings, embedder=VocabEmbedder())
    assert needs_build("dense", corpus, settings.cache_dir, VocabEmbedder(), "IVF1,SQ8")
    folder = ensure_index("dense", corpus, settings.cache_dir, VocabEmbedder(), faiss_factory="IVF1,SQ8")
    manifest = json.loads((folder / "manifest.json").read_text())
    assert (manifest["faiss_factory"], manifest["faiss_index"]) == ("IVF1,SQ8", "IndexIVFScalarQuantizer")
    assert manifest["search"] == {"nprobe": 1}
    compressed = build_retriever("dense", corpus, settings, embedder=VocabEmbedder(), auto_build=False)
    assert [p.id for p in compressed.search("zebra stripes", 2)] == [p.id for p in exact.search("zebra stripes", 2)]

    ensure_index("dense", corpus, settings.cache_dir, VocabEmbedder(), search=fi.SearchParams(nprobe=8))
    assert json.loads((folder / "manifest.json").read_text())["search"] == {"nprobe": 8}
    assert not needs_build("dense", corpus, settings.cache_dir, VocabEmbedder(), "IVF1,SQ8")
