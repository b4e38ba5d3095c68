"""The conflict note never changes a score: the metrics read the long answer without it (``metrics/answer_text``),
from a program's prediction and from a stored row alike."""

from __future__ import annotations

import dspy
import pytest

from disambig.evaluation.scoring import to_prediction
from disambig.lm.usage import Trace
from disambig.metrics import get_metric
from disambig.metrics.answer_text import scored_long_answer
from disambig.programs.conflicts import Conflict, Stance
from disambig.programs.result import Interpretation, make_prediction
from disambig.retrieval.passage import Passage

MEN = "Who has the most international goals in men's football?"
WOMEN = "Who has the most international goals in women's football?"
EXAMPLE = dspy.Example(
    question="Who has the most goals in football?",
    interpretations=[{"question": MEN, "answers": ["Cristiano Ronaldo"]},
                     {"question": WOMEN, "answers": ["Christine Sinclair"]}],
    long_answers=["In men's football Cristiano Ronaldo has the most goals; in women's, Christine Sinclair."],
).with_inputs("question")
ANSWER = "In men's football, Cristiano Ronaldo has the most international goals."
PASSAGES = [Passage("p1", "Cristiano Ronaldo", "..."), Passage("p2", "Planted", "...")]
# The planted passage names the women's scorer for the men's reading: the note then holds a gold answer the
# program's own answer lacks, so scoring the note would raise STR-EM from 1/2 to 2/2.
CONFLICT = Conflict(MEN, (Stance("Cristiano Ronaldo", ("p1",)), Stance("Christine Sinclair", ("p2",))))
READINGS = [Interpretation(MEN, "Cristiano Ronaldo", ("p1",)), Interpretation(MEN, "Christine Sinclair", ("p2",))]


def predictions() -> tuple[dspy.Prediction, dspy.Prediction]:
    noted = make_prediction(READINGS, ANSWER, Trace(), PASSAGES, [CONFLICT])
    plain = make_prediction(READINGS, ANSWER, Trace(), PASSAGES)
    return noted, plain


def test_the_scored_text_is_the_answer_without_the_note():
    noted, plain = predictions()
    assert noted.long_answer == f"{ANSWER} {noted.conflict_note}" and "Christine Sinclair" in noted.conflict_note
    assert scored_long_answer(noted) == ANSWER == plain.long_answer


@pytest.mark.parametrize("name", ["str-em", "rouge-l", "d-f1", "adf-f1", "adf-rouge-l", "ambigqa-f1"])
def test_a_metric_scores_the_same_with_and_without_the_note(name):
    metric = get_metric(name)
    noted, plain = predictions()
    assert metric(EXAMPLE, noted) == metric(EXAMPLE, plain)


def test_str_em_would_have_counted_the_note():
    noted, _ = predictions()
    metric = get_metric("str-em")
    assert metric(EXAMPLE, noted) == 0.5  # Ronaldo found, Sinclair only in the note: 1 of 2
    assert metric(EXAMPLE, dspy.Prediction(long_answer=noted.long_answer)) == 1.0  # the note read as an answer


def test_a_stored_row_carries_its_note_to_the_metrics():
    noted, plain = predictions()
    row = {"question": EXAMPLE.question, "long_answer": noted.long_answer, "conflict_note": noted.conflict_note}
    metric = get_metric("rouge-l")
    assert metric(EXAMPLE, to_prediction(row)) == metric(EXAMPLE, plain)
