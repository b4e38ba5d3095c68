"""Conflicting passages (``programs/conflicts.py``): answers compared as numbers, dates and names; readings grouped by
normalised question; stances, the note and taking it out again. Every expected value is worked out by hand."""

from __future__ import annotations

import pytest

from disambig.programs.conflicts import (
    Conflict,
    Stance,
    answer_tokens,
    conflict_note,
    find_conflicts,
    same_answer,
    with_note,
    without_note,
)
from disambig.programs.result import Interpretation
from disambig.retrieval.passage import Passage

SCORER = "Who is the club's all-time top scorer?"


@pytest.mark.parametrize(("answer", "tokens"), [
    ("412", {"412"}),
    ("412 goals", {"412", "goals"}),
    ("four hundred twelve", {"412"}),
    ("Four hundred and twelve goals", {"412", "goals"}),
    ("forty-two", {"42"}),
    ("1,412", {"1412"}),  # a thousands separator, not a list
    ("412.0", {"412"}),
    ("1.5 million", {"1500000"}),
    ("1,500,000", {"1500000"}),
    ("one two", {"1", "2"}),  # two numbers side by side stay two
    ("July 20th, 1969", {"month:7", "20", "1969"}),
    ("1969-07-20", {"1969", "month:7", "20"}),
    ("20 Jul 1969", {"20", "month:7", "1969"}),
    ("The Beatles", {"beatles"}),  # articles dropped
    ("Ronaldo Nazário", {"ronaldo", "nazario"}),  # accents dropped
])
def test_answer_tokens(answer, tokens):
    assert answer_tokens(answer) == frozenset(tokens)


@pytest.mark.parametrize(("a", "b"), [
    ("412", "412 goals"),  # numbers as numbers, the unit is extra detail
    ("412", "four hundred twelve"),
    ("1,000", "1000"),
    ("two", "2"),
    ("1969", "July 1969"),  # a year inside a fuller date
    ("July 1969", "20 July 1969"),
    ("1969-07-20", "July 20, 1969"),
    ("Ronaldo", "Cristiano Ronaldo"),  # one name's tokens inside the other's
    ("cristiano ronaldo.", "Cristiano Ronaldo"),
])
def test_answers_in_different_forms_agree(a, b):
    assert same_answer(a, b) and same_answer(b, a)


@pytest.mark.parametrize(("a", "b"), [
    ("412", "413"),
    ("412 goals", "298 goals"),
    ("1969", "1970"),
    ("June 1969", "July 1969"),
    ("Cristiano Ronaldo", "Ronaldo Nazario"),  # neither set holds the other
    ("Cristiano Ronaldo", "Lionel Messi"),
    ("", "Messi"),  # an empty answer agrees with nothing (find_conflicts skips it anyway)
])
def test_different_answers_disagree(a, b):
    assert not same_answer(a, b) and not same_answer(b, a)


def claim(answer: str, *ids: str, question: str = SCORER) -> Interpretation:
    return Interpretation(question, answer, ids)


def test_two_answers_to_one_reading_are_a_conflict_with_their_passages():
    # p1 and p3 name Ronaldo (p3 in a fuller form), p2 names the planted X: two stances, worded as first given
    claims = [claim("Ronaldo", "p1"), claim("X", "p2"), claim("Cristiano Ronaldo", "p3"),
              claim("Ronaldo", "p1")]  # the same passage twice is cited once
    assert find_conflicts(claims) == [Conflict(SCORER, (Stance("Ronaldo", ("p1", "p3")), Stance("X", ("p2",))))]


def test_same_answers_in_other_forms_are_no_conflict():
    claims = [claim("412", "p1"), claim("412 goals", "p2"), claim("four hundred twelve", "p3"),
              claim("1969", "p4", question="When?"), claim("July 1969", "p5", question="When?")]
    assert find_conflicts(claims) == []


def test_readings_are_grouped_by_normalised_question_only():
    # "who is the CLUB'S all-time top scorer" normalises like SCORER; the women's reading is another reading
    women = "Who is the women's club's all-time top scorer?"
    claims = [claim("Ronaldo", "p1"), claim("Sinclair", "p2", question=women),
              claim("X", "p3", question="who is the CLUB'S all-time top scorer")]
    (found,) = find_conflicts(claims)
    assert found.question == SCORER and [s.answer for s in found.answers] == ["Ronaldo", "X"]


def test_agreement_is_joined_whatever_the_order():
    # "Ronaldo" agrees with both fuller names, which disagree with each other: one stance in either order
    names = ["Cristiano Ronaldo", "Ronaldo Nazario", "Ronaldo"]
    for order in (names, names[::-1], [names[2], names[0], names[1]]):
        assert find_conflicts([claim(n, f"p{i}") for i, n in enumerate(order)]) == []


def test_claims_without_question_or_answer_are_skipped_and_mappings_are_read():
    claims = [{"question": SCORER, "answer": "Ronaldo", "passage_ids": ["p1"]},
              {"question": SCORER, "answer": "  ", "passage_ids": ["p2"]},
              {"question": "?", "answer": "X", "passage_ids": ["p3"]}]
    assert find_conflicts(claims) == []


def test_the_note_names_each_answer_and_its_sources():
    conflicts = [Conflict(SCORER, (Stance("Ronaldo.", ("p1", "p3")), Stance("X", ("p2", "p9"))))]
    passages = [Passage("p1", "Club history", "..."), Passage("p2", "Planted", "..."),
                Passage("p3", "Club history", "...")]
    # titles replace ids (p9 is not among the passages: its id), repeated titles once, the answer's full stop dropped
    assert conflict_note(conflicts, passages) == (
        f'Sources disagree on "{SCORER}": Ronaldo (Club history) vs X (Planted, p9).')
    assert conflict_note([]) == ""


def test_the_note_is_appended_and_taken_out_again():
    note = 'Sources disagree on "Q?": A (t1) vs B (t2).'
    answer = "The answer is A.  "
    assert with_note(answer, note) == f"The answer is A. {note}"
    assert without_note(with_note(answer, note), note) == "The answer is A."
    assert with_note("", note) == "" and with_note(answer, "") == answer  # no long answer: nothing to append to
    assert without_note("No note here.", note) == "No note here."
