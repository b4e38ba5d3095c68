"""VerDICt's control flow with a scripted engine: one retrieval, 1 + k LM calls, abstentions, medoids, threads."""

from __future__ import annotations

import re
import threading
import time

import dspy
import pytest
from program_fakes import FakeEmbedder, scripted_lm

from disambig.lm.adapter import CompactJSONAdapter
from disambig.programs import build_program
from disambig.programs.verdict.program import VerDICt, serialised, stated, stated_answer
from disambig.retrieval.passage import Passage

QUESTION = "Who has the most goals in football?"
MEN = "Who has the most international goals in men's football?"
MEN_2 = "Which man has scored the most international goals in men's football?"
WOMEN = "Who has the most international goals in women's football?"
CAREER = "Who scored the most goals in a football career?"

# Nine passages in retrieval order, and what the feedback step says about each. The men's reading comes from
# A, B and D (A worded differently), the women's from C and E, the career reading from F alone (HDBSCAN noise);
# G abstains, H's reply is not JSON, I says "N/A" / "'null'" (an abstention in words).
FEEDBACK = {
    "A": {"interpretation": MEN_2, "answer": "Cristiano Ronaldo"},
    "B": {"interpretation": MEN, "answer": "Cristiano Ronaldo"},
    "C": {"interpretation": WOMEN, "answer": "Christine Sinclair"},
    "D": {"interpretation": MEN, "answer": "Cristiano Ronaldo"},
    "E": {"interpretation": WOMEN, "answer": "Christine Sinclair"},
    "F": {"interpretation": CAREER, "answer": "Josef Bican"},
    "G": {"interpretation": None, "answer": None},
    "H": "I am not sure what to say.",
    "I": {"interpretation": "N/A", "answer": "'null'"},
}
PASSAGES = [Passage(f"p{n}", title, f"Passage {title} about football goals.") for n, title in enumerate(FEEDBACK, 1)]


class ListRetriever:
    """Returns the first ``k`` of a fixed list whatever the query; records the queries."""

    name = "list"

    def __init__(self, passages: list[Passage] = PASSAGES) -> None:
        self.passages = passages
        self.queries: list[str] = []

    @property
    def size(self) -> int:
        return len(self.passages)

    def search(self, query: str, k: int = 10) -> list[Passage]:
        self.queries.append(query)
        return self.passages[:k]


class RecordingEmbedder(FakeEmbedder):
    def __init__(self) -> None:
        self.texts: list[list[str]] = []

    def encode(self, texts):
        self.texts.append(list(texts))
        return super().encode(texts)


def feedback_rule(delay: float = 0.0, threads: set | None = None):
    def reply(user: str):
        title = re.search(r"<passage>(\w+) \|", user)[1]
        if threads is not None:
            threads.add(threading.current_thread().name)
        if delay:  # later passages answer sooner, so a pool finishes them out of order
            time.sleep(delay * (len(FEEDBACK) - list(FEEDBACK).index(title)))
        return FEEDBACK[title]
    return reply


def configure(relax_reply=None, **feedback) -> object:
    lm, engine = scripted_lm({
        "Turn the question into a short, broad search query": lambda _: relax_reply or {"query": "football goals"},
        "ONE document, a passage from the search results": feedback_rule(**feedback),
        "Write a long-form answer of at least three sentences": lambda _: {"long_answer": "Men: Ronaldo. Women: S."},
    })
    dspy.configure(lm=lm, adapter=CompactJSONAdapter())
    return engine


def steps(engine) -> list[str]:
    return [phrase.split()[0] for phrase, _ in engine.calls]


def run(**kwargs) -> tuple[dspy.Prediction, ListRetriever, RecordingEmbedder]:
    retriever, embedder = ListRetriever(), RecordingEmbedder()
    program = build_program("verdict", retriever=retriever, embedder=embedder, **kwargs)
    return program(question=QUESTION), retriever, embedder


def test_one_retrieval_and_one_plus_k_lm_calls():
    engine = configure()
    pred, retriever, _ = run(parallel=1)
    # relax, then one feedback call per passage (k = 20 clamped to the 9 passages), then the long answer
    assert steps(engine) == ["Turn"] + ["ONE"] * 9 + ["Write"]
    assert retriever.queries == ["football goals"] and pred.trace["retrieval_calls"] == 1
    assert len(pred.passages) == 9
    assert pred.trace["lm_calls"] == 11 and pred.trace["notes"]["method_lm_calls"] == 10
    assert pred.trace["notes"]["long_answer_cost"]["lm_calls"] == 1
    assert pred.trace["input_tokens"] == sum(i for i, _ in engine.usage)
    assert pred.trace["output_tokens"] == sum(o for _, o in engine.usage)


