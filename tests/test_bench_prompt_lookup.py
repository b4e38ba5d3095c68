"""The prompt-lookup A/B's table: ratio of seconds with its paired interval, answer agreement, kept drafts."""

from __future__ import annotations

import json

import pytest

from bench.cost.prompt_lookup import ratio_interval, report


def _row(off: float, on: float, same: bool, generated: int = 40, steps: int = 25, control=None) -> dict:
    return {"model": "m", "program": "diva", "dataset": "asqa", "draft": 4, "threads": 2, "id": "q",
            "seconds": {"off": off, "on": on}, "generated": {"off": generated + 9, "on": generated + 9},
            "drafting": {"calls": 3, "generated": generated, "steps": steps, "drafted": 60},
            "same": same, "control_same": control, "load_avg": 0.5, "code": {"commit": "abc"}}


def test_the_ratio_is_total_on_over_total_off_inside_its_interval():
    text = ratio_interval([10.0, 20.0, 30.0, 40.0], [6.0, 10.0, 18.0, 22.0])
    ratio, low, high = (float(x) for x in text.replace("[", "").replace("]", "").replace(",", "").split())
    assert ratio == pytest.approx(56 / 100, abs=0.005)
    assert low <= ratio <= high < 1


def test_report_counts_same_answers_kept_drafts_and_the_control(tmp_path):
    path = tmp_path / "rows.jsonl"
    rows = [_row(10, 6, True, control=True), _row(20, 15, False, control=True), _row(30, 20, True, control=False)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    line = report(path).splitlines()[2]
    assert "| 3 | 20.0 | 13.7 | 0.68 [" in line
    assert "| 2/3 | 2/3 | 45/120 | 0.50 | `abc` |" in line
