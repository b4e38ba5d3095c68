"""DIVA with anchored answers, with a scripted engine: one answer call per reading, grades, the completed answer."""

from __future__ import annotations

import dspy
from program_fakes import FakeEmbedder, FakeRetriever, scripted_lm

from disambig.lm.adapter import CompactJSONAdapter
from disambig.programs import build_program
from disambig.programs.diva.anchored import completed, spread
from disambig.programs.rerank import Reranker
from disambig.programs.result import Interpretation

QUESTION = "Who has the most goals in world football?"
MEN = "Who has the most international goals in men's football?"
WOMEN = "Who has the most international goals in women's football?"
CAREER = "Who scored the most goals in a football career?"


def rules(answers: dict[str, tuple[str, int]], long_answer: str = "Cristiano Ronaldo leads the men.") -> dict:
    """Scripted steps; ``answers`` maps a reading to the (answer, passage number) its answer call returns."""
    return {
        "Decide why a question may be ambiguous": lambda _: {"reason": "men, women or careers", "types": ["AmbSub"]},
        "Rewrite the ambiguous question": lambda _: {"sub_questions": [MEN, WOMEN, CAREER]},
        "Answer one specific reading": lambda user: dict(zip(
            ("answer", "passage"), answers[user.rsplit("question: ", 1)[1].strip()], strict=True)),
        "Write a long-form answer of at least three sentences": lambda _: {"long_answer": long_answer},
        "Without any passages": lambda _: {"long_answer": "From memory: Ronaldo."},
    }


def run(answers, **kwargs):
    lm, engine = scripted_lm(rules(answers, **kwargs))
    dspy.configure(lm=lm, adapter=CompactJSONAdapter())
    program = build_program("diva-anchored", retriever=FakeRetriever(), embedder=FakeEmbedder(), k=3)
    return program(question=QUESTION), engine


def steps(engine) -> list[str]:
    return [phrase.split()[0] for phrase, _ in engine.calls]


def passage_number(pred, title: str) -> int:
    return [p["title"] for p in pred.passages].index(title) + 1


def test_every_reading_is_asked_on_its_own_and_the_answered_ones_are_the_readings():
    probe = build_program("diva-anchored", retriever=FakeRetriever(), embedder=FakeEmbedder(), k=3)
    titles = [p.title for p in spread(probe.reranker, QUESTION, [MEN, WOMEN, CAREER], 3)]
    answers = {MEN: ("Cristiano Ronaldo", titles.index("Cristiano Ronaldo") + 1),
               WOMEN: ("Christine Sinclair", titles.index("Christine Sinclair") + 1),
               CAREER: ("unknown", 0)}
    pred, engine = run(answers)
    assert steps(engine) == ["Decide", "Rewrite", "Answer", "Answer", "Answer", "Write"]
    assert [(i["question"], i["answer"]) for i in pred.interpretations] == [
        (MEN, "Cristiano Ronaldo"), (WOMEN, "Christine Sinclair")]
    assert pred.interpretations[0]["passage_ids"] == ["p1"] and pred.interpretations[1]["passage_ids"] == ["p2"]
    notes = pred.trace["notes"]
    assert notes["grade"] == "PartialUseful" and notes["answered"] == [True, True, False]
    # the consolidation left Sinclair out: a sentence naming her reading is added
    assert pred.long_answer == f"Cristiano Ronaldo leads the men. {WOMEN} Christine Sinclair."
    assert pred.trace["lm_calls"] == 6 and pred.trace["retrieval_calls"] == 4  # the question's and each reading's


def test_no_reading_answered_is_useless_and_answers_closed_book():
    pred, engine = run({MEN: ("unknown", 0), WOMEN: ("Sinclair", 9), CAREER: ("", 1)})
    assert steps(engine)[-1] == "Without" and "Write" not in steps(engine)
    assert pred.trace["notes"]["grade"] == "Useless"
    assert pred.interpretations == [] and pred.passages == []
    assert pred.long_answer == "From memory: Ronaldo."


def test_spread_gives_each_reading_its_best_passage_before_any_second_best():
    reranker = Reranker(FakeRetriever(), FakeEmbedder(), first_stage=6)
    titles = [p.title for p in spread(reranker, QUESTION, [MEN, WOMEN, CAREER], 4)]
    assert len(titles) == 4 == len(set(titles))
    assert {"Cristiano Ronaldo", "Christine Sinclair", "Josef Bican"} <= set(titles)
    # the question's own best candidate comes first, as in VanillaRAG's ranking
    assert titles[0] == reranker.search(QUESTION, 1)[0].title


def test_completed_adds_only_the_answers_the_long_answer_leaves_out():
    found = [Interpretation(MEN, "Cristiano Ronaldo", ("p1",)), Interpretation(WOMEN, "Christine Sinclair.", ("p2",))]
    assert completed("cristiano ronaldo and christine sinclair lead.", found) == (
        "cristiano ronaldo and christine sinclair lead.")
    assert completed("Ronaldo leads.", found) == (
        f"Ronaldo leads. {MEN} Cristiano Ronaldo. {WOMEN} Christine Sinclair.")
    assert completed("", found[:1]) == f"{MEN} Cristiano Ronaldo."


def test_ask_shows_the_readings_with_their_passages_and_the_ones_left_unanswered():
    from rich.console import Console

    from disambig.cli.ask_cmd import _show

    probe = build_program("diva-anchored", retriever=FakeRetriever(), embedder=FakeEmbedder(), k=3)
    titles = [p.title for p in spread(probe.reranker, QUESTION, [MEN, WOMEN, CAREER], 3)]
    pred, _ = run({MEN: ("Cristiano Ronaldo", titles.index("Cristiano Ronaldo") + 1), WOMEN: ("unknown", 0),
                   CAREER: ("Josef Bican", titles.index("Josef Bican") + 1)})
    console = Console(record=True, width=200)
    _show(console, QUESTION, pred)
    text = console.export_text()
    assert "Retrieval grade: PartialUseful (2 of 3 readings answered from the passages)" in text
    assert f"not answered: {WOMEN}" in text and f"not answered: {MEN}" not in text
    rows = [line for line in text.splitlines() if line.startswith("│") and CAREER in line]
    assert len(rows) == 1 and rows[0].count("Josef Bican") == 2  # the answer and the passage it cites
