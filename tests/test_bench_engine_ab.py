"""The engine A/B's table: ratio of seconds with its paired interval, answers agreeing, refusals, batches."""

from __future__ import annotations

import json

from bench.cost.engine_ab import report


def _row(off: float, on: float, same: bool, tokens: int, refused: int, commit: str = "abc") -> dict:
    return {"change": "lazy-grammar", "model": "m", "program": "diva", "dataset": "asqa", "threads": 2, "id": "q",
            "seconds": {"off": off, "on": on}, "generated": {"off": tokens, "on": tokens},
            "counts": {"tokens": tokens, "refused": refused}, "same": same, "load_avg": 1.0,
            "code": {"commit": commit}}


def test_report_gives_a_line_per_setting_with_ratio_agreement_and_refusals(tmp_path):
    path = tmp_path / "rows.jsonl"
    rows = [_row(10, 6, True, 100, 5), _row(20, 14, False, 300, 15), _row(9, 9, True, 50, 0, commit="def")]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    lines = report(path).splitlines()
    assert len(lines) == 4  # header, rule, one line per code commit
    # abc: s/q off (10 + 20) / 2 = 15.0, on (6 + 14) / 2 = 10.0, ratio 20 / 30 = 0.67; 20 of 400 tokens refused = 5%
    assert "| 2 | 15.0 | 10.0 | 0.67 [" in lines[2] and "| 1/2 | 400 | 20 (5%) | – | 1.00 | `abc` |" in lines[2]
    assert "| 1 | 9.0 | 9.0 | 1.00 [1.00, 1.00] | 1/1 | 50 | 0 (0%) |" in lines[3]


def test_report_counts_the_calls_decoded_in_batches(tmp_path):
    path = tmp_path / "rows.jsonl"
    row = _row(10, 5, True, 100, 0) | {"change": "batch-calls"}
    row["counts"] |= {"batches": 2, "batched_calls": 9}
    path.write_text(json.dumps(row) + "\n")
    assert "| batch-calls | m | diva |" in report(path) and "| 9 in 2 |" in report(path)


def test_the_state_copy_change_gives_the_off_engine_the_old_copy_of_the_same_bytes(monkeypatch):
    import ctypes
    from types import SimpleNamespace

    import llama_cpp
    import numpy as np
    import pytest

    from bench.cost.engine_ab import old_copy
    from bench.cost.state_copy import old_save_state
    from disambig.lm.prompt_cache import save_kv_state

    written = bytes(range(256)) * 5

    def get_data(ctx, buffer, size):
        ctypes.memmove(buffer, written, len(written))
        return len(written)

    monkeypatch.setattr(llama_cpp, "llama_state_get_size", lambda ctx: len(written))
    monkeypatch.setattr(llama_cpp, "llama_state_get_data", get_data)
    llama = SimpleNamespace(ctx=None, input_ids=np.array([4, 5]), n_tokens=2, _seed=1, cache=object())
    with pytest.raises(SystemExit, match="no KV-only states"):
        old_copy(llama)  # no KV-only save_state installed on the model: nothing to compare against
    llama.save_state = lambda: save_kv_state(llama)
    old_copy(llama)
    assert llama.save_state.func is old_save_state and llama.save_state.args == (llama,)
    before, now = llama.save_state(), save_kv_state(llama)
    assert before.llama_state == now.llama_state == written and before.llama_state_size == now.llama_state_size
    assert list(before.input_ids) == [4, 5] and before.n_tokens == 2
