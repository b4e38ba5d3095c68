"""The baselines' control flow with a scripted engine: VanillaRAG, IterativeRAG (tree limits), PerReadingRAG, and
the reranker VanillaRAG shares with DIVA."""

from __future__ import annotations

import itertools

import dspy
import pytest
from program_fakes import FakeEmbedder, FakeRetriever, scripted_lm

from disambig.errors import ConfigurationError
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
    pred = build_program("vanilla-rag", retriever=retriever, embedder=FakeEmbedder(), k=3)(question=QUESTION)
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
    pred = build_program("iterative-rag", retriever=FakeRetriever(), embedder=FakeEmbedder(), max_depth=3,
                         max_nodes=5)(question=QUESTION)
    assert len(pred.interpretations) == 5
    # root finds 2 (level 2), each of those finds 2 more (level 3) -> 5 nodes after 3 extraction calls
    assert [p.split()[0] for p, _ in engine.calls] == ["Using"] * 3 + ["Write"]
    assert pred.trace["notes"]["tree_nodes"] == 5


def test_iterative_rag_keeps_readings_within_max_depth_levels():
    counter = itertools.count()

    def extract(_):  # one new reading per call: a chain as deep as the tree allows
        return {"disambiguations": [{"question": f"reading {next(counter)}?", "answer": "x", "passage": 1}]}

    engine = configure(extract)
    retriever = FakeRetriever()
    pred = build_program("iterative-rag", retriever=retriever, embedder=FakeEmbedder(), max_depth=3,
                         max_nodes=10)(question=QUESTION)
    # level 1 (root) finds reading 0 (level 2); reading 0 finds reading 1 (level 3), the last level: not expanded
    assert [i["question"] for i in pred.interpretations] == ["reading 0?", "reading 1?"]
    assert retriever.calls == 2 and pred.trace["retrieval_calls"] == 2
    assert len([c for c in engine.calls if c[0].startswith("Using")]) == 2


def test_iterative_rag_with_two_levels_reads_the_root_only():
    counter = itertools.count()
    engine = configure(lambda _: {"disambiguations": [{"question": f"r{next(counter)}?", "answer": "x",
                                                       "passage": 1}]})
    pred = build_program("iterative-rag", retriever=FakeRetriever(), embedder=FakeEmbedder(), max_depth=2)(
        question=QUESTION)
    assert [i["question"] for i in pred.interpretations] == ["r0?"]
    assert [p.split()[0] for p, _ in engine.calls] == ["Using", "Write"]


def test_iterative_rag_keeps_the_answer_of_a_reading_that_restates_the_question():
    engine = configure(lambda _: {"disambiguations": [{"question": QUESTION, "answer": "Ronaldo", "passage": 1}]})
    pred = build_program("iterative-rag", retriever=FakeRetriever(), embedder=FakeEmbedder())(question=QUESTION)
    assert [(i["question"], i["answer"]) for i in pred.interpretations] == [(QUESTION, "Ronaldo")]
    assert [p.split()[0] for p, _ in engine.calls] == ["Using", "Write"]  # kept, not expanded
    assert "Ronaldo" in engine.calls[-1][1]  # the answer reaches the consolidation


def test_iterative_rag_keeps_a_new_answer_to_a_question_already_seen():
    answers = iter(["Ronaldo", "Sinclair", "Bican"])
    configure(lambda _: {"disambiguations": [{"question": READINGS[0], "answer": next(answers), "passage": 1}]})
    pred = build_program("iterative-rag", retriever=FakeRetriever(), embedder=FakeEmbedder())(question=QUESTION)
    # the root finds (men, Ronaldo), expanded once; its extraction finds (men, Sinclair): kept, not expanded again
    assert [i["answer"] for i in pred.interpretations] == ["Ronaldo", "Sinclair"]


@pytest.mark.parametrize("kwargs", [{"max_depth": 0}, {"max_nodes": -1}])
def test_iterative_rag_refuses_impossible_limits(kwargs):
    with pytest.raises(ValueError, match="max_depth"):
        build_program("iterative-rag", retriever=FakeRetriever(), **kwargs)


def test_per_reading_rag_retrieves_per_reading_and_merges_rank_by_rank():
    engine = configure(lambda _: {"disambiguations": []})
    retriever = FakeRetriever()
    pred = build_program("per-reading-rag", retriever=retriever, k=2)(question=QUESTION)
    assert retriever.calls == len(READINGS) and pred.trace["retrieval_calls"] == 2
    first = [retriever.search(r, 1)[0].id for r in READINGS]
    assert [p["id"] for p in pred.passages] == list(dict.fromkeys(first))[:2]
    assert [p.split()[0] for p, _ in engine.calls] == ["Decide", "Rewrite", "Using", "Write"]
    assert pred.trace["notes"]["pseudo_interpretations"] == READINGS


def test_the_old_name_of_per_reading_rag_names_the_new_one():
    with pytest.raises(ConfigurationError, match="renamed 'per-reading-rag'"):
        build_program("dtv-no-verify", retriever=FakeRetriever())


def test_vanilla_rag_reranks_first_stage_candidates_by_cosine():
    # the retriever ranks by word overlap; the reranker by cosine of hashed bags of words
    retriever, embedder = FakeRetriever(), FakeEmbedder()
    configure(lambda _: {"disambiguations": []})
    pred = build_program("vanilla-rag", retriever=retriever, embedder=embedder, k=2, first_stage=6)(question=QUESTION)
    pool = retriever.search(QUESTION, 6)
    scores = embedder.encode([QUESTION]) @ embedder.encode([f"{p.title}: {p.text}" for p in pool]).T
    best = sorted(range(6), key=lambda i: (-scores[0, i], i))[:2]
    assert [p["id"] for p in pred.passages] == [pool[i].id for i in best]


def test_vanilla_rag_without_first_stage_keeps_the_retrievers_ranking():
    retriever = FakeRetriever()
    configure(lambda _: {"disambiguations": []})
    pred = build_program("vanilla-rag", retriever=retriever, k=2, first_stage=0)(question=QUESTION)
    assert [p["id"] for p in pred.passages] == [p.id for p in retriever.search(QUESTION, 2)]
