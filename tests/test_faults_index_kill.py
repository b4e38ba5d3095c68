"""``disambig index build`` killed with SIGKILL (the real command line in a subprocess, ``tests/index_scripted.py``:
a bag-of-words encoder slowed so a build can be caught mid-way), then run again: the index equals an uninterrupted
build's, the kept shards are not encoded again, and no half-built index is ever opened.

Kill moments: once the first shard is on disk (the parent sends SIGKILL), then (the child kills itself) as a shard's
vectors are published, as a shard's record is published, and as the finished ``.partial`` folder is renamed to the
index's name. ``test_index_streaming`` covers the same resume in-process, with an exception in place of a kill.

A build killed in its final steps (its vectors merged, its manifest written, its shards and ``build.json`` being
removed, its folder being renamed) is finished by the next run without encoding anything again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from retrieval_fakes import VocabEmbedder, write_corpus

from disambig.retrieval import build_retriever
from disambig.retrieval.store import IndexMissingError
from disambig.settings import Settings

SCRIPT = Path(__file__).with_name("index_scripted.py")
KILLED = -signal.SIGKILL
WORDS = ("zebra", "stripes", "lion", "ants", "penguin", "ice", "savanna", "night")
N_PASSAGES, SHARD = 400, 50  # 8 shards, one encode call each (ENCODE_CHUNK is 256)
SHARDS = N_PASSAGES // SHARD
DELAY_S = 0.3  # per shard: the first shard on disk leaves the others ~2 s, so the kill comes mid-build
ROWS = [{"id": f"d{i}", "title": WORDS[i % 8], "text": " ".join(WORDS[(i * j) % 8] for j in range(20))}
        for i in range(N_PASSAGES)]
FINAL_STEPS = {
    "after the merge": {"KILL_AT_REPLACE": "manifest.json"},  # vectors.npy and faiss.index written, no manifest yet
    "after the manifest": {"KILL_AT_REMOVE": "shards"},  # the encoded shards being deleted
    "before build.json is removed": {"KILL_AT_REMOVE": "build.json"},
    "at the rename": {"KILL_AT_PUBLISH": "1"},  # build.json gone: the folder holds exactly the finished index
}


@dataclass(frozen=True)
class Whole:
    """The corpus file and the cache holding its uninterrupted build."""

    corpus: str
    cache: Path


@pytest.fixture(scope="module")
def whole(tmp_path_factory) -> Whole:
    folder = tmp_path_factory.mktemp("whole")
    corpus = write_corpus(folder / "c.jsonl", ROWS)
    done = run(build_args(corpus), env(folder / "cache", folder / "encoded.log"))
    assert done.returncode == 0, done.stderr[-2000:]
    return Whole(corpus, folder / "cache")


def env(cache: Path, log: Path, delay: float = 0.0, **extra: str) -> dict[str, str]:
    return {**os.environ, "DISAMBIG_CACHE_DIR": str(cache), "DISAMBIG_EMBED_DELAY": str(delay),
            "DISAMBIG_EMBED_LOG": str(log), "DISAMBIG_THREADS": "1", "HF_HUB_OFFLINE": "1",
            "OMP_WAIT_POLICY": "PASSIVE", **extra}


def build_args(corpus: str) -> list[str]:
    return ["index", "build", "--corpus", corpus, "--kind", "dense", "--shard-size", str(SHARD)]


def run(args: list[str], environment: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], env=environment, capture_output=True, text=True,
                          timeout=180)


def encoded(log: Path) -> int:
    """Encode calls (= shards encoded) logged so far."""
    return len(log.read_text().splitlines()) if log.exists() else 0


def kept_shards(cache: Path) -> list[str]:
    """The shards an interrupted build holds finished (their record, written last, is there)."""
    return sorted(p.name for p in (cache / "indexes").glob("*.partial/shards/*.json"))


def finished(cache: Path) -> list[Path]:
    return [p for p in (cache / "indexes").iterdir() if not p.name.endswith(".partial")]


def assert_nothing_opens(corpus: str, cache: Path) -> None:
    """No finished index is there, and opening one is the 'not built' error: the partial folder is never read."""
    assert finished(cache) == []
    with pytest.raises(IndexMissingError, match="disambig index build"):
        build_retriever("dense", corpus, Settings(cache_dir=str(cache)), embedder=VocabEmbedder(), auto_build=False)


def assert_equals_the_uninterrupted_index(cache: Path, whole: Whole) -> None:
    (index,) = finished(cache)
    (whole_index,) = finished(whole.cache)
    assert index.name == whole_index.name and not list((cache / "indexes").glob("*.partial"))
    assert sorted(p.name for p in index.iterdir()) == sorted(p.name for p in whole_index.iterdir())
    np.testing.assert_array_equal(np.load(index / "vectors.npy"), np.load(whole_index / "vectors.npy"))
    assert (index / "faiss.index").read_bytes() == (whole_index / "faiss.index").read_bytes()
    volatile = ("build_seconds", "created", "source")  # when and how long; the source names the cache's file record
    manifests = [json.loads((folder / "manifest.json").read_text()) for folder in (index, whole_index)]
    assert [{k: v for k, v in m.items() if k not in volatile} for m in manifests][0] == \
        {k: v for k, v in manifests[1].items() if k not in volatile}
    one, two = (build_retriever("dense", whole.corpus, Settings(cache_dir=str(c)), embedder=VocabEmbedder(),
                                auto_build=False) for c in (cache, whole.cache))
    assert list(one._passages) == list(two._passages) and one.size == N_PASSAGES
    assert one.batch_search(["zebra lion", "ice night"], 5) == two.batch_search(["zebra lion", "ice night"], 5)


def test_an_index_build_killed_at_every_moment_resumes_to_the_uninterrupted_index(tmp_path, whole):
    corpus, cache, log = whole.corpus, tmp_path / "cache", tmp_path / "encoded.log"

    # 1. SIGKILL from outside once the first shard is finished
    child = subprocess.Popen([sys.executable, str(SCRIPT), *build_args(corpus)], env=env(cache, log, DELAY_S),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    while not kept_shards(cache):
        assert child.poll() is None, f"finished before the kill point: {child.stderr.read()[-2000:]}"
        assert time.monotonic() < deadline, "the first shard never came"
        time.sleep(0.02)
    child.send_signal(signal.SIGKILL)
    assert child.wait(timeout=30) == KILLED
    kept = kept_shards(cache)
    assert 1 <= len(kept) <= SHARDS - 4, kept  # room for the kills below
    assert encoded(log) <= len(kept) + 1  # at most the shard being written is lost
    assert_nothing_opens(corpus, cache)

    # 2-3. reruns that kill themselves as they publish a shard's vectors, then a shard's record: each resumes from
    # the shards finished before it, encodes the next ones, and a shard caught mid-publish is encoded again
    for kill in (f"{len(kept) + 1:05d}.npy", f"{len(kept) + 2:05d}.json"):
        before = encoded(log)
        killed = run(build_args(corpus), env(cache, log, KILL_AT_REPLACE=kill))
        assert killed.returncode == KILLED, f"{kill}: {killed.stderr[-2000:]}"
        assert_nothing_opens(corpus, cache)
        kept_now = kept_shards(cache)
        assert encoded(log) - before == len(kept_now) - len(kept) + 1 and set(kept) < set(kept_now), kill
        kept = kept_now

    # 4. the rerun that encodes the last shards is killed as it renames its finished .partial folder to the index's
    # name: still nothing opens (the folder holds every file, but is not the index until renamed)
    before = encoded(log)
    killed = run(build_args(corpus), env(cache, log, KILL_AT_PUBLISH="1"))
    assert killed.returncode == KILLED and encoded(log) - before == SHARDS - len(kept), killed.stderr[-2000:]
    assert_nothing_opens(corpus, cache)

    # 5. the last rerun puts the finished folder in place, encoding nothing: the index equals the uninterrupted one
    before = encoded(log)
    done = run(build_args(corpus), env(cache, log))
    assert done.returncode == 0 and encoded(log) == before, done.stderr[-2000:]
    assert_equals_the_uninterrupted_index(cache, whole)


@pytest.mark.parametrize("moment", FINAL_STEPS)
def test_a_build_killed_in_its_final_steps_is_finished_by_the_rerun_without_encoding_again(tmp_path, whole, moment):
    cache, log = tmp_path / "cache", tmp_path / "encoded.log"
    killed = run(build_args(whole.corpus), env(cache, log, **FINAL_STEPS[moment]))
    assert killed.returncode == KILLED and encoded(log) == SHARDS, killed.stderr[-2000:]
    assert_nothing_opens(whole.corpus, cache)

    done = run(build_args(whole.corpus), env(cache, log))
    assert done.returncode == 0, done.stderr[-2000:]
    assert encoded(log) == SHARDS and "discarding" not in done.stderr  # nothing encoded again, nothing thrown away
    assert_equals_the_uninterrupted_index(cache, whole)
