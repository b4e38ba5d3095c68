"""Conflicts surfaced by RAC's programs and VerDICt, with scripted engines: the prediction carries them with their
passages, the long answer says the sources disagree (no extra LM call), the readings stay, and answers in other
forms are no conflict."""

from __future__ import annotations

import re

import dspy
from program_fakes import FakeEmbedder, FakeRetriever, configure_scripted, scripted_lm

from disambig.lm.adapter import CompactJSONAdapter
from disambig.programs import build_program
from disambig.programs.verdict.consolidate import Consolidation
from disambig.programs.verdict.program import Feedback, cluster_claims
from disambig.retrieval.passage import Passage

QUESTION = "Who has the most goals in world football?"
MEN = "Who has the most international goals in men's football?"
WOMEN = "Who has the most international goals in women's football?"
WRITTEN = "Several answers."


def rac_rules(disambiguations: list[dict]) -> dict:
    return {"Using only the numbered passages": lambda _: {"disambiguations": disambiguations},
            "Write a long-form answer of at least three sentences": lambda _: {"long_answer": WRITTEN}}


def vanilla(disambiguations: list[dict]):
    _, engine = configure_scripted(rac_rules(disambiguations))
    pred = build_program("vanilla-rag", retriever=FakeRetriever(), embedder=FakeEmbedder(), k=3)(question=QUESTION)
    return pred, engine


def test_two_passages_answering_one_reading_differently_are_a_conflict():
    pred, engine = vanilla([{"question": MEN, "answer": "Cristiano Ronaldo", "passage": 1},
                            {"question": MEN, "answer": "Josef Bican", "passage": 2},
                            {"question": WOMEN, "answer": "Christine Sinclair", "passage": 3}])
    first, second, _ = pred.passages
    assert pred.conflicts == [{"question": MEN, "answers": [
        {"answer": "Cristiano Ronaldo", "passage_ids": [first["id"]]},
        {"answer": "Josef Bican", "passage_ids": [second["id"]]}]}]
    # the conflicting answers stay readings; the note names both and who gives each, after the LM's own answer
    assert [i["answer"] for i in pred.interpretations] == ["Cristiano Ronaldo", "Josef Bican", "Christine Sinclair"]
    assert pred.conflict_note == (f'Sources disagree on "{MEN}": Cristiano Ronaldo ({first["title"]}) vs Josef Bican '
                                  f'({second["title"]}).')
    assert pred.long_answer == f"{WRITTEN} {pred.conflict_note}"
    assert len(engine.calls) == 2 and pred.trace["lm_calls"] == 2  # extract + write, as without a conflict
    assert pred.trace["notes"]["conflicts"] == 1


def test_a_repeated_answer_keeps_every_passage_that_gives_it():
    pred, _ = vanilla([{"question": MEN, "answer": "Ronaldo", "passage": 1},
                       {"question": MEN, "answer": "Bican", "passage": 2},
                       {"question": MEN, "answer": "Ronaldo", "passage": 3}])
    ids = [p["id"] for p in pred.passages]
    assert pred.conflicts[0]["answers"] == [{"answer": "Ronaldo", "passage_ids": [ids[0], ids[2]]},
                                            {"answer": "Bican", "passage_ids": [ids[1]]}]
    assert len(pred.interpretations) == 2  # the repeat is still one reading, citing its first passage
    assert pred.interpretations[0]["passage_ids"] == [ids[0]]


def test_the_same_answer_in_other_forms_is_no_conflict():
    pred, _ = vanilla([{"question": MEN, "answer": "128", "passage": 1},
                       {"question": MEN, "answer": "128 goals", "passage": 2},
                       {"question": MEN, "answer": "one hundred twenty-eight", "passage": 3}])
    assert pred.conflicts == [] and pred.conflict_note == "" and pred.long_answer == WRITTEN
    assert pred.trace["notes"]["conflicts"] == 0


