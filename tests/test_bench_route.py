"""``bench/quality/route.py``: the router's tables composed from stored answers (table, faithful, e2e), no LM."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
IDS = [f"q{i}" for i in range(8)]


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    return importlib.import_module


def run(folder: Path, program: str, em: list[float], calls: int, answer: str = "") -> Path:
    """A stored run of ``program``: question ``q<i>`` scores ``em[i]`` with ``calls`` LM calls."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = [{"id": i, "scores": {"str-em": e}, "trace": {"lm_calls": calls, "input_tokens": 10, "output_tokens": 5},
             "prediction": {"long_answer": answer or f"{program} on {i}", "interpretations": [], "program": program},
             "code": {"commit": "abc1234", "dirty": False}} for i, e in zip(IDS, em, strict=True)]
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


# vanilla-rag is right on q0-q3, adf on q4-q7; the oracle is right everywhere.
VANILLA = [1, 1, 1, 1, 0, 0, 0, 0]
ADF = [0, 0, 0, 0, 1, 1, 1, 1]


def test_route_table_composes_the_chosen_answers_and_the_oracle(tmp_path, bench):
    run(tmp_path / "asqa-dev" / "vanilla-rag", "vanilla-rag", VANILLA, 2)
    run(tmp_path / "asqa-dev" / "adf", "adf", ADF, 6)
    # The router picks adf on q4-q5 only: right on q0-q5 (6 of 8), 6 questions x 2 calls + 2 x 6 = 24 calls.
    decisions = [{"id": i, "action": f"answer:{p}", "program": p,
                  "probabilities": {"answer:vanilla-rag": 0.5, "answer:adf": 0.5}}
                 for i, p in zip(IDS, ["vanilla-rag"] * 4 + ["adf"] * 2 + ["vanilla-rag"] * 2, strict=True)]
    text = bench("bench.quality.route").table(decisions, tmp_path, "asqa", "str-em", [])
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ") for line in text.splitlines() if line.startswith("|")}
    assert rows["route"][1] == "0.750"
    assert rows["route"][4] == "3.00"  # (6 x 2 + 2 x 6) / 8
    assert rows["oracle"][1] == "1.000"
    assert rows["vanilla-rag"][1] == rows["adf"][1] == "0.500"
    assert "{'answer:adf': 2, 'answer:vanilla-rag': 6}" in text