def test_nulls_and_unparsable_replies_are_dropped_and_counted():
    configure()
    pred, _, embedder = run(parallel=1)
    notes = pred.trace["notes"]
    assert [p["passage_id"] for p in notes["pairs"]] == ["p1", "p2", "p3", "p4", "p5", "p6"]
    assert notes["abstained"] == 3 and notes["parse_failures"] == 1
    assert len(embedder.texts[0]) == 6  # only the six answered pairs are embedded


def test_medoids_cite_their_own_passage_and_noise_is_dropped():
    configure()
    pred, _, _ = run(parallel=1)
    # men's cluster {A, B, D}: B and D (same words) are closer to the rest than A, and B ranks first;
    # women's cluster {C, E} ties, C ranks first; F (career) is noise
    assert [(i["question"], i["answer"], i["passage_ids"]) for i in pred.interpretations] == [
        (MEN, "Cristiano Ronaldo", ["p2"]),
        (WOMEN, "Christine Sinclair", ["p3"]),
    ]
    assert [i["score"] for i in pred.interpretations] == [0.5, pytest.approx(0.3333)]
    assert pred.trace["notes"]["labels"] == [0, 0, 1, 0, 1, -1] and pred.trace["notes"]["medoids"] == ["p2", "p3"]
    assert pred.long_answer == "Men: Ronaldo. Women: S."


def test_the_long_answer_reads_only_the_medoids_passages():
    engine = configure()
    run(parallel=1)
    written = engine.calls[-1][1]
    assert "[1] B |" in written and "[2] C |" in written and "A |" not in written


def test_cite_cluster_lists_every_member_passage():
    configure()
    pred, _, _ = run(parallel=1, cite="cluster")
    assert [i["passage_ids"] for i in pred.interpretations] == [["p2", "p1", "p4"], ["p3", "p5"]]


def test_embed_q_embeds_the_readings_alone():
    configure()
    pred, _, embedder = run(parallel=1, embed="q")
    assert embedder.texts[0][0] == MEN_2
    # without the shared answer, A's differently worded reading no longer joins the men's cluster
    assert pred.trace["notes"]["labels"] == [-1, 0, 1, 0, 1, -1]


@pytest.mark.parametrize(("mode", "expected", "calls"), [
    ("list", f"{MEN} Cristiano Ronaldo.\n{WOMEN} Christine Sinclair.", 10),
    ("none", "", 10),
])
def test_long_answer_without_an_lm_call(mode, expected, calls):
    configure()
    pred, _, _ = run(parallel=1, long_answer=mode)
    assert pred.long_answer == expected
    assert pred.trace["lm_calls"] == calls and pred.trace["notes"]["long_answer_cost"]["lm_calls"] == 0


def test_relax_false_searches_with_the_question():
    engine = configure()
    pred, retriever, _ = run(parallel=1, relax=False, k=4, long_answer="none")
    assert retriever.queries == [QUESTION] and pred.trace["notes"]["relaxed_query"] == QUESTION
    assert steps(engine) == ["ONE"] * 4  # k calls, no relaxation


def test_an_empty_relaxed_query_falls_back_to_the_question():
    configure(relax_reply={"query": "  "})
    _, retriever, _ = run(parallel=1, long_answer="none")
    assert retriever.queries == [QUESTION]


def test_parallel_and_serial_runs_agree_and_keep_retrieval_order():
    configure(delay=0.01)
    serial, _, _ = run(parallel=1)
    seen: set[str] = set()
    engine = configure(delay=0.01, threads=seen)
    parallel, _, _ = run(parallel=4)
    assert parallel.interpretations == serial.interpretations
    assert parallel.trace["notes"]["pairs"] == serial.trace["notes"]["pairs"]
    assert len(seen) > 1  # the feedback calls really ran on several threads
    assert parallel.trace["lm_calls"] == 11 and len(engine.calls) == 11  # usage from worker threads is counted


def test_dspy_context_reaches_the_worker_threads():
    lm, engine = scripted_lm({
        "Turn the question into": lambda _: {"query": "q"},
        "ONE document, a passage from the search results": feedback_rule(),
        "Write a long-form answer": lambda _: {"long_answer": "x"},
    })
    with dspy.context(lm=lm, adapter=CompactJSONAdapter()):  # not dspy.configure: only this context has the LM
        pred, _, _ = run(parallel=3)
    assert len(pred.interpretations) == 2 and len(engine.calls) == 11


