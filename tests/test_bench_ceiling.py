"""The llama.cpp ceiling and in-DSPy rates of ``bench.cost.ceiling`` on the real SmolLM2, and the table's columns."""

from __future__ import annotations

import json

import dspy
import pytest

from bench.cost.ceiling import ceiling, in_dspy
from bench.cost.lm_speed import loaded_backend, report


def _answer(lm) -> str:
    """A greedy reply prefilled from an empty context (no prompt-cache state restored, so the same arithmetic)."""
    llama = lm.engine.llama
    cache, llama.cache = llama.cache, None
    try:
        llama.reset()
        with dspy.context(lm=lm, cache=False):
            return lm("Name a colour.", temperature=0.0, max_tokens=8)[0]
    finally:
        llama.cache = cache


@pytest.mark.slow
def test_ceiling_measures_both_tests_and_leaves_the_model_answering_as_before(local_lm):
    before = _answer(local_lm)
    prefill, decode = ceiling(local_lm.engine.llama, prompt_tokens=64, gen_tokens=8)
    assert prefill > 0 and decode > 0
    assert _answer(local_lm) == before  # the raw decodes left no state behind


@pytest.mark.slow
def test_in_dspy_rates_are_positive(local_lm):
    prefill, decode = in_dspy(local_lm)
    assert prefill > 0 and decode > 0


def test_report_shows_the_ceiling_and_a_dash_for_rows_from_before_it(tmp_path):
    base = {"model": "m", "build": "dispatch", "load_avg": 0.1, "cpu": "x86_64", "prefill": [10.0, 12.0],
            "decode": [3.0], "code": {"commit": "abc"}}
    new = {**base, "threads": 2, "ceiling_prefill": [20.0, 22.0, 21.0], "ceiling_decode": [5.0],
           "dspy_prefill": [9.0], "dspy_decode": [2.5]}
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({**base, "threads": 1}) + "\n" + json.dumps(new) + "\n")
    lines = report(path).splitlines()
    assert lines[2].endswith("| 11.0 (10.0, 12.0) | 3.0 (3.0) | – | – | `abc` |")
    assert lines[3].endswith("| 21.0 / 5.0 | 9.0 / 2.5 | `abc` |")


def test_the_loaded_cpu_backend_is_read_from_the_process_maps(tmp_path):
    maps = tmp_path / "maps"
    line = "7f00-7f10 r-xp 00000000 fd:01 42 /venv/lib/python3.11/site-packages/bin/libggml-cpu-{}.so\n"
    maps.write_text(line.format("cascadelake") * 2 + "7f20-7f30 r--p 0 fd:01 43 /usr/lib/libc.so.6\n")
    assert loaded_backend(maps) == "cascadelake"
    maps.write_text(line.format("haswell") + line.format("x64"))  # two backends mapped: not one to name
    assert loaded_backend(maps) is None
    assert loaded_backend(tmp_path / "missing") is None
