"""``disambig.programs.passage_talk``: what it cuts from answers, what it leaves alone, and that every prediction
goes through it."""

from __future__ import annotations

import pytest

from disambig.lm.usage import Trace
from disambig.programs.passage_talk import strip_passage_talk, without_passage_talk
from disambig.programs.result import Interpretation, make_prediction


@pytest.mark.parametrize(("sentence", "expected"), [
    # rule 2: a lead-in naming a passage as the source is cut, the fact kept with a capital
    ("The passage states that the show premiered on September 20, 2016, on NBC.",
     "The show premiered on September 20, 2016, on NBC."),
    ("The passage [4] also mentions that Sinclair has 187 goals.", "Sinclair has 187 goals."),
    ("The first and second passages state that it rained.", "It rained."),
    ("According to the first passage, 10.", "10."),
    ("Based on the information provided in the passages, Hannah Montana picks Jake.", "Hannah Montana picks Jake."),
    ("In the passage, it is stated that Elmer Fudd is an adversary of Bugs Bunny.",
     "Elmer Fudd is an adversary of Bugs Bunny."),
    ("The passage states: 'Full House is a sitcom by Jeff Franklin.'", "Full House is a sitcom by Jeff Franklin."),
    ("The passage states that 'Silver Bells' is sung by Doris Day.",  # the quote is the title's: kept
     "'Silver Bells' is sung by Doris Day."),
    # rule 3: a trailing source phrase is cut before the sentence's end
    ("He is an adversary of Bugs Bunny in the first passage.", "He is an adversary of Bugs Bunny."),
    ("The first bottle was made in 2000, according to the passage from Genie in a Bottle.",
     "The first bottle was made in 2000."),
    # rule 1: a sentence only about where the answer is, or what the passages lack, is dropped ...
    ("The passage that provides the answer is [5].", ""),
    ("The other three passages do not provide any information about the elimination.", ""),
    ("The second passage also confirms this.", ""),
    ("These passages provide a clear and concise answer to the question.", ""),
    ("This is stated in the second passage.", ""),
    ("The passage [1] states that", ""),  # a reply cut short after its lead-in
    ("This can be seen in the first passage of the given text, which states that", ""),
    ("This is stated in the passage that mentions the V-2 rocket reaching space.", ""),  # no that-clause: no fact
    # ... unless it carries a fact in a that-clause
    ("The passage [4] provides context by mentioning that Friday Night Lights is a drama.",
     "Friday Night Lights is a drama."),
    ("The quoted passages support the answer that East Dillon wins.", "East Dillon wins."),
    ("The information is provided in the first passage, which states that the parks opened in 1936.",
     "The parks opened in 1936."),
    # left alone: no passage talk, or a mention that cutting would break
    ("The passage of the bill provides funding.", "The passage of the bill provides funding."),
    ("The first passage describes the car as a Sunbeam.", "The first passage describes the car as a Sunbeam."),
    ("No passage was possible through the strait.", "No passage was possible through the strait."),
    ("This was seen as a rite of passage in ancient Greece.", "This was seen as a rite of passage in ancient Greece."),
    ("The passage does not freeze.", "The passage does not freeze."),
    ("In the passage of the bill, Congress voted 60-40.", "In the passage of the bill, Congress voted 60-40."),
    ("He hid in the passage.", "He hid in the passage."),
    ('The passage states: "Yes" and "No".', '"Yes" and "No".'),  # two quotes, not one around it all: both kept
    ("The passage states that eBay bought it.", "eBay bought it."),
    ("The quoted passages provide information about Christine Sinclair, who scored 187 goals.",  # the answer is there
     "The quoted passages provide information about Christine Sinclair, who scored 187 goals."),
])
def test_one_sentence(sentence, expected):
    cleaned = strip_passage_talk(sentence)
    assert cleaned.text == expected
    assert cleaned.changed == (expected != sentence)


def test_a_text_keeps_its_facts_and_counts_the_sentences_changed():
    text = ("Brooks Koepka won the men's event in 2017. The passage [3] states that Park Sung-hyun won the women's "
            "event. The other passages do not mention it. This is stated in the second passage.")
    cleaned = strip_passage_talk(text)
    assert cleaned.text == "Brooks Koepka won the men's event in 2017. Park Sung-hyun won the women's event."
    assert cleaned.changed == 3


@pytest.mark.parametrize("text", ["", None, "No talk here. The passage of time heals.", "Sources disagree on it."])
def test_text_without_talk_is_returned_unchanged(text):
    assert strip_passage_talk(text).text == text and strip_passage_talk(text).changed == 0


def test_an_answer_that_is_all_talk_is_kept_rather_than_emptied_and_the_inputs_are_not_changed():
    readings = [{"question": "Who won in the first passage?", "answer": "According to the passage, Koepka."},
                {"question": "Who won?", "answer": "The passage that provides the answer is [2]."}]
    talkless = without_passage_talk(readings, "The quoted passages provide information about golf.")
    kept, answer, changed = talkless.interpretations, talkless.long_answer, talkless.changed
    assert answer == "The quoted passages provide information about golf."  # nothing else to show
    assert kept == [{"question": "Who won?", "answer": "Koepka."},
                    {"question": "Who won?", "answer": "The passage that provides the answer is [2]."}]
    assert changed == 2
    assert readings[0]["answer"] == "According to the passage, Koepka."


def test_every_prediction_is_cleaned_and_the_trace_counts_it():
    readings = [Interpretation("Who won?", "The passage states that Koepka won.", ("p1",))]
    prediction = make_prediction(readings, "Koepka won. This can be seen in the first passage.", Trace())
    assert prediction.long_answer == "Koepka won."
    assert prediction.interpretations[0]["answer"] == "Koepka won."
    assert prediction.trace["notes"]["passage_talk"] == 2
    assert make_prediction(readings[:0], "Koepka won.", Trace()).trace["notes"]["passage_talk"] == 0


def test_line_breaks_and_spacing_around_a_changed_sentence_are_kept():
    bullets = "\n- bullet A.\n- The other passages do not mention B."  # a bullet's sentence starts with "- ": kept
    text = "Koepka won.  Park won.\n\nThe passage [2] states that Kim won." + bullets
    assert strip_passage_talk(text).text == "Koepka won.  Park won.\n\nKim won." + bullets
    dropped = strip_passage_talk("The passage that provides the answer is [1].\nKoepka won. This is stated in "
                                 "passage [1].")
    assert dropped.text == "Koepka won." and dropped.changed == 2


def test_long_runs_of_spaces_take_no_time(monkeypatch):
    import time

    text = "passage x" + " " * 20_000 + "in x."
    start = time.perf_counter()
    strip_passage_talk(text)
    assert time.perf_counter() - start < 1.0  # quadratic before: 14 s