def test_nothing_answered_gives_no_interpretations_and_no_answer_call():
    lm, engine = scripted_lm({
        "Turn the question into": lambda _: {"query": "q"},
        "ONE document, a passage from the search results": lambda _: {"interpretation": "null", "answer": "null"},
    })
    dspy.configure(lm=lm, adapter=CompactJSONAdapter())
    pred, _, embedder = run(parallel=2)
    assert pred.interpretations == [] and pred.long_answer == "" and embedder.texts == []
    assert pred.trace["notes"]["abstained"] == 9 and len(engine.calls) == 10


def test_threads_are_one_on_the_embedded_engine_eight_on_a_remote_lm_and_one_on_other_engines(monkeypatch):
    from disambig.lm.llama_engine import LlamaEngine

    monkeypatch.setenv("DISAMBIG_PARALLEL_CALLS", "0")  # the run's setting: decide from the LM

    embedded = dspy.LM("local/model", engine=LlamaEngine("/nonexistent/model.gguf"), cache=False)
    remote = dspy.LM("openai/gpt-4o-mini", api_key="sk-test", cache=False)
    scripted, _ = scripted_lm({})
    program = VerDICt(ListRetriever())
    assert serialised(embedded) and not serialised(remote) and not serialised(scripted)
    with dspy.context(lm=embedded):
        assert program.workers() == 1
        assert VerDICt(ListRetriever(), parallel=3).workers() == 1  # the engine runs one call at a time anyway
    with dspy.context(lm=remote):
        assert program.workers() == 8
        assert VerDICt(ListRetriever(), parallel=3).workers() == 3
    with dspy.context(lm=scripted):  # an engine of unknown thread safety: serial unless told
        assert program.workers() == 1
        assert VerDICt(ListRetriever(), parallel=3).workers() == 3


@pytest.mark.parametrize("value", ["null", " 'NULL' ", "None", "n/a", "N/A.", "", "  ", None, 3])
def test_null_like_replies_are_abstentions(value):
    assert stated(value) is None


def test_a_real_answer_is_kept_stripped():
    assert stated("  Nullarbor Plain ") == "Nullarbor Plain"


@pytest.mark.parametrize("value", ["unknown", "Not mentioned.", "The passage does not say", "null"])
def test_refusals_in_other_words_answer_no_reading(value):
    assert stated_answer(value) is None


def test_an_answer_naming_a_word_like_unknown_only_inside_a_word_is_kept():
    assert stated_answer(" The Unknowns (band) ") == "The Unknowns (band)"


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"embed": "a"}, "embed='a' is not one of 'qa', 'q'"),
    ({"cite": "all"}, "cite='all'"),
    ({"long_answer": "summary"}, "long_answer='summary'"),
    ({"parallel": 0}, "parallel=0 must be a positive integer"),
])
def test_bad_options_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        VerDICt(ListRetriever(), **kwargs)


@pytest.mark.parametrize("value", ["Tomb of the Unknown Soldier", "Unknown Pleasures", "No Information Zone 2"])
def test_a_name_holding_a_no_answer_phrase_is_an_answer(value):
    assert stated_answer(value) == value


def test_a_second_lm_makes_the_feedback_calls_and_the_runs_lm_the_rest(monkeypatch):
    from disambig.lm import verifier

    engine = configure()
    second, second_engine = scripted_lm({"ONE document, a passage from the search results": feedback_rule()})
    monkeypatch.setattr(verifier, "verifier_lm", lambda: second)
    pred, _, _ = run(parallel=2)
    assert steps(engine) == ["Turn", "Write"] and steps(second_engine) == ["ONE"] * 9
    assert pred.trace["lm_calls"] == 11
    assert sorted(i["answer"] for i in pred.interpretations) == ["Christine Sinclair", "Cristiano Ronaldo"]


def test_the_feedback_calls_at_once_are_decided_by_the_lm_that_makes_them(monkeypatch):
    from disambig.lm import verifier
    from disambig.programs.verdict import program as verdict_program

    configure()
    second, _ = scripted_lm({"ONE document, a passage from the search results": feedback_rule()})
    monkeypatch.setattr(verifier, "verifier_lm", lambda: second)
    asked = []
    monkeypatch.setattr(verdict_program, "call_workers", lambda requested=None: asked.append(dspy.settings.lm) or 1)
    run()
    assert asked == [second]
