"""A dense build stopped after it finished but before its folder was renamed into place (an exception at the rename
standing in for a kill) is put in place by the next build, encoding nothing, when its manifest, passage store,
index files and corpus SHA-256 agree with the corpus and settings asked for; anything else is discarded with one
warning line saying why, and built again. A corpus refused mid-build says that its partial build stays."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from retrieval_fakes import Interrupted, VocabEmbedder, write_corpus

from disambig.errors import ConfigurationError
from disambig.retrieval import build_retriever
from disambig.retrieval.dense import built_factory
from disambig.retrieval.factory import ensure_index
from disambig.retrieval.store import work_dir

WORDS = ("zebra", "stripes", "lion", "ants", "penguin", "ice", "savanna", "night")
N_PASSAGES, SHARD = 150, 50  # 3 shards, one encode call each (ENCODE_CHUNK is 256)


def rows(shift: int = 0) -> list[dict[str, str]]:
    return [{"id": f"d{i}", "title": WORDS[i % 8], "text": " ".join(WORDS[(i * j + shift) % 8] for j in range(20))}
            for i in range(N_PASSAGES)]


def stop_at_rename(corpus: str, cache: Path, monkeypatch, **options) -> Path:
    """Build ``corpus`` and stop it as its finished ``.partial`` folder is renamed to the index's name; returns the
    folder left behind."""
    real = os.rename

    def rename(src, dst, *args, **kwargs):
        if str(src).endswith(".partial"):
            raise Interrupted("stopped at the rename")
        real(src, dst, *args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(os, "rename", rename)
        with pytest.raises(Interrupted):
            ensure_index("dense", corpus, cache, VocabEmbedder(), shard_size=SHARD, **options)
    partial = work_dir(cache, corpus, "dense", {"encoder": VocabEmbedder().name})
    assert (partial / "manifest.json").is_file() and not (partial / "shards").exists()
    return partial


def edit_manifest(folder: Path, **changes) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, **changes}))


def drop_a_passage(folder: Path) -> None:
    with sqlite3.connect(folder / "passages.sqlite") as db:
        db.execute("DELETE FROM passages WHERE row = 0")


def trim_vectors(folder: Path, rows_: slice, dims: slice) -> None:
    np.save(folder / "vectors.npy", np.load(folder / "vectors.npy")[rows_, dims])


TAMPERINGS = {  # what is done to the stopped build (or its corpus), and the reason the next build gives
    "a vector lost": (lambda f, c: trim_vectors(f, slice(0, -1), slice(None)),
                      "its vectors.npy holds float32 (149, 6), the manifest says float32 (150, 6)"),
    "a dimension lost": (lambda f, c: trim_vectors(f, slice(None), slice(0, -1)),
                         "its vectors.npy holds float32 (150, 5), the manifest says float32 (150, 6)"),
    "FAISS file damaged": (lambda f, c: (f / "faiss.index").write_bytes(b"not an index"),
                           "its faiss.index cannot be read (RuntimeError)"),
    "manifest cut": (lambda f, c: (f / "manifest.json").write_text((f / "manifest.json").read_text()[:40]),
                     "its manifest.json is unreadable"),
    "another encoder": (lambda f, c: edit_manifest(f, params={"encoder": "other-model"}),
                        "it was built with {'encoder': 'other-model'}, not {'encoder': 'vocab-bow'}"),
    "a passage lost": (lambda f, c: drop_a_passage(f), "its passage store holds 149 passages, its manifest says 150"),
    "corpus rewritten": (lambda f, c: write_corpus(Path(c), rows(shift=3)),
                         "the corpus file's content changed since (another SHA-256)"),
}


def test_a_build_stopped_at_its_rename_is_put_in_place_by_the_next_without_encoding(tmp_path, monkeypatch):
    corpus = write_corpus(tmp_path / "c.jsonl", rows())
    partial = stop_at_rename(corpus, tmp_path / "cache", monkeypatch)
    counting = VocabEmbedder()
    index = ensure_index("dense", corpus, tmp_path / "cache", counting, shard_size=SHARD)
    assert counting.calls == 0 and not partial.exists()
    whole = ensure_index("dense", corpus, tmp_path / "whole", VocabEmbedder(), shard_size=SHARD)
    assert index.name == whole.name
    assert sorted(p.name for p in index.iterdir()) == sorted(p.name for p in whole.iterdir())
    np.testing.assert_array_equal(np.load(index / "vectors.npy"), np.load(whole / "vectors.npy"))
    assert (index / "faiss.index").read_bytes() == (whole / "faiss.index").read_bytes()
    assert ensure_index("dense", corpus, tmp_path / "cache", counting, shard_size=SHARD) == index  # and it stays


@pytest.mark.parametrize("tampering", TAMPERINGS)
def test_a_stopped_build_that_does_not_match_is_discarded_in_one_line_and_built_again(tmp_path, settings, monkeypatch,
                                                                                       caplog, tampering):
    corpus = write_corpus(tmp_path / "c.jsonl", rows())
    partial = stop_at_rename(corpus, tmp_path / "cache", monkeypatch)
    tamper, reason = TAMPERINGS[tampering]
    tamper(partial, corpus)
    counting = VocabEmbedder()
    with caplog.at_level(logging.WARNING, logger="disambig.retrieval"):
        ensure_index("dense", corpus, tmp_path / "cache", counting, shard_size=SHARD)
    assert counting.calls == N_PASSAGES // SHARD  # every shard encoded again
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warning == f"discarding the finished build in {partial}: {reason}; building the index again"
    retriever = build_retriever("dense", corpus, settings, embedder=VocabEmbedder(), auto_build=False)
    assert retriever.size == N_PASSAGES and not partial.exists()


def test_a_stopped_build_asked_for_with_another_faiss_factory_is_reindexed_not_encoded(tmp_path, monkeypatch):
    corpus = write_corpus(tmp_path / "c.jsonl", rows())
    stop_at_rename(corpus, tmp_path / "cache", monkeypatch)  # the default factory: Flat
    counting = VocabEmbedder()
    index = ensure_index("dense", corpus, tmp_path / "cache", counting, shard_size=SHARD, faiss_factory="IVF2,SQ8")
    assert counting.calls == 0 and built_factory(index) == "IVF2,SQ8"


def test_a_forced_rebuild_stopped_while_replacing_the_index_is_finished_by_the_next_build(tmp_path, monkeypatch):
    corpus = write_corpus(tmp_path / "c.jsonl", rows())
    index = ensure_index("dense", corpus, tmp_path / "cache", VocabEmbedder(), shard_size=SHARD)
    stop_at_rename(corpus, tmp_path / "cache", monkeypatch, force=True)  # the old index moved aside, the new not in
    assert not index.exists() and (tmp_path / "cache" / "indexes" / f"{index.name}.replaced.partial").is_dir()
    counting = VocabEmbedder()
    assert ensure_index("dense", corpus, tmp_path / "cache", counting, shard_size=SHARD) == index
    assert counting.calls == 0 and [p.name for p in (tmp_path / "cache" / "indexes").iterdir()] == [index.name]


def test_a_corpus_refused_mid_build_says_its_partial_build_stays(tmp_path):
    passages = rows()
    passages[120]["id"] = "d7"  # a duplicate in the third shard
    corpus = write_corpus(tmp_path / "dup.jsonl", passages)
    with pytest.raises(ConfigurationError) as refused:
        ensure_index("dense", corpus, tmp_path / "cache", VocabEmbedder(), shard_size=SHARD)
    (partial,) = (tmp_path / "cache" / "indexes").glob("*.partial")
    assert str(refused.value) == (f"corpus {corpus!r}: duplicate passage id 'd7' (shard 2); passage ids must be "
                                  f"unique; the build so far stays in {str(partial)!r} for the next build of this "
                                  "file to resume (or delete it)")
