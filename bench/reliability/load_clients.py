"""The clients of ``bench/reliability/load.py``: N threads sending numbered questions to a served program on loopback,
each
response checked against the request it answers, and the figures of one run (throughput, latency percentiles, errors
by kind, mismatches)."""

from __future__ import annotations

import http.client
import json
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Outcome:
    """One request: what was asked, how it ended (``kind``: "ok", "http-503", "timeout", ...), when, and what came
    back (the answer row's question and long answer; "" when no answer row came back)."""

    index: int
    question: str
    kind: str
    seconds: float
    question_back: str = ""
    answer: str = ""


def question_for(tag: str, index: int) -> str:
    """A question no other request of the run asks: a year and the request's own number in it."""
    return f"Who won the Nobel Prize in Physics in {1901 + index % 120}? (request {tag}-{index:04d})"


def send(port: int, question: str, index: int, timeout: float) -> Outcome:
    """POST one question to ``/invocations`` on loopback and classify the reply."""
    body = json.dumps({"inputs": [question]})
    began = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("POST", "/invocations", body=body, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        status, text = response.status, response.read().decode("utf-8", errors="replace")
    except TimeoutError:
        return Outcome(index, question, "timeout", time.perf_counter() - began)
    except OSError as exc:
        return Outcome(index, question, f"connection-{type(exc).__name__}", time.perf_counter() - began)
    finally:
        connection.close()
    seconds = time.perf_counter() - began
    if status != 200:
        return Outcome(index, question, f"http-{status}", seconds)
    try:
        (row,) = json.loads(text)["predictions"]
    except (ValueError, KeyError, TypeError):
        return Outcome(index, question, "not-one-answer-row", seconds)
    kind = "row-error" if row.get("error") else "ok"
    return Outcome(index, question, kind, seconds, str(row.get("question", "")), str(row.get("long_answer", "")))


def run_clients(port: int, tag: str, clients: int, requests: int, deadline: float) -> tuple[list[Outcome], float]:
    """``requests`` questions sent by ``clients`` threads (each sends its next one when its last is answered);
    nothing is sent after ``deadline`` (``time.monotonic``), and no request waits past it. Returns the outcomes in
    request order and the wall time."""

    def one(index: int) -> Outcome:
        left = deadline - time.monotonic()
        if left <= 1:
            return Outcome(index, question_for(tag, index), "not-sent-deadline", 0.0)
        return send(port, question_for(tag, index), index, left)

    began = time.perf_counter()
    pool = ThreadPoolExecutor(max_workers=clients, thread_name_prefix="client")
    try:
        outcomes = list(pool.map(one, range(requests)))
    finally:  # stopped early (Ctrl-C, SIGTERM): the questions not yet sent are dropped
        pool.shutdown(wait=True, cancel_futures=True)
    return outcomes, time.perf_counter() - began


def mismatches(outcomes: list[Outcome], expected: Callable[[str], str] | None) -> dict[str, int]:
    """Answers that are not their request's: ``swapped`` (another request's question or answer), ``duplicated`` (an
    answer returned to two requests), ``wrong`` (neither); ``lost``: sent, but no reply at all (timeout or a broken
    connection). With ``expected`` (the answer a question must get) the answer text is checked too, else only the
    question the answer row carries."""
    asked = {o.question for o in outcomes}
    answers = {expected(q): q for q in asked} if expected else {}
    answered = [o for o in outcomes if o.kind in ("ok", "row-error")]
    seen = Counter((o.question_back, o.answer) for o in answered)
    counts = Counter()
    for o in answered:
        right = o.question_back == o.question and (expected is None or o.answer == expected(o.question))
        if not right:
            anothers = o.question_back in asked - {o.question} or answers.get(o.answer, o.question) != o.question
            counts["swapped" if anothers else "wrong"] += 1
    counts["duplicated"] = sum(n - 1 for n in seen.values() if n > 1)
    counts["lost"] = sum(o.kind == "timeout" or o.kind.startswith("connection-") for o in outcomes)
    return {k: counts[k] for k in ("swapped", "duplicated", "wrong", "lost")}


def figures(outcomes: list[Outcome], wall: float, expected: Callable[[str], str] | None) -> dict:
    """One run's figures: answered per second of wall time, latency percentiles of answered requests (ms), how long
    the slowest refusal (503) took, every reply kind counted, and the mismatches."""
    answered = [o.seconds for o in outcomes if o.kind == "ok"]
    refused = [o.seconds for o in outcomes if o.kind == "http-503"]
    latency = np.percentile(answered, [50, 95, 99]) * 1000 if answered else [float("nan")] * 3
    return {"requests": len(outcomes), "answered": len(answered), "wall_s": round(wall, 3),
            "throughput_rps": round(len(answered) / wall, 3) if wall else 0.0,
            "p50_ms": round(float(latency[0]), 1), "p95_ms": round(float(latency[1]), 1),
            "p99_ms": round(float(latency[2]), 1), "slowest_503_ms": round(max(refused) * 1000, 1) if refused else None,
            "kinds": dict(sorted(Counter(o.kind for o in outcomes).items())),
            "mismatches": mismatches(outcomes, expected)}
