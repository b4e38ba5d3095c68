"""``bench/cost/logprob_calls.py``'s comparison of two replies and its table (no LM call)."""

from __future__ import annotations

import json

import pytest

from bench.cost.logprob_calls import report, same


def _reply(text: str, *logprobs: float, other: float = -2.0) -> dict:
    return {"text": text, "logprobs": {"content": [
        {"token": f"t{i}", "logprob": p,
         "top_logprobs": [{"token": f"t{i}", "logprob": p}, {"token": "x", "logprob": other}]}
        for i, p in enumerate(logprobs)]}}


def test_two_replies_are_the_same_only_with_the_same_text_tokens_and_log_probabilities():
    assert same(_reply("yes", -0.1, -0.2), _reply("yes", -0.1 + 1e-9, -0.2))
    assert not same(_reply("yes", -0.1, -0.2), _reply("yes", -0.1, -0.3))
    assert not same(_reply("yes", -0.1), _reply("yes", -0.1, -0.2))
    assert not same(_reply("yes", -0.1), _reply("no", -0.1))
    assert not same(_reply("yes", -0.1, other=-2.0), _reply("yes", -0.1, other=-2.5))  # an alternative moved
    with pytest.raises(SystemExit, match="without log-probabilities"):
        same({"text": "yes", "logprobs": None}, _reply("yes", -0.1))


def test_report_gives_seconds_each_way_the_ratio_and_the_time_saved_a_token(tmp_path):
    path = tmp_path / "rows.jsonl"
    rows = [{"model": "m", "threads": 1, "call": i, "when": i, "cpu": "cpu", "load": 1.0, "library_s": off,
             "lazy_s": on, "tokens": 10, "same": i != 1, "code": {"commit": "abc"}}
            for i, (off, on) in enumerate([(2.0, 1.0), (3.0, 2.0)])]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    line = report(path).splitlines()[-1]
    # (1 + 2) / (2 + 3) = 0.60; (5 - 3) s over 20 tokens = 100 ms a token; one of two the same
    assert line.startswith("| m | 1 | 2 | 10 | 2.50 | 1.50 | 0.60 [")
    assert "| 100 | 1/2 | 1.0-1.0 | cpu | `abc` |" in line
