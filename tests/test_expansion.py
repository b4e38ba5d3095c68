"""The baselines' expansions (Q2D, Q2C, GenQR), the expansion cache, and the expansion retrievers selected by name
through the factory, the CLI and a QA program, all with a scripted engine over the four-passage corpus."""

from __future__ import annotations

import json

import dspy
import pytest
from program_fakes import FakeEmbedder, FakeRetriever, configure_scripted, scripted_lm
from retrieval_fakes import PASSAGES, VocabEmbedder, write_beir
from typer.testing import CliRunner

from disambig.errors import ConfigurationError
from disambig.programs import build_program
from disambig.programs.amd.expanded_retrieval import EXPANDED_KINDS, SparseExpansion, make_expander
from disambig.programs.amd.expansion import GenQR, QueryToChainOfThought, QueryToDocument
from disambig.retrieval import build_retriever, factory
from disambig.signatures.expansion import EXPANSION_INSTRUCTIONS

RULES = {
    "Ask three Socratic questions": lambda _: {"clarification": "Which zebra?", "assumption_probing": "Why stripes?",
                                               "implication_probing": "What hunts the zebra?"},
    "Answer the question, raised": lambda _: {"answer": "Zebras have black and white stripes."},
    "Review an answer": lambda _: {"keep": True, "refined_answer": "Zebra stripes are black and white."},
    "Write a short passage": lambda _: {"passage": "The zebra has stripes."},
    "reason step by step": lambda _: {"rationale": "Zebras are striped horses.", "answer": "stripes"},
    "": lambda _: {"keywords": ["stripes", "savanna"]},  # every keyword phrasing (matched last)
}


def configure(rules: dict = RULES):
    return configure_scripted(rules)


def test_q2d_expands_with_one_pseudo_document():
    configure()
    pred = QueryToDocument()(query="zebra")
    assert pred.texts == ["The zebra has stripes."] and pred.sub_questions == []
    assert pred.fusion_queries == ["zebra The zebra has stripes."]


def test_q2c_expands_with_the_rationale_and_the_answer():
    configure()
    assert QueryToChainOfThought()(query="zebra").texts == ["Zebras are striped horses. stripes"]


def test_genqr_asks_once_under_each_phrasing_of_the_instruction():
    _, engine = configure()
    program = GenQR(instructions=3)
    pred = program(query="zebra")
    assert pred.texts == ["stripes, savanna"] * 3
    assert pred.fusion_queries == ["zebra stripes, savanna"] * 3
    assert len(engine.calls) == 3
    assert [p.signature.instructions for p in program.keywords] == list(EXPANSION_INSTRUCTIONS[:3])


def test_genqr_refuses_more_phrasings_than_it_has():
    with pytest.raises(ValueError, match="instructions=11 must lie between 1 and 10"):
        GenQR(instructions=11)


def test_every_expansion_kind_the_factory_names_has_a_builder():
    assert set(factory.EXPANDED_KINDS) == set(EXPANDED_KINDS)
    assert set(factory.EXPANDED_KINDS) <= set(factory.KINDS)
    assert factory.index_kinds("amd-dense") == ("dense",) and factory.index_kinds("genqr-fusion") == ("bm25",)


@pytest.mark.parametrize("kind", sorted(EXPANDED_KINDS))
def test_every_expansion_retriever_is_built_by_name_and_searches(kind, corpus, settings):
    configure()
    options = {"instructions": 2} if kind.startswith("genqr") else {}  # two keyword phrasings, not ten
    retriever = build_retriever(kind, corpus=corpus, settings=settings, embedder=VocabEmbedder(), **options)
    assert retriever.name == kind and retriever.size == len(PASSAGES)
    hits = retriever.search("zebra", 2)
    assert hits and hits[0].id in {"p2", "p3"} and retriever.usage.lm_calls > 0


@pytest.mark.parametrize("kind, options, message", [
    ("amd-sparse", {"query_weight": 0.5}, "takes no option 'query_weight'"),
    ("bm25", {"temperature": 0.5}, "apply to query-expansion retrievers only"),
    ("amd-dense", {"query_weight": 1.5}, "query_weight=1.5 must lie between 0 and 1"),
    ("q2d-sparse", {"query_repeats": 0}, "query_repeats=0 must be a positive integer"),
])
def test_bad_expansion_options_are_refused(kind, options, message, corpus, settings):
    with pytest.raises((ConfigurationError, ValueError), match=message):
        build_retriever(kind, corpus=corpus, settings=settings, embedder=VocabEmbedder(), **options)


