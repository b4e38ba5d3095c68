"""AMD with a scripted engine: three sub-questions of the three kinds, answers, reflection that refines or drops
them; and the three ways an expansion is searched (sparse string, dense vector mix, RRF by passage id)."""

from __future__ import annotations

import dspy
import numpy as np
import pytest
from program_fakes import scripted_lm
from retrieval_fakes import VocabEmbedder

from disambig.lm.adapter import CompactJSONAdapter
from disambig.programs.amd.expanded_retrieval import (
    DenseExpansion,
    Expansion,
    FusionExpansion,
    SparseExpansion,
    mixed_vector,
    sparse_query,
)
from disambig.programs.amd.program import AMD, SUB_QUESTION_KINDS
from disambig.retrieval.passage import Passage
from disambig.signatures import DialogicAnswer, ReflectiveFeedback, SocraticQuestions

QUERY = "zebra stripes"
SUB_QUESTIONS = {
    "clarification": "Which zebra species has the boldest stripes?",
    "assumption_probing": "Do all zebras have stripes?",
    "implication_probing": "What do the lion and the zebra have to do with stripes?",
}


def amd_rules(keep=lambda user: True) -> dict:
    """The Socratic step asks the three questions above; the answerer names the first word of the sub-question;
    the feedback agent keeps (and upper-cases) an answer when ``keep(user message)``."""
    return {
        "Ask three Socratic questions": lambda _: SUB_QUESTIONS,
        "Answer the question, raised": lambda user: {"answer": "answer to " + user.split("sub_question: ")[1]},
        "Review an answer": lambda user: {"keep": keep(user),
                                          "refined_answer": "REFINED " + user.split("answer: ")[1]},
    }


def configure(rules: dict):
    lm, engine = scripted_lm(rules)
    dspy.configure(lm=lm, adapter=CompactJSONAdapter())
    return engine


def test_the_socratic_signature_has_one_typed_output_per_kind():
    assert tuple(SocraticQuestions.output_fields) == SUB_QUESTION_KINDS
    assert tuple(SocraticQuestions.input_fields) == ("query",)
    assert tuple(DialogicAnswer.output_fields) == ("answer",)
    assert tuple(ReflectiveFeedback.output_fields) == ("keep", "refined_answer")
    assert ReflectiveFeedback.output_fields["keep"].annotation is bool


def test_amd_asks_three_sub_questions_of_the_three_kinds_and_answers_each():
    engine = configure(amd_rules())
    pred = AMD()(query=QUERY)
    assert pred.notes["kinds"] == list(SUB_QUESTION_KINDS)
    assert pred.sub_questions == list(SUB_QUESTIONS.values())
    assert pred.texts == [f"REFINED answer to {q}" for q in SUB_QUESTIONS.values()]
    assert pred.notes["kept"] == [True, True, True]
    # 1 Socratic call, one answer per sub-question, then one reflection per answer
    assert [phrase.split()[0] for phrase, _ in engine.calls] == ["Ask"] + ["Answer"] * 3 + ["Review"] * 3


def test_reflection_can_drop_an_answer():
    configure(amd_rules(keep=lambda user: "Do all zebras" not in user))
    pred = AMD()(query=QUERY)
    assert pred.notes["kept"] == [True, False, True]
    assert len(pred.texts) == 2 and not any("Do all zebras" in t for t in pred.texts)
    # the dropped answer leaves its sub-question's fusion query without an answer
    assert pred.fusion_queries[1] == f"{QUERY} Do all zebras have stripes?"
    assert pred.fusion_queries[0].endswith("REFINED answer to Which zebra species has the boldest stripes?")


def test_without_reflection_every_answer_is_kept_as_written():
    engine = configure(amd_rules(keep=lambda user: False))
    pred = AMD(reflect=False)(query=QUERY)
    assert pred.texts == [f"answer to {q}" for q in SUB_QUESTIONS.values()]
    assert not any(phrase.startswith("Review") for phrase, _ in engine.calls)


def test_an_unparsable_socratic_reply_gives_no_expansion_and_is_noted():
    configure({"Ask three Socratic questions": lambda _: "not json at all"})
    pred = AMD()(query=QUERY)
    assert pred.sub_questions == [] and pred.texts == [] and pred.fusion_queries == []
    assert pred.notes["failures"] == ["socratic"]


def test_the_temperature_is_sent_with_every_call():
    lm, engine = scripted_lm(amd_rules())
    seen = []
    complete = engine.complete
    engine.complete = lambda request: seen.append(request.config.temperature) or complete(request)
    dspy.configure(lm=lm, adapter=CompactJSONAdapter())
    AMD(temperature=0.5)(query=QUERY)
    assert seen == [0.5] * 7


