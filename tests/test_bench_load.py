"""``bench/load.py``: answers checked against their requests (hand-made outcomes), and one bounded run against a real
``disambig serve`` with the scripted LM slowed to 0.5 s a call, past its capacity (slow: it starts a server)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def clients(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    import load_clients

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


@pytest.mark.slow
def test_the_served_program_holds_its_bound_past_capacity_with_every_answer_its_own(tmp_path):
    """One answered at a time and two waiting, 0.5 s per LM call: 6 questions one after another are all answered;
    12 at once get their own answers or a 503 (9 expected: all twelve arrive within the first answer's 0.5 s), and
    none is lost, none waits unanswered. The server is stopped and its port freed when the run ends."""
    out = tmp_path / "load.json"
    command = [sys.executable, str(ROOT / "bench" / "load.py"), "--lm", "scripted", "--delay", "0.5",
               "--max-concurrent", "1", "--max-queue", "2", "--clients", "1,12", "--requests", "12",
               "--max-seconds", "50", "--out", str(out)]
    subprocess.run(command, check=True, timeout=170, capture_output=True, cwd=tmp_path)
    report = json.loads(out.read_text())
    one, crowd = report["rounds"]
    assert one["kinds"] == {"ok": 12} and crowd["kinds"].get("ok", 0) + crowd["kinds"].get("http-503", 0) == 12
    assert crowd["kinds"].get("http-503", 0) >= 6, crowd["kinds"]
    assert one["mismatches"] == crowd["mismatches"] == {"swapped": 0, "duplicated": 0, "wrong": 0, "lost": 0}
    assert report["port_freed"]
