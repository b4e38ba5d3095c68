"""The cascade's answer-side features: hand-read values, the trace's cut flag, and the same numbers from a stored row
as from a live prediction."""

from __future__ import annotations

import dspy
import pytest

from disambig.programs.route import ANSWER_FEATURES, Answered, answer_named
from disambig.programs.route.answer_features import answer_cut, repetition, says_unknown


def row(answer: str, readings: int = 0, trace: dict | None = None) -> dict:
    return {"question": "Who won the cup in 1998?", "scores": {"str-em": 0.0},
            "trace": trace if trace is not None else {"lm_calls": 2, "input_tokens": 100, "output_tokens": 20},
            "prediction": {"long_answer": answer, "passages": [{"title": "Cup", "text": "France won the cup in 1998."}],
                           "interpretations": [{"question": f"Who won the cup in {1998 + k}?", "answer": "France"}
                                               for k in range(readings)]}}


def test_answer_features_on_a_hand_read_answer():
    a = Answered.from_row(row("France won the cup in 1998 and in 2018, beating Brazil 3 to 0 in the", readings=2))
    values = answer_named(a)
    assert list(values) == list(ANSWER_FEATURES)
    assert values["answer_cut"] == 1.0  # no closing full stop, and the stored trace has no cut count
    assert values["output_tokens"] == 20.0
    assert values["years"] == 2.0  # 1998, 2018
    assert values["numbers"] == 4.0  # 1998, 2018, 3, 0
    assert values["names"] == 2.0  # france, brazil
    # content words: france won cup 1998 2018 beating brazil 3 0 -> the passage holds france won cup 1998: 4 of 9
    assert values["passage_overlap"] == pytest.approx(4 / 9, abs=1e-6)
    # question content words: won cup 1998 -> all three in the answer
    assert values["question_overlap"] == 1.0
    assert values["n_readings"] == 2.0 and values["distinct_answers"] == 1.0
    assert values["distinct_questions"] == 1.0  # the 1999 reading; the 1998 one repeats the question
    assert values["answers_in_long"] == 1.0 and values["says_unknown"] == 0.0
    assert says_unknown(Answered.from_row(row("The passages do not mention the winner."))) == 1.0
    assert repetition(Answered.from_row(row("x y z x y z"))) == pytest.approx(1 / 4)  # trigrams xyz yzx zxy xyz


@pytest.mark.parametrize("text, trace, cut", [
    ("France won.", {"cut_by_length": 1}, 1.0),  # the engine cut the reply and ended it at a whole sentence
    ("France won the cup in", {"cut_by_length": 0}, 0.0),  # the engine says no cut: the text does not overrule it
    ("France won the cup in", {}, 1.0),  # an older trace without the count: read from the text
    ("France won.", {}, 0.0),
])
def test_the_cut_flag_comes_from_the_trace_where_the_engine_records_it(text, trace, cut):
    assert answer_cut(Answered.from_row(row(text, trace=trace))) == cut


def test_a_live_prediction_gives_the_stored_rows_numbers_deterministically():
    stored = row("France won in 1998. Brazil lost.", readings=3, trace={"lm_calls": 2, "output_tokens": 31,
                                                                          "cut_by_length": 0})
    live = dspy.Prediction(**stored["prediction"], trace=stored["trace"])
    from_live = answer_named(Answered.from_prediction(stored["question"], live))
    assert from_live == answer_named(Answered.from_row(stored)) == answer_named(Answered.from_row(stored))
    empty = answer_named(Answered("Who?", ""))
    assert all(v == 0.0 for k, v in empty.items() if k != "answer_cut") and empty["answer_cut"] == 1.0
