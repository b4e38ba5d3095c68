"""DIVA with anchored answers, with a scripted engine: one answer call per reading, grades, the completed answer."""

from __future__ import annotations

import dspy
import pytest
from program_fakes import FakeEmbedder, FakeRetriever, scripted_lm

from disambig.lm.adapter import CompactJSONAdapter
from disambig.programs import build_program
from disambig.programs.diva.anchored import completed, spread
from disambig.programs.rerank import Reranker
from disambig.programs.result import Interpretation
from disambig.retrieval.passage import Passage

QUESTION = "Who has the most goals in world football?"
MEN = "Who has the most international goals in men's football?"
WOMEN = "Who has the most international goals in women's football?"
CAREER = "Who scored the most goals in a football career?"


def rules(answers: dict[str, tuple[str, int]], long_answer: str = "Cristiano Ronaldo leads the men.") -> dict:
    """Scripted steps; ``answers`` maps a reading to the (answer, passage number) its answer call returns."""
    return {
        "Decide why a question may be ambiguous": lambda _: {"reason": "men, women or careers", "types": ["AmbSub"]},
        "Rewrite the ambiguous question": lambda _: {"sub_questions": [MEN, WOMEN, CAREER]},
        "Answer one specific reading": lambda user: reply(answers[user.rsplit("question: ", 1)[1].strip()]),
        "Write a long-form answer of at least three sentences": lambda _: {"long_answer": long_answer},
        "Without any passages": lambda _: {"long_answer": "From memory: Ronaldo."},
    }


def reply(answer: tuple[str, int] | str) -> dict | str:
    """The answer call's reply: the two fields, or raw text (a reply that does not parse)."""
    return answer if isinstance(answer, str) else {"answer": answer[0], "passage": answer[1]}


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
    titles = [p.title for p in spread(probe.reranker, QUESTION, [MEN, WOMEN, CAREER], 3)[0]]
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
    assert pred.trace["lm_calls"] == 6 and pred.trace["retrieval_calls"] == 3  # one per reading (they fill k=3)


def test_no_reading_answered_is_useless_and_answers_closed_book():
    pred, engine = run({MEN: ("unknown", 0), WOMEN: ("Sinclair", 9), CAREER: ("", 1)})
    assert steps(engine)[-1] == "Without" and "Write" not in steps(engine)
    assert pred.trace["notes"]["grade"] == "Useless"
    assert pred.interpretations == [] and len(pred.passages) == 3  # what was retrieved is still reported
    assert pred.long_answer == "From memory: Ronaldo."


@pytest.mark.parametrize("refusal", ["Unknown.", "not stated", "N/A", "None", "The passages do not say"])
def test_a_refusal_in_other_words_is_not_an_answer_even_citing_a_passage(refusal):
    pred, _ = run({MEN: (refusal, 1), WOMEN: (refusal, 2), CAREER: (refusal, 3)})
    assert pred.trace["notes"]["answered"] == [False, False, False] and pred.interpretations == []


def test_a_reply_that_does_not_parse_leaves_its_reading_unanswered_and_is_counted():
    probe = build_program("diva-anchored", retriever=FakeRetriever(), embedder=FakeEmbedder(), k=3)
    titles = [p.title for p in spread(probe.reranker, QUESTION, [MEN, WOMEN, CAREER], 3)[0]]
    pred, _ = run({MEN: ("Cristiano Ronaldo", titles.index("Cristiano Ronaldo") + 1), WOMEN: "no fields here",
                   CAREER: ("unknown", 0)})
    notes = pred.trace["notes"]
    assert notes["answered"] == [True, False, False] and notes["answer_failures"] == 1
    assert [i["answer"] for i in pred.interpretations] == ["Cristiano Ronaldo"]


