"""Conflicts where users read them: ``ask`` prints them after the interpretations; the pyfunc rows that ``serve``
and ``batch`` return carry ``conflicts`` and ``conflict_note`` always (empty when none), through every table
format, and back into the prediction a batch-answered eval scores."""

from __future__ import annotations

import io
import json

import dspy
import pandas as pd
import pytest
from rich.console import Console

from disambig.cli.ask_cmd import _show
from disambig.lm.usage import Trace
from disambig.optimizers.batch import answer_row, prediction_of
from disambig.optimizers.batch_io import read_table, write_table
from disambig.programs.conflicts import Conflict, Stance
from disambig.programs.result import Interpretation, make_prediction
from disambig.retrieval.passage import Passage
from disambig.serving.model import _answer

MEN = "Who has the most international goals in men's football?"
PASSAGES = [Passage("p1", "Cristiano Ronaldo", "..."), Passage("p2", "Planted [bold]page[/bold]", "...")]
CONFLICT = Conflict(MEN, (Stance("Cristiano Ronaldo", ("p1",)), Stance("Zlatan", ("p2",))))
EXPECTED = [{"question": MEN, "answers": [{"answer": "Cristiano Ronaldo", "passage_ids": ["p1"]},
                                          {"answer": "Zlatan", "passage_ids": ["p2"]}]}]


class Answering(dspy.Module):
    """A program that answers every question with the same two readings, in conflict or not."""

    def __init__(self, conflicts: list[Conflict]) -> None:
        super().__init__()
        self.conflicts = conflicts

    def forward(self, question: str) -> dspy.Prediction:
        readings = [Interpretation(MEN, "Cristiano Ronaldo", ("p1",)), Interpretation(MEN, "Zlatan", ("p2",))]
        return make_prediction(readings, "Ronaldo.", Trace(), PASSAGES, self.conflicts)


def test_ask_prints_the_conflicts_with_the_passage_titles():
    out = io.StringIO()
    _show(Console(file=out, width=200), "Who has the most goals?", Answering([CONFLICT])(question="q"))
    text = out.getvalue()
    table = text[text.index("Conflicts: the sources disagree"):text.index("Q:")]
    assert "Cristiano Ronaldo" in table and "Zlatan" in table and MEN in table
    assert "Planted [bold]page[/bold]" in table  # a title is text, not markup
    assert 'A: Ronaldo. Sources disagree on "' in text


def test_ask_prints_no_conflict_table_when_there_is_none():
    out = io.StringIO()
    _show(Console(file=out, width=200), "Who has the most goals?", Answering([])(question="q"))
    assert "Conflicts" not in out.getvalue()


@pytest.mark.parametrize(("conflicts", "expected"), [([CONFLICT], EXPECTED), ([], [])])
def test_a_served_row_always_carries_the_conflicts(conflicts, expected):
    row = _answer(Answering(conflicts), {"question": "Who has the most goals?"})
    assert row["conflicts"] == expected and json.loads(row["extra"]) == {}
    assert row["conflict_note"] == ("" if not conflicts else
                                    f'Sources disagree on "{MEN}": Cristiano Ronaldo (Cristiano Ronaldo) vs Zlatan '
                                    "(Planted [bold]page[/bold]).")
    assert row["long_answer"] == f"Ronaldo. {row['conflict_note']}".strip()


def test_a_failed_row_carries_empty_conflicts():
    row = _answer(Answering([CONFLICT]), {"question": ""})
    assert row["error"] and row["conflicts"] == [] and row["conflict_note"] == ""


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_batch_tables_keep_the_conflicts_and_eval_reads_the_note_back(tmp_path, suffix):
    rows = [answer_row(_answer(Answering(c), {"question": "Who?"})) for c in ([CONFLICT], [])]
    path = tmp_path / f"out{suffix}"
    write_table(pd.DataFrame(rows), path)
    back = read_table(path).to_dict("records")
    assert [json.loads(json.dumps(list(r["conflicts"]), default=list)) for r in back] == [EXPECTED, []]
    assert back[1]["conflict_note"] in ("", None) or pd.isna(back[1]["conflict_note"])
    prediction = prediction_of(rows[0])
    assert prediction.conflicts == EXPECTED and prediction.conflict_note == rows[0]["conflict_note"]
    assert prediction_of({**rows[1], "conflict_note": float("nan")}).conflict_note == ""  # a row from before
