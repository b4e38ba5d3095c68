"""Two builds of the same corpus content from different paths (the same file name too, so the same index folder: the
cache is keyed by content) race to put that folder in place. The first to reach the rename holds the index's lock
while it renames; the other waits there, then finds the index in place, uses it and deletes its own copy. Neither
fails, and no half-moved folder is left. Threads in one process: the lock is ``flock`` on a file each opens."""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

from retrieval_fakes import PASSAGES, VocabEmbedder, write_corpus

from disambig.retrieval.factory import ensure_index
from disambig.retrieval.store import read_index, work_dir


class Flag(logging.Handler):
    """Sets ``event`` when a record containing ``text`` is logged."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text, self.event = text, threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.event.set()


def test_identical_corpora_at_two_paths_put_one_index_in_place_and_both_use_it(tmp_path, monkeypatch):
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
    first, second = (write_corpus(tmp_path / name / "c.jsonl", PASSAGES) for name in ("one", "two"))
    cache = tmp_path / "cache"
    first_work = work_dir(cache, first, "dense", {"encoder": VocabEmbedder().name}).name
    at_rename, second_done = threading.Event(), threading.Event()
    second_waits = Flag("waiting for it to finish")
    lock_log = logging.getLogger("disambig.retrieval.build_lock")
    real = os.rename

    def rename(src, dst, *args, **kwargs):
        if Path(src).name == first_work and not at_rename.is_set():  # the first build, about to put its folder
            at_rename.set()
            deadline = time.monotonic() + 60
            while not (second_waits.event.is_set() or second_done.is_set()) and time.monotonic() < deadline:
                time.sleep(0.01)  # until the second build waits at the lock (or, unguarded, has put its own)
        real(src, dst, *args, **kwargs)

    results: dict[str, object] = {}

    def build(name: str, corpus: str, done: threading.Event | None = None) -> None:
        try:
            results[name] = ensure_index("dense", corpus, cache, VocabEmbedder())
        except Exception as exc:  # noqa: BLE001 - the test reports it
            results[name] = exc
        finally:
            if done:
                done.set()

    monkeypatch.setattr(os, "rename", rename)
    lock_log.addHandler(second_waits)
    try:
        one = threading.Thread(target=build, args=("first", first))
        one.start()
        assert at_rename.wait(60)
        two = threading.Thread(target=build, args=("second", second, second_done))
        two.start()
        one.join(120)
        two.join(120)
    finally:
        lock_log.removeHandler(second_waits)
    assert second_waits.event.is_set() and isinstance(results["first"], Path), results
    assert results["second"] == results["first"]
    folder = results["first"]
    assert [p.name for p in (cache / "indexes").iterdir()] == [folder.name]  # no .partial, nothing half-moved
    manifest, passages = read_index(folder, first, "dense")
    assert manifest["corpus"] == first and len(passages) == len(PASSAGES)  # the first build's folder was kept
