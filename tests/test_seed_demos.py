"""The seed demos show answers grounded in their passages: a model copies whatever a demo answer does."""

from __future__ import annotations

import re

from disambig.programs.seed_demos import DEMOS, LONG_ANSWER, PASSAGES


def _names_and_numbers(text: str) -> set[str]:
    """Capitalised words not opening a sentence, and numbers: the facts a long answer can assert."""
    words = set(re.findall(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+\b|\b\d+\b", text))
    return words - {"FIFA", "World", "Cup"}


def test_the_consolidation_demo_states_only_what_its_passages_say():
    assert _names_and_numbers(LONG_ANSWER) <= _names_and_numbers(PASSAGES) | set(PASSAGES.split())
    for banned in ("German", "Brazilian"):  # the paper's answer named nationalities its passages never state
        assert banned not in LONG_ANSWER


def test_every_answer_demo_uses_the_grounded_long_answer():
    answers = [demo["long_answer"] for step in ("ConsolidateAnswer", "ClosedBookAnswer") for demo in DEMOS[step]]
    assert answers == [LONG_ANSWER, LONG_ANSWER]
