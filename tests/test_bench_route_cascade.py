"""``bench/route_cascade.py``: answer-side features of a stored VanillaRAG row and the cascade's composition."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def cascade(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    return importlib.import_module("route_cascade")


def row(answer: str, scores: dict | None = None, calls: int = 2, readings: int = 0) -> dict:
    return {"question": "Who won the cup in 1998?", "scores": scores or {"str-em": 0.0},
            "trace": {"lm_calls": calls, "input_tokens": 100, "output_tokens": 20},
            "prediction": {"long_answer": answer, "passages": [{"title": "Cup", "text": "France won the cup in 1998."}],
                           "interpretations": [{"question": f"Who won the cup in {1998 + k}?", "answer": "France"}
                                               for k in range(readings)]}}


def test_answer_features_on_a_hand_read_answer(cascade):
    r = row("France won the cup in 1998 and in 2018, beating Brazil 3 to 0 in the", readings=2)
    values = {name: f(r) for name, f in cascade.ANSWER_FEATURES.items()}
    assert values["answer_cut"] == 1.0  # no closing full stop
    assert values["years"] == 2.0  # 1998, 2018
    assert values["numbers"] == 4.0  # 1998, 2018, 3, 0
    assert values["names"] == 2.0  # france, brazil
    # content words: france won cup 1998 2018 beating brazil 3 0 -> the passage holds france won cup 1998: 4 of 9
    assert values["passage_overlap"] == pytest.approx(4 / 9)
    assert values["n_readings"] == 2.0 and values["distinct_answers"] == 1.0
    assert values["distinct_questions"] == 1.0  # the 1999 reading; the 1998 one repeats the question
    assert values["says_unknown"] == 0.0
    assert cascade.says_unknown(row("The passages do not mention the winner.")) == 1.0
    assert cascade.repetition(row("x y z x y z")) == pytest.approx(1 / 4)  # trigrams xyz yzx zxy xyz


def test_cascade_adds_the_escalations_calls_and_takes_its_answer(cascade):
    first = {"q0": row("x.", {"str-em": 1.0}), "q1": row("y.", {"str-em": 0.0})}
    second = {"q0": row("x.", {"str-em": 0.0}, calls=6), "q1": row("y.", {"str-em": 1.0}, calls=6)}
    split = cascade.Split(["q0", "q1"], first, second, np.array([False, True]), np.zeros((2, 1)), np.zeros((2, 1)))
    scores, calls, _ = split.cascade(np.array([False, True]))
    assert scores == {"q0": {"str-em": 1.0}, "q1": {"str-em": 1.0}}
    assert calls.tolist() == [2.0, 8.0]
    assert cascade.cascade_value(split, np.array([False, True]), "str-em") == 1.0
    # The rule must escalate q1 alone: x = [0, 1], side +1, threshold 0.5; mean calls 5 < 6.
    rule = cascade.fit_threshold(split, np.array([[0.0], [1.0]]), "str-em", np.arange(2))
    assert rule == (0, 1.0, 0.5)