def test_a_cached_expansion_makes_no_lm_call(corpus, settings):
    _, engine = configure()
    first = build_retriever("amd-sparse", corpus=corpus, settings=settings)
    hits = first.search("zebra", 2)
    # 1 Socratic call + 3 answers + 3 reflections; tokens as the scripted engine counted them
    assert len(engine.calls) == 7 and first.usage.lm_calls == 7 and first.usage.cached == 0
    assert first.usage.input_tokens == sum(i for i, _ in engine.usage) > 0
    again = build_retriever("amd-sparse", corpus=corpus, settings=settings)  # a new process would do the same
    assert again.search("zebra", 2) == hits
    assert len(engine.calls) == 7 and again.usage.lm_calls == 0 and again.usage.cached == 1
    # reading the cache alone never asks the LM: a hit (counted) for a known query, None for a new one
    assert again.cached(" zebra ").sub_questions and again.cached("okapi") is None
    assert len(engine.calls) == 7 and again.usage.cached == 2
    # AMD's agents over the distinct queries, the same whether the expansion was made or read from the cache
    tally = {"queries": 1, "questioning_failed": 0, "answers": 3, "kept": 3}
    assert first.usage.reflection == tally and again.usage.reflection == tally


def test_the_cache_key_changes_with_the_lm_and_the_program_state(corpus, settings):
    _, engine = configure()
    build_retriever("q2d-sparse", corpus=corpus, settings=settings).search("zebra", 2)
    build_retriever("q2d-sparse", corpus=corpus, settings=settings, temperature=0.0).search("zebra", 2)
    compiled = build_retriever("q2d-sparse", corpus=corpus, settings=settings)
    compiled.expander.write.demos = [dspy.Example(query="lion", passage="Lions hunt zebra.")]
    compiled.search("zebra", 2)
    assert len(engine.calls) == 3
    other = scripted_lm(RULES)[1]
    with dspy.context(lm=dspy.LM("scripted/other", engine=other, cache=False, num_retries=0)):
        build_retriever("q2d-sparse", corpus=corpus, settings=settings).search("zebra", 2)
    assert len(other.calls) == 1


def test_the_expansion_cache_is_plain_json(corpus, settings, tmp_path):
    configure()
    build_retriever("amd-sparse", corpus=corpus, settings=settings).search("zebra", 2)
    (entry,) = (tmp_path / "cache" / "expansions").rglob("*.json")
    row = json.loads(entry.read_text())
    assert row["expansion"]["query"] == "zebra" and row["cost"]["lm_calls"] == 7
    assert row["lm"].startswith("scripted/rules") and row["program"] == "AMD"


def test_a_saved_expansion_state_loads_into_the_retriever(corpus, settings, tmp_path):
    configure()
    program = make_expander("q2d")
    program.write.demos = [dspy.Example(query="lion", passage="Lions hunt zebra.")]
    program.save(str(tmp_path / "q2d.json"))
    retriever = build_retriever("q2d-sparse", corpus=corpus, settings=settings, state=str(tmp_path / "q2d.json"))
    assert retriever.expander.write.demos[0]["passage"] == "Lions hunt zebra."
    with pytest.raises(ConfigurationError, match="is not a JSON file"):
        build_retriever("q2d-sparse", corpus=corpus, settings=settings, state=str(tmp_path / "q2d.pkl"))


def test_without_a_configured_lm_the_settings_lm_expands(corpus, settings, monkeypatch):
    lm, engine = scripted_lm(RULES)
    monkeypatch.setattr("disambig.lm.runtime.build_lm", lambda s: lm)
    build_retriever("q2d-sparse", corpus=corpus, settings=settings).search("zebra", 2)
    assert len(engine.calls) == 1


