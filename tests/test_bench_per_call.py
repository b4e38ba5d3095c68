"""``bench/cost/per_call.py``: each call of a program's LM history named by its step, and the per-step table."""

from __future__ import annotations

import dspy

from bench.cost import per_call
from bench.harness import Rows


class Answer(dspy.Signature):
    """Answer the question in a few words."""

    question: str = dspy.InputField()
    answer: str = dspy.OutputField()


class Check(dspy.Signature):
    """Check the answer against the question."""

    question: str = dspy.InputField()
    answer: str = dspy.InputField()
    verdict: str = dspy.OutputField()


class Two(dspy.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first = dspy.Predict(Answer)
        self.second = dspy.Predict(Check)


def _entry(system: str, prompt: int, reused: int, reply: int) -> dict:
    return {"messages": [{"role": "system", "content": f"{system}\nReply with a JSON object with keys: x."},
                         {"role": "user", "content": "question: q"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": reply,
                      "prompt_tokens_details": {"cached_tokens": reused}}}


def test_calls_are_named_by_the_signature_whose_instruction_opens_the_system_message():
    steps = per_call.step_names(Two())
    assert sorted(steps.values()) == ["Answer", "Check"]
    first = per_call.call_row(_entry("Answer the question in a few words.", 300, 120, 9), steps)
    assert first == {"step": "Answer", "prompt": 300, "reused": 120, "reply": 9}
    assert per_call.call_row(_entry("Check the answer against the question.", 50, 0, 2), steps)["step"] == "Check"
    assert per_call.call_row(_entry("Something else entirely.", 10, 0, 1), steps)["step"] == "other"
    assert per_call.call_row({"messages": [], "usage": {}}, steps) == {"step": "other", "prompt": 0, "reused": 0,
                                                                       "reply": 0}


def test_the_report_leaves_out_the_first_question_and_sums_per_step(tmp_path):
    rows = Rows(tmp_path / "calls.jsonl", key=("lm", "program", "dataset", "id"))
    base = {"lm": "local:x", "program": "p", "dataset": "asqa", "threads": 1, "seconds": 1.0, "load_avg": 0.1,
            "cpu": "c", "code": {"commit": "abc"}}
    cold = [{"step": "A", "prompt": 1000, "reused": 0, "reply": 50}]
    warm = [{"step": "A", "prompt": 400, "reused": 300, "reply": 20}, {"step": "B", "prompt": 200, "reused": 0,
                                                                      "reply": 10}]
    rows.add({**base, "id": "1", "order": 0, "calls": cold})
    rows.add({**base, "id": "2", "order": 1, "calls": warm})
    rows.add({**base, "id": "3", "order": 2, "calls": warm[:1]})
    table = per_call.report(tmp_path / "calls.jsonl")
    assert "| local:x | p | A | 2 | 1.0 | 100 | 300 | 20 | `abc` |" in table
    assert "| local:x | p | B | 2 | 0.5 | 100 | 0 | 5 | `abc` |" in table
    assert "| local:x | p | all | 2 | 1.5 | 200 | 300 | 25 | `abc` |" in table