def test_route_faithful_counts_identical_answers_and_compares_the_metric(tmp_path, bench):
    run(tmp_path / "asqa-dev" / "vanilla-rag", "vanilla-rag", VANILLA, 2)
    e2e = run(tmp_path / "e2e", "vanilla-rag", VANILLA, 2)
    # One end-to-end answer differs (q0: other text, scored 0).
    rows = [json.loads(line) for line in (e2e / "results.jsonl").read_text().splitlines()]
    rows[0]["prediction"]["long_answer"], rows[0]["scores"]["str-em"] = "something else", 0.0
    (e2e / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    rows[2]["prediction"]["long_answer"] = "vanilla-rag on"  # q2 ended early: a prefix of the stored answer
    rows[1]["prediction"] = None  # q1 failed end to end: no answer, its stored empty scores
    rows[1]["scores"]["str-em"] = 0.0
    (e2e / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    text = bench("bench.quality.route").faithful(e2e, tmp_path, "asqa", "str-em",
                                                         {i: "vanilla-rag" for i in IDS})
    assert "the run chose the predicted candidate on 7 and failed 1" in text
    assert "identical long answer and interpretations on 5 of 8" in text
    assert "a shorter prefix of the stored one on 1." in text
    assert "| route, end to end | 0.250 |" in text
    assert "| composed from stored candidate runs | 0.500 | reference | 2.00 |" in text
    assert "{'vanilla-rag': 8}" in text


def test_route_faithful_refuses_a_run_with_no_stored_counterpart(tmp_path, bench):
    e2e = run(tmp_path / "e2e", "adf", ADF, 6)
    (tmp_path / "asqa-dev" / "adf").mkdir(parents=True)
    (tmp_path / "asqa-dev" / "adf" / "results.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(SystemExit, match="no question"):
        bench("bench.quality.route").faithful(e2e, tmp_path, "asqa", "str-em", {i: "adf" for i in IDS})
    with pytest.raises(SystemExit, match="no decision"):
        bench("bench.quality.route").faithful(e2e, tmp_path, "asqa", "str-em", {})


def cascade_run(folder: Path, asqa_file: str) -> Path:
    """A cascade run on the fixture's six questions: it escalated mini-1 (first stage wrong, escalation right) and
    mini-2 (first right, escalation wrong); kept mini-3..6 (first stage right on mini-4 only); mini-6 failed."""
    folder.mkdir(parents=True)
    right = {"mini-1": "Herman Melville and Ray Bradbury.", "mini-2": "1937 and 1894.", "mini-4": "Canberra."}

    def row(i: str, answer: str, escalated: bool, first: str = "") -> dict:
        cascade = {"first": "vanilla-rag", "escalate": "adf", "escalated": escalated}
        notes = {"route": {"cascade": cascade}}
        if escalated:
            notes["cascade_first"] = {"long_answer": first, "interpretations": [], "lm_calls": 2,
                                      "input_tokens": 100, "output_tokens": 10}
        calls = 8 if escalated else 2
        return {"id": i, "question": "?", "prediction": {"long_answer": answer, "interpretations": []},
                "trace": {"lm_calls": calls, "input_tokens": 50 * calls, "output_tokens": 5 * calls, "notes": notes},
                "code": {"commit": "abc1234abc", "dirty": False}}

    rows = [row("mini-1", right["mini-1"], True, "Nobody."), row("mini-2", "No idea.", True, right["mini-2"]),
            row("mini-3", "Nothing.", False), row("mini-4", right["mini-4"], False), row("mini-5", "Nobody.", False),
            {"id": "mini-6", "question": "?", "prediction": None, "error": "boom", "trace": {}}]
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


def test_route_cascade_e2e_scores_the_first_stage_from_the_trace(tmp_path, bench, asqa_file):
    text = bench("bench.quality.route").e2e(cascade_run(tmp_path / "e2e", asqa_file), asqa_file,
                                                            "str-em", [])
    lines = {line.split(" | ")[0].strip("| "): line for line in text.splitlines() if line.startswith("| ")}
    # str-em over 6 questions: the first stage is right on mini-2 and mini-4, the cascade on mini-1 and mini-4.
    assert lines["vanilla-rag (the cascade's first stage)"].startswith(
        "| vanilla-rag (the cascade's first stage) | 0.333 | reference | 1.67 | ")  # the failed row: 0 calls
    assert lines["route cascade"].startswith("| route cascade | 0.333 | +0.000 [")
    assert "| 3.67 | " in lines["route cascade"]  # (8 + 8 + 2 + 2 + 2 + 0) / 6
    assert "escalated to adf on 2; failed 1" in text and "code abc1234" in text
    assert "questions 1-" not in text  # no split asked for


def test_route_cascade_e2e_splits_the_run_at_a_question(tmp_path, bench, asqa_file):
    text = bench("bench.quality.route").e2e(cascade_run(tmp_path / "e2e", asqa_file), asqa_file,
                                                            "str-em", [], 2)
    # mini-1..2: the cascade right on mini-1, its first stage on mini-2; mini-3..6: both right on mini-4 only.
    assert "| route cascade, questions 1-2 | 0.500 (first stage 0.500) | +0.000 [" in text
    assert "| route cascade, questions 3-6 | 0.250 (first stage 0.250) | +0.000 [+0.000, +0.000] tie | 1.50 | |" in text


def test_route_cascade_e2e_refuses_a_run_that_is_not_a_cascade(tmp_path, bench, asqa_file):
    plain = run(tmp_path / "plain", "vanilla-rag", VANILLA, 2)
    with pytest.raises(SystemExit, match="not a route cascade run"):
        bench("bench.quality.route").e2e(plain, asqa_file, "str-em", [])
