"""The corpus hash of an index build: taken in the same pass that streams the passages (the file is read once),
equal to the file's SHA-256 (so indexes built before keep their folders), remembered by file identity so opening
the index later reads nothing; a corpus changed between runs still gets a new index, or stops a resumed build."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from retrieval_fakes import PASSAGES, FailingEmbedder, Interrupted, VocabEmbedder, write_corpus

from disambig.retrieval import build_retriever
from disambig.retrieval.corpus_identity import MEMO
from disambig.retrieval.factory import ensure_index, needs_build
from disambig.retrieval.store import IndexCorruptError


@pytest.fixture
def reads(monkeypatch):
    """The corpus files opened for reading, by path (every reader of a corpus goes through ``Path.open``)."""
    opened: list[str] = []
    real_open = Path.open

    def counting_open(self, mode="r", *args, **kwargs):
        if self.suffix == ".jsonl" and "r" in mode:
            opened.append(self.name)
        return real_open(self, mode, *args, **kwargs)

    monkeypatch.setattr(Path, "open", counting_open)
    return opened


def manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def test_a_build_reads_the_corpus_once_and_records_its_sha256(corpus, settings, reads):
    folder = ensure_index("bm25", corpus, settings.cache_dir)
    # once for the stream, plus the peek that checks for a first passage (it stops at line 1)
    assert reads == ["tiny.jsonl", "tiny.jsonl"]
    content = hashlib.sha256(Path(corpus).read_bytes()).hexdigest()
    assert manifest(folder)["corpus_sha256"] == manifest(folder)["source"]["sha256"] == content
    assert manifest(folder)["source"]["passages"] == 4
    memo = json.loads((Path(settings.cache_dir) / MEMO).read_text())
    assert memo[str(Path(corpus).resolve())]["sha256"] == content


def test_opening_a_built_index_rereads_nothing(corpus, settings, reads):
    ensure_index("bm25", corpus, settings.cache_dir)
    reads.clear()
    retriever = build_retriever("bm25", corpus, settings, auto_build=False)
    assert retriever.search("zebra stripes", 1)[0].id == "p2"
    assert reads == []  # found by file identity, not by hashing 21M passages again


def test_a_changed_corpus_gets_a_new_index(tmp_path, settings):
    corpus = write_corpus(tmp_path / "c.jsonl")
    first = ensure_index("bm25", corpus, settings.cache_dir)
    write_corpus(tmp_path / "c.jsonl", [*PASSAGES, {"id": "p9", "title": "Owl", "text": "An owl hunts at night."}])
    assert needs_build("bm25", corpus, settings.cache_dir)
    second = ensure_index("bm25", corpus, settings.cache_dir)
    assert second != first and manifest(second)["passages"] == 5


def test_an_index_built_before_the_memo_is_found_by_hashing_once(corpus, settings, reads):
    folder = ensure_index("bm25", corpus, settings.cache_dir)
    (Path(settings.cache_dir) / MEMO).unlink()  # as after an upgrade, or a `touch` of the corpus
    reads.clear()
    assert not needs_build("bm25", corpus, settings.cache_dir)  # hashed, not rebuilt
    assert ensure_index("bm25", corpus, settings.cache_dir) == folder
    assert reads == ["tiny.jsonl"]


def test_an_interrupted_build_of_a_rewritten_corpus_starts_over(tmp_path, settings):
    corpus = write_corpus(tmp_path / "c.jsonl")
    with pytest.raises(Interrupted):
        ensure_index("dense", corpus, settings.cache_dir, FailingEmbedder(1), shard_size=2)
    changed = [{**p, "text": p["text"] + " Changed."} for p in PASSAGES]
    write_corpus(tmp_path / "c.jsonl", changed)  # another size: the kept shard is not reused
    counting = VocabEmbedder()
    folder = ensure_index("dense", corpus, settings.cache_dir, counting, shard_size=2)
    assert counting.calls == 2
    retriever = build_retriever("dense", corpus, settings, embedder=VocabEmbedder(), auto_build=False)
    assert retriever.folder == folder and retriever._passages[0]["text"].endswith("Changed.")


def test_a_corpus_changed_behind_the_same_size_and_mtime_stops_the_resume(tmp_path, settings):
    corpus = write_corpus(tmp_path / "c.jsonl")
    with pytest.raises(Interrupted):
        ensure_index("dense", corpus, settings.cache_dir, FailingEmbedder(1), shard_size=2)
    stamp = os.stat(corpus)
    swapped = Path(corpus).read_text().replace("zebra", "zorse")  # same length
    Path(corpus).write_text(swapped)
    os.utime(corpus, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    with pytest.raises(IndexCorruptError, match=r"changed since the interrupted build .* \(shard 0 differs\); "
                                                r"start over with `disambig index build --corpus .* --kind dense "
                                                r"--force`"):
        ensure_index("dense", corpus, settings.cache_dir, VocabEmbedder(), shard_size=2)


def test_a_cache_folder_that_cannot_be_written_leaves_the_hash_unremembered(tmp_path):
    from disambig.retrieval.corpus_identity import FileIdentity, remember, remembered

    corpus = Path(write_corpus(tmp_path / "c.jsonl"))
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder should be")
    remember(blocked, FileIdentity.of(corpus), "abc", 4)  # no error: the memo only saves work
    assert remembered(blocked, corpus) is None and list(tmp_path.glob("**/*.tmp")) == []
    remember(tmp_path / "cache", FileIdentity.of(corpus), "abc", 4)
    assert remembered(tmp_path / "cache", corpus) == {"sha256": "abc", "passages": 4}
