from __future__ import annotations

import dspy

from disambig.metrics import get_metric
from disambig.optimizers.feedback import explain, with_feedback

EXAMPLE = dspy.Example(question="Who has the most goals?", interpretations=[
    {"question": "In men's football?", "answers": ["Cristiano Ronaldo"]},
    {"question": "In women's football?", "answers": ["Christine Sinclair"]},
], long_answers=["Ronaldo for men, Sinclair for women."])


def test_feedback_names_the_missed_interpretation():
    pred = dspy.Prediction(interpretations=[], long_answer="Cristiano Ronaldo has the most.", passages=[])
    text = explain(EXAMPLE, pred)
    assert "Covered 1 of 2" in text and "women's football" in text and "In men's" not in text.split("Missed")[1]


def test_gepa_metric_has_five_arguments_and_returns_score_and_feedback():
    # d-f1 is question-aware: each answer sits in a sentence naming its reading ("women's", "men's")
    pred = dspy.Prediction(interpretations=[], long_answer="In women's football, Christine Sinclair. In men's "
                           "football, Cristiano Ronaldo.", passages=[])
    out = with_feedback(get_metric("d-f1"))(EXAMPLE, pred, None, "answer", None)
    assert out.score == 1.0 and "All 2 interpretations" in out.feedback
