"""Index builds report their progress as log lines (shown on stderr by the CLI), terminal or not."""

from __future__ import annotations

import logging

from retrieval_fakes import VocabEmbedder

from disambig.retrieval import progress as progress_module
from disambig.retrieval.dense import encode_passages
from disambig.retrieval.factory import ensure_index
from disambig.retrieval.progress import LoggedProgress, progress_line


def test_progress_line_says_how_far_and_how_long():
    # 2048 of 8840 = 23.2 %; 27 s so far: 2048 / 27 = 75.9/s -> (8840 - 2048) / 75.9 = 89.5 s left
    assert progress_line("dense index of wiki-slice", "passages encoded", 2048, 8840, 27.0) == (
        "dense index of wiki-slice: 2,048/8,840 passages encoded (23%), 27 s, 76/s, ~90 s left")
    assert progress_line("bm25 index of c", "passages indexed", 4, 4, 3.2) == (
        "bm25 index of c: 4/4 passages indexed (100%), 3 s, 1/s")


def test_a_resumed_build_counts_its_rate_from_where_it_resumed():
    # 6,000 kept from the interrupted run, 2,000 encoded in 100 s: 20/s; 2,000 left -> 100 s
    assert progress_line("dense index of c", "passages encoded", 8000, 10000, 100.0, first=6000) == (
        "dense index of c: 8,000/10,000 passages encoded (80%), 100 s, 20/s, ~100 s left")


def test_lines_are_throttled_but_the_first_and_last_always_shown(monkeypatch, caplog):
    clock = iter([0.0, 0.0, 1.0, 11.0, 12.0])  # construction, then one reading per call
    monkeypatch.setattr(progress_module.time, "perf_counter", lambda: next(clock))
    report = LoggedProgress("dense index of c", every=10)
    with caplog.at_level(logging.INFO, logger="disambig.retrieval.progress"):
        for done in (0, 2, 5, 10):
            report(done, 10)
    assert [r.getMessage() for r in caplog.records] == [
        "dense index of c: 0/10 passages (0%), 0 s",
        "dense index of c: 5/10 passages (50%), 11 s, 0/s, ~11 s left",
        "dense index of c: 10/10 passages (100%), 12 s, 1/s",
    ]


def test_encoding_reports_the_start_and_each_chunk(monkeypatch):
    monkeypatch.setattr("disambig.retrieval.dense.ENCODE_CHUNK", 2)
    calls = []
    passages = [{"id": str(i), "title": "", "text": f"word{i}"} for i in range(5)]
    encode_passages(passages, VocabEmbedder(), lambda done, total: calls.append((done, total)))
    assert calls == [(0, 5), (2, 5), (4, 5), (5, 5)]


def test_a_build_without_a_callback_logs_what_it_does(corpus, settings, caplog):
    with caplog.at_level(logging.INFO, logger="disambig"):
        ensure_index("dense", corpus, settings.cache_dir, VocabEmbedder())
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0].startswith("building the dense index of ") and "(once; later runs reuse it)" in lines[0]
    assert "4/4 passages encoded (100%), 0 s" in lines[-1]