def test_a_qa_program_searches_through_an_expansion_retriever():
    rules = {**{k: v for k, v in RULES.items() if k}, "Using only the numbered passages":
             lambda _: {"disambiguations": []},
             "Write a long-form answer of at least three sentences": lambda _: {"long_answer": "Stripes."}}
    configure(rules)
    retriever = SparseExpansion("q2d-sparse", FakeRetriever(), make_expander("q2d"))
    pred = build_program("vanilla-rag", retriever=retriever, embedder=FakeEmbedder(), k=3)(question="zebra")
    assert len(pred.passages) == 3
    assert pred.trace["lm_calls"] == 3  # the pseudo-document, then the program's own two calls


runner = CliRunner()


@pytest.fixture
def cli(tmp_path, monkeypatch):
    """The CLI with its cache in the test folder, the vocabulary embedder, and the scripted LM as --lm."""
    monkeypatch.setenv("DISAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("disambig.cli.index_cmd.make_embedder", lambda model: VocabEmbedder())
    lm, engine = scripted_lm(RULES)
    monkeypatch.setattr("disambig.lm.runtime.build_lm", lambda s: lm)
    return engine


def invoke(*args: str):
    return runner.invoke(app(), list(args), env={"COLUMNS": "220"})


def app():
    from disambig.cli import app

    return app


@pytest.fixture
def beir(tmp_path):
    """Two judged queries over the four passages: "zebra" (p2 relevant) and "ants" (p1 relevant)."""
    return write_beir(tmp_path / "tiny-beir", {"q1": "zebra", "q2": "ants"}, {"q1": "p2", "q2": "p1"})


def test_search_shows_the_expansion_and_the_passages(cli, corpus):
    assert invoke("index", "build", "--corpus", corpus, "--kind", "all").exit_code == 0
    result = invoke("search", "zebra", "--corpus", corpus, "-r", "amd-sparse", "-k", "2")
    assert result.exit_code == 0, result.output
    assert "clarification" in result.output and "Which zebra?" in result.output and "7 LM calls" in result.output
    assert "Zebra" in result.output and "p2" in result.output
    again = invoke("search", "zebra", "--corpus", corpus, "-r", "amd-sparse", "-k", "2")
    assert "from the cache" in again.output and len(cli.calls) == 7


def test_search_refuses_expansion_options_for_a_plain_retriever(cli, corpus):
    result = invoke("search", "zebra", "--corpus", corpus, "-r", "bm25", "--temperature", "0.5")
    assert result.exit_code != 0 and "apply to query-expansion retrievers" in result.output


def test_eval_retrieval_reports_lm_calls_per_query_and_a_second_run_costs_none(cli, beir, tmp_path):
    out = tmp_path / "scores.json"
    result = invoke("eval-retrieval", "--dataset", str(beir), "-r", "bm25", "-r", "q2d-sparse", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "bm25" in result.output and "q2d-sparse" in result.output and "LM calls/q" in result.output
    bm25, q2d = json.loads(out.read_text())
    assert "expansion" not in bm25 and "lm" not in bm25 and q2d["lm"]
    assert bm25["code"]["commit"] and bm25["split"] == "test"  # the code and data each row came from
    assert q2d["expansion"]["lm_calls"] == 1.0 and q2d["expansion"]["input_tokens"] > 0  # one call per query
    assert q2d["expansion_state"] is None and q2d["temperature"] == 0.5  # uncompiled, the poster's temperature
    invoke("eval-retrieval", "--dataset", str(beir), "-r", "q2d-sparse", "--out", str(out))
    (again,) = json.loads(out.read_text())
    assert again["expansion"]["lm_calls"] == 0 and again["expansion"]["from_cache"] == 2
    # what making the expansions cost is still reported, from the cache entries
    made = {k: again["expansion"][f"made_{k}"] for k in ("lm_calls", "input_tokens", "output_tokens")}
    assert made == {k: q2d["expansion"][k] for k in made}
    assert again["metrics"] == q2d["metrics"]
    assert "reflection" not in again  # only AMD's agents are tallied


def test_eval_retrieval_tallies_amds_agents_for_the_table(cli, beir, tmp_path):
    out = tmp_path / "scores.json"
    assert invoke("eval-retrieval", "--dataset", str(beir), "-r", "amd-sparse", "--out", str(out)).exit_code == 0
    (row,) = json.loads(out.read_text())
    assert row["reflection"] == {"queries": 2, "questioning_failed": 0, "answers": 6, "kept": 6}
