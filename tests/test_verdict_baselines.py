"""VerDICt's baselines as the paper configures them: RAC over the relaxed top-20, and DtV - verification."""

from __future__ import annotations

import dspy
import pytest
from program_fakes import FakeRetriever, scripted_lm

from disambig.lm.adapter import CompactJSONAdapter
from disambig.programs import PROGRAMS, build_program

QUESTION = "Who has the most goals in world football?"
READINGS = ["Who has the most goals in men's football?", "Who has the most goals in women's football?"]


class SpyRetriever(FakeRetriever):
    def __init__(self) -> None:
        super().__init__()
        self.queries: list[tuple[str, int]] = []

    def search(self, query, k=10):
        self.queries.append((query, k))
        return super().search(query, k)


def configure(**extra):
    lm, engine = scripted_lm({
        "Turn the question into a short, broad search query": lambda _: {"query": "most goals football"},
        "Using only the numbered passages": lambda _: {"disambiguations": [
            {"question": READINGS[0], "answer": "Ronaldo", "passage": 1},
            {"question": READINGS[1], "answer": "Sinclair", "passage": 2}]},
        "Write a long-form answer of at least three sentences": lambda _: {"long_answer": "Two answers."},
        "Decide why a question may be ambiguous": lambda _: {"reason": "men or women", "types": ["AmbSub"]},
        "Rewrite the ambiguous question": lambda _: {"sub_questions": READINGS},
        "Answer each of the specific questions": lambda _: {"answers": ["Cristiano Ronaldo"]},
        **extra,
    })
    dspy.configure(lm=lm, adapter=CompactJSONAdapter())
    return engine


def steps(engine) -> list[str]:
    return [phrase.split()[0] for phrase, _ in engine.calls]


def test_rac_top20_extracts_from_the_relaxed_top_k_in_one_call():
    engine = configure()
    retriever = SpyRetriever()
    pred = build_program("rac-top20", retriever=retriever)(question=QUESTION)
    assert retriever.queries == [("most goals football", 6)]  # k = 20 clamped to the 6-passage corpus
    assert steps(engine) == ["Turn", "Using", "Write"]
    assert engine.calls[1][1].count("<passage>[") == 6  # all six passages, numbered, in the one extraction call
    assert [i["passage_ids"] for i in pred.interpretations] == [[pred.passages[0]["id"]], [pred.passages[1]["id"]]]
    assert pred.trace["retrieval_calls"] == 1 and pred.trace["notes"]["method_lm_calls"] == 2
    assert pred.trace["notes"]["long_answer_cost"]["lm_calls"] == 1 and pred.long_answer == "Two answers."


def test_rac_top20_without_citations_or_long_answer_call():
    engine = configure()
    pred = build_program("rac-top20", retriever=SpyRetriever(), cite="none", long_answer="list",
                         relax=False)(question=QUESTION)
    assert steps(engine) == ["Using"]
    assert [i["passage_ids"] for i in pred.interpretations] == [[], []]
    assert pred.long_answer == f"{READINGS[0]} Ronaldo.\n{READINGS[1]} Sinclair."


def test_dtv_pseudo_returns_the_pseudo_interpretations_answered_closed_book():
    engine = configure()
    pred = build_program("dtv-pseudo")(question=QUESTION)
    assert steps(engine) == ["Decide", "Rewrite", "Answer"]
    # the scripted answer list is one short: the second reading stays unanswered
    assert [(i["question"], i["answer"], i["passage_ids"]) for i in pred.interpretations] == [
        (READINGS[0], "Cristiano Ronaldo", []), (READINGS[1], "", [])]
    assert pred.long_answer == f"{READINGS[0]} Cristiano Ronaldo.\n{READINGS[1]}"
    assert pred.passages == [] and pred.trace["retrieval_calls"] == 0
    assert pred.trace["notes"]["method_lm_calls"] == 2 and pred.trace["notes"]["answer_cost"]["lm_calls"] == 1


def test_dtv_pseudo_unanswered_is_the_papers_eq_1():
    engine = configure()
    pred = build_program("dtv-pseudo", answer="none")(question=QUESTION)
    assert steps(engine) == ["Decide", "Rewrite"]
    assert [i["answer"] for i in pred.interpretations] == ["", ""]
    assert pred.long_answer == "\n".join(READINGS)


def test_the_baselines_say_what_they_are():
    assert "DtV itself is diva" in PROGRAMS["dtv-pseudo"].summary and not PROGRAMS["dtv-pseudo"].needs_retriever
    assert "top-20" in PROGRAMS["rac-top20"].summary and PROGRAMS["verdict"].needs_retriever


@pytest.mark.parametrize(("name", "kwargs", "message"), [
    ("rac-top20", {"cite": "all"}, "cite='all'"),
    ("rac-top20", {"long_answer": "x"}, "long_answer='x'"),
    ("dtv-pseudo", {"answer": "rag"}, "answer='rag'"),
])
def test_bad_options_are_refused(name, kwargs, message):
    with pytest.raises(ValueError, match=message):
        build_program(name, retriever=FakeRetriever(), **kwargs)
