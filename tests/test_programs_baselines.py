"""The baselines' control flow with a scripted engine: VanillaRAG, IterativeRAG (tree limits), DtV."""

from __future__ import annotations

import itertools

import dspy
from program_fakes import FakeRetriever, scripted_lm

from disambig.lm.adapter import CompactJSONAdapter
from disambig.programs import build_program

QUESTION = "Who has the most goals in world football?"
READINGS = ["Who has the most goals in men's football?", "Who has the most goals in women's football?"]


def base_rules(extract) -> dict:
    return {
        "Decide why a question may be ambiguous": lambda _: {"reason": "men or women", "types": ["AmbSub"]},
        "Rewrite the ambiguous question": lambda _: {"sub_questions": READINGS},
        "Using only the numbered passages": extract,
        "Write a long-form answer of at least three sentences": lambda _: {"long_answer": "Several answers."},
    }


def configure(extract):
    lm, engine = scripted_lm(base_rules(extract))
    dspy.configure(lm=lm, adapter=CompactJSONAdapter())
    return engine


def test_vanilla_rag_retrieves_once_then_extracts_and_consolidates():
    engine = configure(lambda _: {"disambiguations": [{"question": READINGS[0], "answer": "Ronaldo", "passage": 1}]})
    retriever = FakeRetriever()
    pred = build_program("vanilla-rag", retriever=retriever, k=3)(question=QUESTION)
    assert retriever.calls == 1 and len(pred.passages) == 3
    assert [phrase.split()[0] for phrase, _ in engine.calls] == ["Using", "Write"]
    assert pred.interpretations[0]["passage_ids"] == [pred.passages[0]["id"]]
    assert pred.trace["lm_calls"] == 2 and pred.trace["retrieval_calls"] == 1


def test_iterative_rag_stops_at_max_nodes():
    counter = itertools.count()

    def extract(_):  # every call finds two brand-new readings
        return {"disambiguations": [{"question": f"reading {next(counter)}?", "answer": "x", "passage": 1}
                                    for _ in range(2)]}

    engine = configure(extract)
    pred = build_program("iterative-rag", retriever=FakeRetriever(), max_depth=3, max_nodes=5)(question=QUESTION)
    assert len(pred.interpretations) == 5
    # root finds 2, each of those finds 2 more -> 5 nodes after 3 extraction calls
    assert [p.split()[0] for p, _ in engine.calls] == ["Using"] * 3 + ["Write"]
    assert pred.trace["notes"]["tree_nodes"] == 5


def test_iterative_rag_stops_at_max_depth():
    counter = itertools.count()

    def extract(_):  # one new reading per call: a chain as deep as the tree allows
        return {"disambiguations": [{"question": f"reading {next(counter)}?", "answer": "x", "passage": 1}]}

    engine = configure(extract)
    retriever = FakeRetriever()
    pred = build_program("iterative-rag", retriever=retriever, max_depth=2, max_nodes=10)(question=QUESTION)
    # level 1 (root) finds reading 0; level 2 (reading 0) finds reading 1, which is not expanded
    assert [i["question"] for i in pred.interpretations] == ["reading 0?", "reading 1?"]
    assert retriever.calls == 2 and pred.trace["retrieval_calls"] == 2
    assert len([c for c in engine.calls if c[0].startswith("Using")]) == 2


def test_iterative_rag_does_not_revisit_a_reading():
    engine = configure(lambda _: {"disambiguations": [{"question": QUESTION, "answer": "x", "passage": 1}]})
    pred = build_program("iterative-rag", retriever=FakeRetriever())(question=QUESTION)
    assert pred.interpretations == []
    assert len(engine.calls) == 2  # one extraction finds nothing new, then the answer


def test_dtv_retrieves_per_reading_and_merges_rank_by_rank():
    engine = configure(lambda _: {"disambiguations": []})
    retriever = FakeRetriever()
    pred = build_program("dtv-no-verify", retriever=retriever, k=2)(question=QUESTION)
    assert retriever.calls == len(READINGS) and pred.trace["retrieval_calls"] == 2
    first = [retriever.search(r, 1)[0].id for r in READINGS]
    assert [p["id"] for p in pred.passages] == list(dict.fromkeys(first))[:2]
    assert [p.split()[0] for p, _ in engine.calls] == ["Decide", "Rewrite", "Using", "Write"]
    assert pred.trace["notes"]["pseudo_interpretations"] == READINGS
