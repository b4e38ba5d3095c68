"""AMD's expansion prompts compile against nDCG@10 on judged queries (a tiny BEIR folder, a scripted LM), and the
compiled state loads back as the amd-sparse retriever's program."""

from __future__ import annotations

import json

import dspy
import pytest
from program_fakes import configure_scripted, scripted_lm
from retrieval_fakes import write_beir

from disambig.data.loaders import beir_examples
from disambig.errors import ConfigurationError
from disambig.lm.adapter import CompactJSONAdapter
from disambig.metrics.ranking import ranking_scores
from disambig.optimizers.compile import CompileJob, compile_program
from disambig.optimizers.recipes import Budget
from disambig.programs.amd.expanded_retrieval import ExpansionSearch
from disambig.retrieval import build_retriever

# Each query's sub-questions and answers name the animal its relevant passage is about, so BM25 over the expansion
# puts that passage first (nDCG@10 = 1) whatever the query's own words.
ANIMAL = {"striped horse": "zebra stripes", "night insect eater": "aardvark ants", "cold swimmer": "penguin ice"}


def animal(user: str) -> str:
    return next(words for query, words in ANIMAL.items() if query in user)


RULES = {
    "Ask three Socratic questions": lambda user: {kind: f"Is it about {animal(user)}?" for kind in
                                                  ("clarification", "assumption_probing", "implication_probing")},
    "Answer the question, raised": lambda user: {"answer": f"It is the {animal(user)}."},
    "Review an answer": lambda user: {"keep": True, "refined_answer": f"The {animal(user)}."},
}


@pytest.fixture
def beir(tmp_path):
    """Three judged queries over the four passages; none shares a word with its relevant passage."""
    return write_beir(tmp_path / "animals", {"q1": "striped horse", "q2": "night insect eater", "q3": "cold swimmer"},
                      {"q1": "p2", "q2": "p1", "q3": "p4"})


def ndcg_at_10(example, pred, trace=None):
    """nDCG@10 of the predicted passages against the example's judgments (ranking.py); a pass/fail at 1 when tracing."""
    run = {"q": {p["id"]: p["score"] for p in pred.passages}}
    score = ranking_scores({"q": dict(example.qrels)}, run, ["ndcg@10"])["ndcg@10"]
    return score >= 1.0 if trace is not None else score


def test_beir_queries_become_examples_with_their_judgments(beir):
    examples = beir_examples(beir)
    assert [e.question for e in examples] == ["striped horse", "night insect eater", "cold swimmer"]
    assert examples[0].qrels == {"p2": 1} and set(examples[0].inputs().keys()) == {"question"}


def test_amd_compiles_against_ndcg_and_the_compiled_state_loads_as_the_retrievers_program(beir, settings, tmp_path):
    lm, engine = configure_scripted(RULES)
    program = ExpansionSearch(build_retriever("amd-sparse", corpus=beir, settings=settings), k=4)
    examples = beir_examples(beir)
    assert ndcg_at_10(examples[0], program(question=examples[0].question)) == pytest.approx(1.0)
    job = CompileJob("amd", beir, "ndcg@10", "bootstrap", Budget(demos=1), "scripted/rules", f"amd-sparse:{beir}")
    result = compile_program(job, program, examples[:2], examples[2:], ndcg_at_10, tmp_path / "artifacts", {},
                             {"lm": lm})
    assert result.before == pytest.approx(1.0) and result.after == pytest.approx(1.0)
    state = json.loads(result.state_path.read_text())
    assert {"expander.socratic", "expander.dialogic", "expander.feedback"} <= state.keys()
    loaded = build_retriever("amd-sparse", corpus=beir, settings=settings, state=str(result.state_path))
    demo = loaded.expander.socratic.demos[0]
    assert demo["query"] == "striped horse" and demo["clarification"] == "Is it about zebra stripes?"
    calls = len(engine.calls)
    assert loaded.search("cold swimmer", 1)[0].id == "p4" and len(engine.calls) == calls + 7


def test_expansion_search_needs_an_expansion_retriever(beir, settings):
    with pytest.raises(ConfigurationError, match="needs a query-expansion retriever"):
        ExpansionSearch(build_retriever("bm25", corpus=beir, settings=settings))


@pytest.fixture
def beir_splits(tmp_path):
    """Four judged queries whose question hashes put two in train (q1, q3) and two in dev (q2, q4)."""
    queries = {"q1": "striped horse?", "q2": "night insect eater", "q3": "cold swimmer?", "q4": "which striped horse?"}
    return write_beir(tmp_path / "animals-split", queries, {"q1": "p2", "q2": "p1", "q3": "p4", "q4": "p2"})


def test_a_beir_folder_loads_as_a_dataset_split_by_question_hash(beir_splits):
    from disambig.data.loaders import dataset_format, default_corpus, load_dataset

    assert [e.id for e in load_dataset(beir_splits, split="train")] == ["q1", "q3"]
    dev = load_dataset(beir_splits, split="dev")
    assert [e.id for e in dev] == ["q2", "q4"] and dev[0].qrels == {"p1": 1}
    assert set(dev[0].inputs().keys()) == {"question"} and dev[0].dataset == "animals-split"
    assert dataset_format(beir_splits) == "beir" and default_corpus(beir_splits) == beir_splits
    assert default_corpus("asqa") == "wiki-slice"


def test_compile_amd_against_ndcg_through_the_command_line(beir_splits, monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from disambig.cli import app
    from disambig.optimizers.loading import load

    lm, _ = scripted_lm(RULES)
    monkeypatch.setattr("disambig.lm.runtime.build_lm", lambda settings, spec=None, **kw: lm)
    monkeypatch.setenv("DISAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "artifacts"
    result = CliRunner().invoke(app, [  # no --corpus: the BEIR dataset's own corpus is searched
        "compile", "amd", "--metric", "ndcg@10", "--dataset", beir_splits, "--retriever", "amd-sparse",
        "--train", "2", "--val", "2", "--demos", "1", "--no-track", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "before 1.0000 → after 1.0000" in result.output  # every expansion names the relevant passage's animal
    state_path = out / "amd" / "animals-split" / "bootstrap.json"
    manifest = json.loads((state_path.parent / "manifest.json").read_text())["bootstrap"]
    assert manifest["retriever"] == f"amd-sparse:{beir_splits}" and manifest["scores"]["train_size"] == 2
    with dspy.context(lm=lm, adapter=CompactJSONAdapter()):
        program = load(state_path)
        assert program.expander.socratic.demos and program(question="cold swimmer").passages[0]["id"] == "p4"


def test_amd_is_registered_with_its_expansion_retriever_by_default():
    from disambig.programs import PROGRAMS, retriever_kind

    assert PROGRAMS["amd"].target == "disambig.programs.amd:ExpansionSearch"
    assert retriever_kind("amd") == "amd-sparse" and retriever_kind("amd", "amd-rrf") == "amd-rrf"
    assert retriever_kind("diva") == "hybrid" and retriever_kind("dfa") == ""
