"""``bench/reliability/load.py``: answers checked against their requests (hand-made outcomes), the tables made from a
stored
report, and one bounded run against a real ``disambig serve`` with the scripted LM slowed to 0.5 s a call, past its
capacity (slow: it starts a server)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def clients(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    from bench.reliability import load_clients

    return load_clients


def answer(question: str) -> str:
    return f"A to {question}"


def test_every_answer_is_checked_against_its_own_request(clients):
    """Six requests: q0 right; q1 carries q2's question and answer (swapped); q2 gets q2's answer again (its own, but
    a second time: duplicated); q3 an answer to nothing asked (wrong); q4 timed out (lost); q5 refused with 503
    (an error reply, not lost)."""
    o = clients.Outcome
    outcomes = [o(0, "q0", "ok", 0.1, "q0", answer("q0")), o(1, "q1", "ok", 0.1, "q2", answer("q2")),
                o(2, "q2", "ok", 0.1, "q2", answer("q2")), o(3, "q3", "ok", 0.1, "q3", "A to q9"),
                o(4, "q4", "timeout", 5.0), o(5, "q5", "http-503", 0.01)]
    assert clients.mismatches(outcomes, answer) == {"swapped": 1, "duplicated": 1, "wrong": 1, "lost": 1}
    # Without the answer text only the question each row carries is checked: q3 now counts as right.
    assert clients.mismatches(outcomes, None) == {"swapped": 1, "duplicated": 1, "wrong": 0, "lost": 1}
    figures = clients.figures(outcomes, wall=2.0, expected=answer)
    assert (figures["answered"], figures["throughput_rps"]) == (4, 2.0)
    assert figures["kinds"] == {"http-503": 1, "ok": 4, "timeout": 1}
    assert figures["p50_ms"] == 100.0  # the four answered took 0.1 s each


def test_questions_of_a_run_are_all_different(clients):
    assert len({clients.question_for("c4", i) for i in range(500)}) == 500


def tiny_report() -> dict:
    """Two rounds as ``bench/reliability/load.py --out`` stores them: 4 questions all answered by one client, then 8 at
    once of
    which 5 answered, 2 refused and 1 timed out (lost); the server's start is not recorded."""
    figures = {"swapped": 0, "duplicated": 0, "wrong": 0, "lost": 0}
    return {"command": "python -m bench.reliability.load --lm embedded --threads 2 --out tiny.json", "lm": "embedded",
            "delay": 0.0, "threads": 2, "max_concurrent": 4, "max_queue": 16, "load_average": [1.234, 0.5, 0.0],
            "code": {"commit": "abc123def456", "dirty": False, "diff": "", "version": "0.1.0"},
            "rounds": [{"clients": 1, "requests": 4, "answered": 4, "wall_s": 8.0, "throughput_rps": 0.5,
                        "p50_ms": 1234.4, "p95_ms": 999.94, "p99_ms": 2000.5, "slowest_503_ms": None,
                        "kinds": {"ok": 4}, "mismatches": figures, "rss_mb_after": 1024.0},
                       {"clients": 8, "requests": 8, "answered": 5, "wall_s": 0.405, "throughput_rps": 12.345,
                        "p50_ms": 80.0, "p95_ms": 95.25, "p99_ms": 99.0, "slowest_503_ms": 12.3,
                        "kinds": {"http-503": 2, "ok": 5, "timeout": 1}, "mismatches": {**figures, "lost": 1},
                        "rss_mb_after": 1030.06}],
            "port_freed": True}


