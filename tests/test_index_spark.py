"""``disambig index build --engine spark``: shards encoded in waves (kept ones skipped), the options it refuses, and
on a local[2] Spark with the real MiniLM the same index as a local build (same ids, vectors equal to 1e-5)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from retrieval_fakes import VocabEmbedder, write_corpus
from typer.testing import CliRunner

from disambig.cli import app
from disambig.retrieval.factory import ensure_index
from disambig.retrieval.passage_store import PassageWriter
from disambig.retrieval.shards import shard_path
from disambig.retrieval.spark_encode import SparkEncoding, _encode_in_waves
from disambig.retrieval.store import CorpusShards

WORDS = ("zebra", "stripes", "lion", "ants", "penguin", "ice", "savanna", "night")


def small_corpus(path, n: int = 40) -> str:
    """``n`` passages ``d0...`` of six words each, varying with the row."""
    return write_corpus(path, [{"id": f"d{i}", "title": WORDS[i % 8],
                                "text": " ".join(WORDS[(i * j + j) % 8] for j in range(6))} for i in range(n)])


def shards_of(corpus: str, tmp_path, size: int) -> CorpusShards:
    return CorpusShards(corpus, size, 40, PassageWriter(tmp_path / "passages.sqlite", corpus))


def test_waves_encode_only_missing_shards_in_order(tmp_path):
    corpus = small_corpus(tmp_path / "c.jsonl")
    folder = tmp_path / "build"
    sent: list[list[int]] = []

    def run(rows):  # stands in for Spark: one wave of (shard number, texts)
        sent.append([n for n, _ in rows])
        return [VocabEmbedder().encode(texts) for _, texts in rows]

    first = _encode_in_waves(folder, shards_of(corpus, tmp_path, 8), 2, run, None)
    assert sent == [[0, 1], [2, 3], [4]]  # 40 passages / 8 = 5 shards, 2 a wave
    shard_path(folder, 3).unlink()  # as if the build stopped before shard 3 was kept
    sent.clear()
    again = _encode_in_waves(folder, shards_of(corpus, tmp_path, 8), 2, run, None)
    assert sent == [[3]]
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))


@pytest.mark.parametrize(("args", "message"), [
    (["--master", "local[2]"], "--master 'local[2]' applies to --engine spark only"),
    (["--engine", "gpu"], "unknown --engine 'gpu'; choose local or spark"),
    (["--engine", "spark", "--kind", "bm25"], "--engine spark encodes dense shards"),
    (["--engine", "spark", "--kind", "dense"], None),
])
def test_engine_options_are_checked_first(tmp_path, monkeypatch, args, message):
    monkeypatch.setenv("DISAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("disambig.cli.index_cmd.make_embedder", lambda model: VocabEmbedder())
    built = []
    monkeypatch.setattr("disambig.cli.index_cmd.build_with_progress",
                        lambda console, kind, corpus, settings, encoder, force, dense: built.append(dense.encode)
                        or (tmp_path, True))
    result = CliRunner().invoke(app, ["index", "build", "--corpus", small_corpus(tmp_path / "c.jsonl"), *args],
                                env={"COLUMNS": "200"})
    if message is None:
        assert built == [SparkEncoding("all-MiniLM-L6-v2", "local[2]")], result.output
    else:
        assert result.exit_code != 0 and message in " ".join(result.output.split()) and not built


@pytest.mark.slow  # starts Spark (Java 17) and loads MiniLM in two workers: ~1 min
def test_spark_local2_builds_the_index_a_local_build_does(tmp_path):
    from disambig.retrieval.embedder import Embedder
    from disambig.retrieval.store import read_index

    corpus = small_corpus(tmp_path / "c.jsonl")
    local = ensure_index("dense", corpus, tmp_path / "local", Embedder(), shard_size=8)
    spark = ensure_index("dense", corpus, tmp_path / "spark", Embedder(), shard_size=8,
                         encode=SparkEncoding("all-MiniLM-L6-v2", "local[2]", wave=2))
    assert local.name == spark.name  # same key: corpus, kind, encoder
    (m1, p1), (m2, p2) = read_index(local, corpus, "dense"), read_index(spark, corpus, "dense")
    assert [p["id"] for p in p1] == [p["id"] for p in p2] == [f"d{i}" for i in range(40)]
    assert (m1["faiss_factory"], m1["passages"]) == (m2["faiss_factory"], m2["passages"]) == ("Flat", 40)
    v1, v2 = np.load(local / "vectors.npy"), np.load(spark / "vectors.npy")
    assert v1.shape == v2.shape == (40, 384) and np.abs(v1 - v2).max() < 1e-5
    assert json.loads((spark / "manifest.json").read_text())["source"]["passages"] == 40
