"""``bench/cost/per_call.py``: each call of a program's LM history named by its step, and the per-step table."""

from __future__ import annotations

import dspy
import pytest

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
    longer = {"Answer the question.": "Short", "Answer the question. Then check it.": "Long"}
    ordered = dict(sorted(longer.items(), key=lambda item: -len(item[0])))
    assert per_call.call_row(_entry("Answer the question. Then check it.", 1, 0, 1), ordered)["step"] == "Long"
    assert per_call.call_row({"messages": [], "usage": {}}, steps) == {"step": "other", "prompt": 0, "reused": 0,
                                                                       "reply": 0}


def test_the_report_leaves_out_the_first_question_and_sums_per_step(tmp_path):
    rows = Rows(tmp_path / "calls.jsonl", key=per_call.KEY)
    base = {"lm": "local:x", "program": "p", "dataset": "asqa", "threads": 1, "seconds": 1.0, "load_avg": 0.1,
            "cpu": "c", "code": {"commit": "abc"}}
    cold = [{"step": "A", "prompt": 1000, "reused": 0, "reply": 50}]
    warm = [{"step": "A", "prompt": 400, "reused": 300, "reply": 20}, {"step": "B", "prompt": 200, "reused": 0,
                                                                      "reply": 10}]
    rows.add({**base, "id": "1", "order": 0, "cold": True, "calls": cold})
    rows.add({**base, "id": "2", "order": 1, "cold": False, "calls": warm})
    rows.add({**base, "id": "3", "order": 2, "cold": False, "calls": warm[:1]})
    rows.add({**base, "id": "4", "order": 3, "cold": True, "calls": cold})  # the first question of a resumed run
    table = per_call.report(tmp_path / "calls.jsonl")
    assert "| local:x | 1 | p | A | 2 | 1.0 | 100 | 300 | 20 | `abc` |" in table
    assert "| local:x | 1 | p | B | 2 | 0.5 | 100 | 0 | 5 | `abc` |" in table
    assert "| local:x | 1 | p | all | 2 | 1.5 | 200 | 300 | 25 | `abc` |" in table


def test_two_signatures_with_one_instruction_are_refused():
    class Again(dspy.Signature):
        """Answer the question in a few words."""

        question: str = dspy.InputField()
        answer: str = dspy.OutputField()

    class Both(dspy.Module):
        def __init__(self) -> None:
            super().__init__()
            self.first, self.second = dspy.Predict(Answer), dspy.Predict(Again)

    with pytest.raises(SystemExit, match="share their instruction"):
        per_call.step_names(Both())