def test_the_table_of_a_stored_report_goes_between_its_markers_and_nothing_else_moves(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    from bench.reliability import load

    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "tiny.json").write_text(json.dumps(tiny_report()), encoding="utf-8")
    begin, end = "<!-- bench/reliability/load.py:tiny:begin -->", "<!-- bench/reliability/load.py:tiny:end -->"
    other = ("<!-- bench/reliability/poison.py:poison-asqa:begin -->\n| kept | 1 |\n"
             "<!-- bench/reliability/poison.py:poison-asqa:end -->")
    head = f"# Load\n\nProse before, quoting 0.50 req/s.\n\n{other}\n\n"
    tail = "\n\nProse after.\n\n| a hand-typed | table |\n"
    doc = tmp_path / "doc.md"
    doc.write_text(f"{head}{begin}\n| stale | 9 |\n{end}{tail}", encoding="utf-8")

    load.write_tables(reports, doc, "python -m bench.reliability.load table --results doc.md")

    rows = [  # req/s: two decimals below 1; ms: one decimal below 1,000, whole and grouped from 1,000 up
        "| 1 | 4 | 4 | 0.50 | 1,234 | 999.9 | 2,000 | none | 0 / 0 / 0 / 0 | 1,024.0 |",  # 2000.5 rounds half to even
        "| 8 | 8 | 5 | 12.3 | 80.0 | 95.2 | 99.0 | 2 http-503 (slowest 12.3 ms), 1 timeout | 0 / 0 / 0 / 1 | 1,030.1 |"]
    note = ("Run by `python -m bench.reliability.load --lm embedded --threads 2 --out tiny.json`: embedded LM on 2 "
            "threads; code "
            "`abc123def456`, clean checkout; load average 1.23, 0.50, 0.00 (1, 5, 15 min) at the start; limits 4 + 16; "
            "port freed afterwards.")
    generated = (f"Generated by `python -m bench.reliability.load table --results doc.md` from "
                 f"`{reports / 'tiny.json'}` "
                 "(no server started).")
    block = "\n".join([begin, generated, "", *load.HEAD, *rows, "", note, end])
    assert doc.read_text(encoding="utf-8") == f"{head}{block}{tail}"


def test_table_is_a_subcommand_and_the_measuring_command_lines_still_parse(monkeypatch):
    """The command lines docs/reliability.md quotes reach the measuring run unchanged; ``table`` starts no server."""
    monkeypatch.syspath_prepend(str(ROOT))
    from bench.reliability import load

    measured, tabled = [], []
    monkeypatch.setattr(load, "measure", measured.append)
    monkeypatch.setattr(load, "write_tables", lambda *args: tabled.append(args))
    monkeypatch.setattr(sys, "argv", ["bench/reliability/load.py", "--lm", "scripted", "--delay", "0.5", "--clients",
                                      "32",
                                      "--requests", "32", "--out", "overflow.json"])
    load.main()
    monkeypatch.setattr(sys, "argv", ["bench/reliability/load.py", "table", "--results", "docs/reliability.md"])
    load.main()
    (args,) = measured
    assert (args.command, args.clients, args.requests, args.delay, args.out) == (None, [32], 32, 0.5,
                                                                                  Path("overflow.json"))
    assert tabled == [(Path("bench/results/load"), Path("docs/reliability.md"),
                       "python -m bench.reliability.load table --results docs/reliability.md")]


@pytest.mark.slow
def test_the_served_program_holds_its_bound_past_capacity_with_every_answer_its_own(tmp_path):
    """One answered at a time and two waiting, 0.5 s per LM call: 6 questions one after another are all answered;
    12 at once get their own answers or a 503 (9 expected: all twelve arrive within the first answer's 0.5 s), and
    none is lost, none waits unanswered. The server is stopped and its port freed when the run ends."""
    out = tmp_path / "load.json"
    command = [sys.executable, "-m", "bench.reliability.load", "--lm", "scripted", "--delay", "0.5",
               "--max-concurrent", "1", "--max-queue", "2", "--clients", "1,12", "--requests", "12",
               "--max-seconds", "120", "--out", str(out)]
    # the benchmark imports its siblings as bench.*: run it as a module with the checkout on the path
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    # The deadline guards against a hang, not for speed: a machine running LM jobs beside the suite once took more
    # than 50 s for the one-client round's 12 requests (4 not sent).
    subprocess.run(command, check=True, timeout=330, capture_output=True, cwd=tmp_path, env=environment)
    report = json.loads(out.read_text())
    one, crowd = report["rounds"]
    assert one["kinds"] == {"ok": 12}, report
    assert crowd["kinds"].get("ok", 0) + crowd["kinds"].get("http-503", 0) == 12, report
    assert crowd["kinds"].get("http-503", 0) >= 6, crowd["kinds"]
    assert one["mismatches"] == crowd["mismatches"] == {"swapped": 0, "duplicated": 0, "wrong": 0, "lost": 0}
    assert report["port_freed"]
