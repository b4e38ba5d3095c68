"""Gold demo fields built from dataset annotations (no LM)."""

from __future__ import annotations

import dspy

from disambig.optimizers.gold import MAX_CHARS, with_gold_fields
from disambig.programs.context import UNTRUSTED_NOTE
from disambig.signatures import Disambiguation

MEN, WOMEN, EVER = "Most goals, men?", "Most goals, women?", "Most goals ever, any sport?"


def asqa_row(**overrides) -> dspy.Example:
    fields = dict(
        id="q1", question="Who has the most goals?", long_answers=["Men: Ronaldo. Women: Sinclair.", "other"],
        interpretations=[{"question": MEN, "answers": ["Cristiano Ronaldo"]},
                         {"question": WOMEN, "answers": ["Christine Sinclair", "Sinclair"]},
                         {"question": EVER, "answers": ["Josef Bican"]}],
        evidence=[{"title": "Ronaldo", "text": "Cristiano Ronaldo holds the men's record."},
                  {"title": "Women's football", "text": "Sinclair scored 190 goals."},
                  {"title": "Ronaldo", "text": "Cristiano Ronaldo holds the men's record."}],
    )
    return dspy.Example(**(fields | overrides)).with_inputs("question")


def test_answers_are_cited_by_the_passage_that_states_them():
    gold = with_gold_fields(asqa_row())
    # Sinclair's first answer is not in any passage; her second is, in passage 2. Bican is in none: no pair.
    assert gold.disambiguations == [Disambiguation(question=MEN, answer="Cristiano Ronaldo", passage=1),
                                    Disambiguation(question=WOMEN, answer="Sinclair", passage=2)]
    # The repeated passage is kept once; demos frame passages as live inputs do (quoted, after the untrusted note).
    assert gold.passages == (f"{UNTRUSTED_NOTE}\n<passage>[1] Ronaldo | Cristiano Ronaldo holds the men's record."
                             "</passage>\n<passage>[2] Women's football | Sinclair scored 190 goals.</passage>")
    assert gold.long_answer == "Men: Ronaldo. Women: Sinclair."
    assert gold.sub_questions == [MEN, WOMEN, EVER]


def test_inputs_and_metric_fields_are_unchanged():
    row = asqa_row()
    gold = with_gold_fields(row)
    assert gold.inputs().toDict() == {"question": row.question}
    assert gold.interpretations == row.interpretations and gold.long_answers == row.long_answers


def test_rows_without_evidence_get_no_passages_and_single_readings_no_sub_questions():
    row = asqa_row(evidence=[], interpretations=[{"question": MEN, "answers": ["Cristiano Ronaldo"]}], long_answers=[])
    gold = with_gold_fields(row)
    assert not {"passages", "disambiguations", "sub_questions", "long_answer", "document"} & set(gold.keys())
    assert [i.label for i in gold.intents] == [MEN] and gold.concise_answer == "Cristiano Ronaldo"


def test_long_passages_are_cut_at_a_word_boundary():
    text = "word " * 400
    gold = with_gold_fields(asqa_row(evidence=[{"title": "", "text": "Cristiano Ronaldo " + text}]))
    passage = gold.passages.splitlines()[1].removeprefix("<passage>[1] ").removesuffix("</passage>")
    assert len(passage) <= MAX_CHARS + 4 and passage.endswith("word ...")


def test_adf_synthesis_demo_has_one_intent_per_reading_and_a_concise_answer():
    gold = with_gold_fields(asqa_row())
    assert [intent.label for intent in gold.intents] == [i["question"] for i in asqa_row().interpretations]
    assert gold.intents[0].key_facts == asqa_row().interpretations[0]["answers"][:3]
    assert gold.concise_answer == asqa_row().interpretations[0]["answers"][0]