@pytest.mark.parametrize("kwargs, message", [({"temperature": 3.0}, "temperature=3.0"),
                                             ({"max_tokens": 0}, "max_tokens=0")])
def test_amd_refuses_bad_decoding_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        AMD(**kwargs)


class RecordingRetriever:
    """Returns fixed rankings per query and records the queries it was asked."""

    name = "recording"

    def __init__(self, rankings: dict[str, list[str]] | None = None, size: int = 10) -> None:
        self.rankings, self.queries, self._size = rankings or {}, [], size

    @property
    def size(self) -> int:
        return self._size

    def batch_search(self, queries: list[str], k: int = 10) -> list[list[Passage]]:
        self.queries.extend(queries)
        return [[Passage(pid, pid, "", 1.0 / r, r) for r, pid in enumerate(self.rankings.get(q, ["p1"])[:k], 1)]
                for q in queries]


EXPANSION = Expansion("zebra", ("Which zebra?", "Why stripes?"), ("Plains zebra.", "Flies avoid stripes."),
                      ("zebra Which zebra? Plains zebra.", "zebra Why stripes? Flies avoid stripes."))


class FixedExpander(dspy.Module):
    """An expansion program that needs no LM: always ``EXPANSION``."""

    def forward(self, query: str) -> dspy.Prediction:
        return dspy.Prediction(sub_questions=list(EXPANSION.sub_questions), texts=list(EXPANSION.texts),
                               fusion_queries=list(EXPANSION.fusion_queries), notes={})


def test_the_sparse_query_is_the_repeated_query_then_sub_questions_then_answers():
    assert sparse_query(EXPANSION, 2) == "zebra zebra Which zebra? Why stripes? Plains zebra. Flies avoid stripes."


def test_the_sparse_retriever_sends_the_expansion_to_its_base_as_one_string():
    configure({})
    base = RecordingRetriever()
    SparseExpansion("amd-sparse", base, FixedExpander(), query_repeats=5).search("zebra", 1)
    assert base.queries == [" ".join(["zebra"] * 5 + list(EXPANSION.sub_questions) + list(EXPANSION.texts))]


def test_the_dense_vector_is_the_renormalised_mix_of_unit_vectors():
    # q = e1, answers e2 and e3: 0.7 e1 + 0.3 (e2 + e3) / 2 = (0.7, 0.15, 0.15), norm sqrt(0.535) = 0.731437
    q, texts = np.eye(3, dtype=np.float32)[0], np.eye(3, dtype=np.float32)[1:]
    assert mixed_vector(q, texts, 0.7) == pytest.approx([0.957020, 0.205076, 0.205076], abs=1e-6)
    assert mixed_vector(q, np.zeros((0, 3)), 0.7) == pytest.approx(q)  # every answer dropped: the query alone


def test_the_dense_retriever_searches_the_index_with_the_mixed_vector(corpus, settings):
    from disambig.retrieval import build_retriever

    configure({})
    embedder = VocabEmbedder()
    dense = build_retriever("dense", corpus=corpus, settings=settings, embedder=embedder)
    retriever = DenseExpansion("amd-dense", dense, FixedExpander())
    expected = mixed_vector(embedder.encode(["zebra"])[0], embedder.encode(list(EXPANSION.texts)), 0.7)
    assert retriever.query_vector(retriever.expand("zebra")) == pytest.approx(expected)
    # the vocabulary axes (zebra, stripes, lion, ants, penguin, ice): query (1,0,...), answers zebra and stripes
    hits = retriever.search("zebra", 4)
    scores = dense.vectors() @ expected
    assert [h.id for h in hits[:2]] == ["p2", "p3"]
    assert hits[0].score == pytest.approx(float(scores.max()), abs=1e-6)


def test_rrf_fuses_the_per_sub_question_rankings_by_passage_id():
    configure({})
    a, b = EXPANSION.fusion_queries
    base = RecordingRetriever({a: ["p1", "p2"], b: ["p2", "p3"], "zebra": ["p4"]})
    hits = FusionExpansion("amd-rrf", base, FixedExpander(), rrf_k=60).search("zebra", 3)
    # p2: 1/62 + 1/61, p1: 1/61, p3: 1/62 (k = 60); the query's own ranking is not fused by default
    assert [(h.id, h.rank) for h in hits] == [("p2", 1), ("p1", 2), ("p3", 3)]
    assert hits[0].score == pytest.approx(1 / 62 + 1 / 61)
    assert base.queries == [a, b]
    with_query = FusionExpansion("amd-rrf", base, FixedExpander(), include_query=True).search("zebra", 4)
    assert {h.id for h in with_query} == {"p1", "p2", "p3", "p4"}