def test_rac_top20_and_iterative_rag_carry_conflicts_too():
    rules = rac_rules([{"question": MEN, "answer": "Ronaldo", "passage": 1},
                       {"question": MEN, "answer": "Bican", "passage": 2}])
    configure_scripted({**rules, "Turn the question into a short, broad search query": lambda _: {"query": "goals"}})
    top = build_program("rac-top20", retriever=FakeRetriever(), k=3)(question=QUESTION)
    assert [a["answer"] for a in top.conflicts[0]["answers"]] == ["Ronaldo", "Bican"]
    tree = build_program("iterative-rag", retriever=FakeRetriever(), embedder=FakeEmbedder(), k=3, max_depth=1)(
        question=QUESTION)
    assert [a["answer"] for a in tree.conflicts[0]["answers"]] == ["Ronaldo", "Bican"]
    assert tree.long_answer.endswith(tree.conflict_note)


def test_programs_without_per_passage_answers_carry_an_empty_list():
    configure_scripted({"Without any passages": lambda _: {"long_answer": "Ronaldo."}})
    pred = build_program("closed-book")(question=QUESTION)
    assert pred.conflicts == [] and pred.conflict_note == "" and pred.long_answer == "Ronaldo."


# VerDICt: six passages in retrieval order and what each passage's feedback call says.
def verdict_run(feedback: dict[str, dict], **kwargs):
    passages = [Passage(f"p{n}", title, f"Passage {title} about football goals.") for n, title in
                enumerate(feedback, 1)]

    class Retriever:
        name, size = "list", len(passages)

        def search(self, query, k=10):
            return passages[:k]

    def reply(user: str) -> dict:
        return feedback[re.search(r"<passage>(\w+) \|", user)[1]]

    lm, engine = scripted_lm({
        "Turn the question into a short, broad search query": lambda _: {"query": "football goals"},
        "ONE document, a passage from the search results": reply,
        "Write a long-form answer of at least three sentences": lambda _: {"long_answer": WRITTEN},
    })
    dspy.configure(lm=lm, adapter=CompactJSONAdapter())
    program = build_program("verdict", retriever=Retriever(), embedder=FakeEmbedder(), parallel=1, **kwargs)
    return program(question=QUESTION), engine


def planted(answer: str) -> dict[str, dict]:
    """Two passages for each reading, and E planting ``answer`` to the men's reading."""
    return {"A": {"interpretation": MEN, "answer": "Cristiano Ronaldo"},
            "B": {"interpretation": MEN, "answer": "Cristiano Ronaldo"},
            "C": {"interpretation": WOMEN, "answer": "Christine Sinclair"},
            "D": {"interpretation": WOMEN, "answer": "Christine Sinclair"},
            "E": {"interpretation": MEN, "answer": answer}}


def test_verdict_reports_a_planted_answer_in_a_cluster():
    pred, engine = verdict_run(planted("Zlatan Ibrahimovic"))
    assert pred.trace["notes"]["labels"] == [0, 0, 1, 1, 0]  # E joined the men's cluster; B is its medoid
    assert pred.conflicts == [{"question": MEN, "answers": [
        {"answer": "Cristiano Ronaldo", "passage_ids": ["p1", "p2"]},
        {"answer": "Zlatan Ibrahimovic", "passage_ids": ["p5"]}]}]
    assert pred.long_answer == (f'{WRITTEN} Sources disagree on "{MEN}": Cristiano Ronaldo (A, B) vs Zlatan '
                                'Ibrahimovic (E).')
    assert [i["answer"] for i in pred.interpretations] == ["Cristiano Ronaldo", "Christine Sinclair"]  # the medoids
    assert len(engine.calls) == 1 + 5 + 1  # relax, one feedback call per passage, write: no call for the conflict


