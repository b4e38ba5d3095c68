"""The long answer the metrics score: the program's own text, without the conflict note it was given.

When the passages answer one reading differently, ``make_prediction`` appends ``conflict_note`` to the long answer
("Sources disagree on ...", ``disambig.programs.conflicts``) and keeps the note as a field of its own. Every metric
that reads the long answer (ROUGE-L, STR-EM, Disambig-F1, D-F1's long-answer test, the ADF metrics, the judges'
response text, the short-answer fallback) reads it through ``scored_long_answer``, which takes the note out again,
so surfacing a conflict never changes a score, whether the gold has one answer or several. A prediction without the
field (older results, a row scored from a file without it) is scored as it is.
"""

from __future__ import annotations

from typing import Any

from disambig.data.fields import field
from disambig.programs.conflicts import without_note


def scored_long_answer(pred: Any) -> str:
    """``pred.long_answer`` with ``pred.conflict_note`` taken out ("" when there is no long answer); ``pred`` is a
    prediction or a mapping (a results row's prediction)."""
    text = str(field(pred, "long_answer") or "")
    return without_note(text, str(field(pred, "conflict_note") or ""))
