"""Streaming, resumable index builds: bounded memory, interrupted = uninterrupted, verified shards, sources."""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pytest
from retrieval_fakes import PASSAGES, FailingEmbedder, Interrupted, VocabEmbedder, write_corpus

from disambig.errors import ConfigurationError
from disambig.retrieval import build_retriever
from disambig.retrieval.factory import ensure_index
from disambig.retrieval.store import IndexCorruptError

WORDS = ("zebra", "stripes", "lion", "ants", "penguin", "ice", "savanna", "night")


def big_corpus(path, n: int, words: int = 300) -> str:
    """``n`` passages of ``words`` words each (~2 KB), ids ``d0...``; word choice varies with the row."""
    rows = [{"id": f"d{i}", "title": WORDS[i % 8], "text": " ".join(WORDS[(i * j) % 8] for j in range(words))}
            for i in range(n)]
    return write_corpus(path, rows)



def test_a_corpus_larger_than_the_budget_builds_in_bounded_memory(tmp_path, settings, monkeypatch, corpus):
    ensure_index("dense", corpus, settings.cache_dir, VocabEmbedder())  # imports happen outside the measurement
    corpus = big_corpus(tmp_path / "big.jsonl", 3000)  # ~5.9 MB, ~2 KB a passage
    size = (tmp_path / "big.jsonl").stat().st_size
    held = []
    encode = VocabEmbedder.encode
    monkeypatch.setattr(VocabEmbedder, "encode", lambda self, texts: held.append(len(texts)) or encode(self, texts))
    tracemalloc.start()
    try:
        ensure_index("dense", corpus, settings.cache_dir, VocabEmbedder(), shard_size=100)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    budget = size // 4  # the whole corpus in memory would be ~4x its file size as Python dicts
    assert peak < budget, f"peak {peak:,} B traced for a {size:,} B corpus"
    assert max(held) <= 100 and sum(held) == 3000  # never more than one shard encoded at once
    retriever = build_retriever("dense", corpus, settings, embedder=VocabEmbedder(), auto_build=False)
    assert retriever.size == 3000 and retriever.search("zebra", 1)[0].id.startswith("d")


@pytest.mark.parametrize("factory", [None, "IVF2,SQ8"])
def test_an_interrupted_build_resumes_and_equals_an_uninterrupted_one(tmp_path, settings, factory):
    from disambig.settings import Settings

    corpus = big_corpus(tmp_path / "c.jsonl", 250, words=20)
    # ENCODE_CHUNK is 256, so each 50-passage shard is one encode call: fail during the fourth shard.
    with pytest.raises(Interrupted):
        ensure_index("dense", corpus, settings.cache_dir, FailingEmbedder(3), shard_size=50, faiss_factory=factory)
    (partial,) = (tmp_path / "cache" / "indexes").glob("*.partial")
    assert sorted(p.name for p in (partial / "shards").glob("*.npy")) == ["00000.npy", "00001.npy", "00002.npy"]

    counting = VocabEmbedder()
    resumed = ensure_index("dense", corpus, settings.cache_dir, counting, shard_size=50, faiss_factory=factory)
    assert counting.calls == 2  # shards 3 and 4 only
    assert not partial.exists()
    other = Settings(cache_dir=str(tmp_path / "other"))
    whole = ensure_index("dense", corpus, other.cache_dir, VocabEmbedder(), shard_size=50, faiss_factory=factory)
    np.testing.assert_array_equal(np.load(resumed / "vectors.npy"), np.load(whole / "vectors.npy"))
    assert (resumed / "faiss.index").read_bytes() == (whole / "faiss.index").read_bytes()
    one = build_retriever("dense", corpus, settings, embedder=VocabEmbedder(), auto_build=False)
    two = build_retriever("dense", corpus, other, embedder=VocabEmbedder(), auto_build=False)
    assert list(one._passages) == list(two._passages)
    assert one.batch_search(["zebra lion", "ice"], 5) == two.batch_search(["zebra lion", "ice"], 5)


def test_a_corrupt_shard_is_one_line_naming_the_file_and_the_rebuild_command(tmp_path, settings):
    corpus = big_corpus(tmp_path / "c.jsonl", 150, words=20)
    with pytest.raises(Interrupted):
        ensure_index("dense", corpus, settings.cache_dir, FailingEmbedder(2), shard_size=50)
    (shard,) = (tmp_path / "cache" / "indexes").glob("*.partial/shards/00001.npy")
    data = bytearray(shard.read_bytes())
    data[-4:] = b"\xff\xff\xff\xff"
    shard.write_bytes(bytes(data))
    with pytest.raises(IndexCorruptError) as caught:
        ensure_index("dense", corpus, settings.cache_dir, VocabEmbedder(), shard_size=50)
    message = str(caught.value)
    assert "\n" not in message and str(shard) in message and "does not match its checksum" in message
    assert message.endswith(f"start over with `disambig index build --corpus {corpus} --kind dense --force`")
    shard.unlink()  # as the message says: re-encode that shard only
    counting = VocabEmbedder()
    ensure_index("dense", corpus, settings.cache_dir, counting, shard_size=50)
    assert counting.calls == 2  # shard 1 again, and shard 2 never finished


def test_force_discards_an_interrupted_build(tmp_path, settings):
    corpus = big_corpus(tmp_path / "c.jsonl", 150, words=20)
    with pytest.raises(Interrupted):
        ensure_index("dense", corpus, settings.cache_dir, FailingEmbedder(2), shard_size=50)
    counting = VocabEmbedder()
    ensure_index("dense", corpus, settings.cache_dir, counting, shard_size=50, force=True)
    assert counting.calls == 3


def test_parquet_and_beir_sources_build_the_index_a_jsonl_does(tmp_path, settings, corpus):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from retrieval_fakes import write_beir

    pq.write_table(pa.Table.from_pylist(PASSAGES), tmp_path / "c.parquet")
    beir = write_beir(tmp_path / "beir", {"q1": "zebra"}, {"q1": "p2"})
    expected = build_retriever("dense", corpus, settings, embedder=VocabEmbedder()).search("lion zebra", 4)
    for source, fmt in ((str(tmp_path / "c.parquet"), "parquet"), (beir, "beir")):
        retriever = build_retriever("dense", source, settings, embedder=VocabEmbedder())
        assert retriever.search("lion zebra", 4) == expected
        manifest = json.loads((retriever.folder / "manifest.json").read_text())
        assert manifest["source"]["format"] == fmt and manifest["source"]["passages"] == 4


def test_a_duplicate_id_names_it(tmp_path, settings):
    corpus = write_corpus(tmp_path / "dup.jsonl", [*PASSAGES, {"id": "p3", "title": "", "text": "again"}])
    with pytest.raises(ConfigurationError, match="duplicate passage id 'p3' .* passage ids must be unique"):
        build_retriever("dense", corpus, settings, embedder=VocabEmbedder())