def test_verdict_reports_a_planted_answer_set_apart_as_noise():
    long_name = "Zlatan Ibrahimovic of Paris Saint Germain, AC Milan, Inter and the Sweden national team"
    pred, _ = verdict_run(planted(long_name))
    assert pred.trace["notes"]["labels"] == [0, 0, 1, 1, -1]  # E is noise, but asks the men's question
    assert pred.conflicts[0]["answers"] == [{"answer": "Cristiano Ronaldo", "passage_ids": ["p1", "p2"]},
                                            {"answer": long_name, "passage_ids": ["p5"]}]


def test_verdict_same_answers_in_other_forms_are_no_conflict():
    pred, _ = verdict_run({
        "A": {"interpretation": MEN, "answer": "Cristiano Ronaldo"},
        "B": {"interpretation": MEN, "answer": "Ronaldo"},
        "C": {"interpretation": WOMEN, "answer": "Christine Sinclair"},
        "D": {"interpretation": WOMEN, "answer": "Sinclair"},
    })
    assert pred.conflicts == [] and pred.long_answer == WRITTEN


def test_verdict_with_no_long_answer_keeps_the_note_apart():
    pred, _ = verdict_run({
        "A": {"interpretation": MEN, "answer": "Cristiano Ronaldo"},
        "B": {"interpretation": MEN, "answer": "Cristiano Ronaldo"},
        "C": {"interpretation": MEN, "answer": "Zlatan Ibrahimovic"},
    }, long_answer="none")
    assert pred.long_answer == "" and pred.conflict_note.startswith("Sources disagree")


def feedback(passage_id: str, question: str, answer: str) -> Feedback:
    return Feedback(Passage(passage_id, passage_id.upper(), "text"), question, answer)


def test_cluster_claims_reads_a_cluster_as_one_reading_and_places_matching_noise():
    men_2 = "Which man has the most international goals in men's football?"
    pairs = [feedback("p1", MEN, "Ronaldo"), feedback("p2", men_2, "Ronaldo"),
             feedback("p3", WOMEN, "Sinclair"), feedback("p4", WOMEN, "Sinclair"),
             feedback("p5", men_2.upper(), "Ibrahimovic"),  # noise asking a clustered question (p2's, in capitals)
             feedback("p6", "Who scored the most goals in a career?", "Bican")]  # noise asking nothing kept
    groups = Consolidation(medoids=(0, 2), members=((0, 1), (2, 3)), labels=(0, 0, 1, 1, -1, -1))
    claims = cluster_claims(pairs, groups)
    # every claim worded as its cluster's medoid question, in retrieval order; p6 left out
    assert [(c.question, c.answer, c.passage_ids) for c in claims] == [
        (MEN, "Ronaldo", ("p1",)), (MEN, "Ronaldo", ("p2",)), (WOMEN, "Sinclair", ("p3",)),
        (WOMEN, "Sinclair", ("p4",)), (MEN, "Ibrahimovic", ("p5",))]


def test_cluster_claims_keeps_every_point_when_all_were_kept_unclustered():
    pairs = [feedback("p1", MEN, "Ronaldo"), feedback("p2", MEN, "Bican")]
    groups = Consolidation(medoids=(0, 1), members=((0,), (1,)), labels=())  # too few points to cluster
    assert [(c.question, c.answer) for c in cluster_claims(pairs, groups)] == [(MEN, "Ronaldo"), (MEN, "Bican")]


def test_route_passes_on_the_conflicts_of_the_program_it_ran():
    from types import SimpleNamespace

    from disambig.lm.usage import Trace
    from disambig.programs.route.program import routed

    pred, _ = vanilla([{"question": MEN, "answer": "Ronaldo", "passage": 1},
                       {"question": MEN, "answer": "Bican", "passage": 2}])
    out = routed(pred, SimpleNamespace(action="answer", program="vanilla-rag", p_ambiguous=0.1), Trace())
    assert out.conflicts == pred.conflicts and out.conflict_note == pred.conflict_note
    assert out.long_answer.endswith(out.conflict_note)