class Rankings:
    """A retriever whose rankings are scripted: the question's candidates ``q0, q1, ...``, reading ``j``'s
    ``rj_0, rj_1, ...``; the reranker keeps the question's order (its embedder scores them by position)."""

    size = 50

    def __init__(self, readings: list[str]) -> None:
        self.readings = readings
        self.searched: list[list[str]] = []

    def search(self, query: str, k: int = 10) -> list[Passage]:
        return [Passage(f"q{i}", "", f"question candidate {i}") for i in range(k)]

    def batch_search(self, queries: list[str], k: int = 10) -> list[list[Passage]]:
        self.searched.append(list(queries))
        return [[Passage(f"r{self.readings.index(q)}_{i}", "", f"reading passage {i}") for i in range(k)]
                for q in queries]


class ByPosition:
    """Cosine that keeps the candidates' order: candidate ``i`` scores ``-i`` whatever the query."""

    def encode(self, texts: list[str]):
        import numpy as np

        out = np.zeros((len(texts), 2), dtype=np.float32)
        for row, text in enumerate(texts):
            n = int(text.rsplit(" ", 1)[1]) if text.startswith("question candidate") else 0
            out[row] = [1.0, -0.01 * n] if text.startswith("question candidate") else [1.0, 0.0]
        return out


def test_spread_takes_every_rankings_best_passage_before_any_second_best():
    readings = ["a?", "b?"]
    retriever = Rankings(readings)
    reranker = Reranker(retriever, ByPosition(), first_stage=10)
    passages, searches = spread(reranker, "Q?", readings, 4)
    assert [p.id for p in passages] == ["q0", "r0_0", "r1_0", "q1"] and searches == 3
    assert retriever.searched == [["a?", "b?"]]


def test_spread_leaves_the_questions_ranking_out_once_the_readings_fill_k_and_never_searches_the_question_twice():
    readings = ["a?", "b?", "c?"]
    reranker = Reranker(Rankings(readings), ByPosition(), first_stage=10)
    passages, searches = spread(reranker, "Q?", readings, 3)
    assert [p.id for p in passages] == ["r0_0", "r1_0", "r2_0"] and searches == 3
    retriever = Rankings(["Q?"])
    passages, searches = spread(Reranker(retriever, ByPosition(), first_stage=10), "Q?", ["q?"], 2)
    assert [p.id for p in passages] == ["q0", "q1"] and searches == 1 and retriever.searched == []


def test_completed_adds_only_the_answers_the_long_answer_leaves_out():
    found = [Interpretation(MEN, "Cristiano Ronaldo", ("p1",)), Interpretation(WOMEN, "Christine Sinclair.", ("p2",))]
    assert completed("cristiano ronaldo and christine sinclair lead.", found) == (
        "cristiano ronaldo and christine sinclair lead.")
    assert completed("Ronaldo leads.", found) == (
        f"Ronaldo leads. {MEN} Cristiano Ronaldo. {WOMEN} Christine Sinclair.")
    assert completed("", found[:1]) == f"{MEN} Cristiano Ronaldo."
    parks = [Interpretation("How many state parks are there in Virginia?", "43", ("p1",))]
    assert completed("There are 430 parks.", parks) == f"There are 430 parks. {parks[0].question} 43."
    assert completed("Cristiano Ronaldo's record stands.", found[:1]) == "Cristiano Ronaldo's record stands."


def test_ask_shows_the_readings_with_their_passages_and_the_ones_left_unanswered():
    from rich.console import Console

    from disambig.cli.ask_cmd import _show

    probe = build_program("diva-anchored", retriever=FakeRetriever(), embedder=FakeEmbedder(), k=3)
    titles = [p.title for p in spread(probe.reranker, QUESTION, [MEN, WOMEN, CAREER], 3)[0]]
    pred, _ = run({MEN: ("Cristiano Ronaldo", titles.index("Cristiano Ronaldo") + 1), WOMEN: ("unknown", 0),
                   CAREER: ("Josef Bican", titles.index("Josef Bican") + 1)})
    console = Console(record=True, width=200)
    _show(console, QUESTION, pred)
    text = console.export_text()
    assert "Retrieval grade: PartialUseful (2 of 3 readings answered from the passages)" in text
    assert f"not answered: {WOMEN}" in text and f"not answered: {MEN}" not in text
    rows = [line for line in text.splitlines() if line.startswith("│") and CAREER in line]
    assert len(rows) == 1 and rows[0].count("Josef Bican") == 2  # the answer and the passage it cites
