"""DFA's numeric parts with hand-worked values, and scripted end-to-end runs of DFA and its count baselines."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from program_fakes import FakeEmbedder, scripted_lm

from disambig.programs.dfa.batching import Cluster, greedy_batches, split_cluster
from disambig.programs.dfa.dedup import Found, canonical, deduplicate
from disambig.programs.dfa.filter import FilterState, exact_match, fuzzy_match, partial_ratio

E1, E2 = np.array([1.0, 0.0]), np.array([0.0, 1.0])


def clusters() -> list[Cluster]:
    """Spec §12: X (600 tokens, e1), Y (650, e2), Z (300, e1); largest first is Y, X, Z."""
    return [Cluster(["x"], [600], E1), Cluster(["y"], [650], E2), Cluster(["z"], [300], E1)]


@pytest.mark.parametrize("lam, z_joins", [
    (1.0, "x"),   # S({X}) = cos(e1, e1) = 1 > S({Y}) = 0
    (0.0, "y"),   # S({X}) = 900 / 1000 = 0.90 < S({Y}) = 950 / 1000 = 0.95
    (0.5, "x"),   # 0.5 * 1 + 0.5 * 0.90 = 0.95 > 0.5 * 0 + 0.5 * 0.95 = 0.475
])
def test_algorithm_1_on_the_hand_worked_example(lam: float, z_joins: str) -> None:
    batches = greedy_batches(clusters(), budget=1000, lam=lam)
    assert [b.chunk_ids for b in batches] == ([["y"], ["x", "z"]] if z_joins == "x" else [["y", "z"], ["x"]])
    joined = next(b for b in batches if "z" in b.chunk_ids)
    assert joined.tokens == (900 if z_joins == "x" else 950)
    if z_joins == "x":  # eq. 6 with equal directions keeps the centroid at e1
        assert np.allclose(joined.centroid, E1)
    else:  # (650 e2 + 300 e1) / 950
        assert np.allclose(joined.centroid, [300 / 950, 650 / 950])


def test_large_clusters_split_and_ablation_gives_one_batch_per_cluster() -> None:
    big = Cluster([f"c{i}" for i in range(5)], [500] * 5, E2)  # 2,500 tokens
    pieces = split_cluster(big, 1000)
    assert [p.size for p in pieces] == [1000, 1000, 500] and all(p.centroid is E2 for p in pieces)
    batches = greedy_batches([big, *clusters()], budget=1000, lam=0.5)
    assert [b.tokens for b in batches][:3] == [1000, 1000, 500]
    assert all(b.tokens <= 1000 for b in batches)
    ablation = greedy_batches(clusters(), budget=1000, greedy=False)
    assert [b.chunk_ids for b in ablation] == [["y"], ["x"], ["z"]]


@pytest.mark.parametrize("kwargs, message", [({"budget": 0}, "budget=0"), ({"budget": 10, "lam": 1.5}, "lam=1.5")])
def test_batching_rejects_bad_arguments(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        greedy_batches(clusters(), **kwargs)


CHUNKS = [
    {"id": "a", "title": "", "text": "Flight 10 departs from Aberdeen and arrives in Ashley."},
    {"id": "b", "title": "", "text": "Flight 11 departs from Aberdeen and arrives in Abilene."},
    {"id": "c", "title": "", "text": "Flight 12 departs from Ashley and arrives in Aberdeen."},
    {"id": "d", "title": "", "text": "Flight 13 departs from Abilene and arrives in Ashley."},
    {"id": "e", "title": "", "text": "Flight 14 departs from Aberdeenshire and arrives in Ashley."},
]


def ids(chunks: list[dict]) -> list[str]:
    return [c["id"] for c in chunks]


def test_exact_and_fuzzy_match() -> None:
    assert ids(exact_match(CHUNKS, ["aberdeen"])) == ["a", "b", "c"]  # whole word: not Aberdeenshire
    assert ids(exact_match(CHUNKS, ["Aberdeen", "Ashley"], mode="all")) == ["a", "c"]
    assert ids(exact_match(CHUNKS, ["aberdeen"], case_sensitive=True)) == []
    assert partial_ratio("Aberdeen", "to Aberdeen.") == 100.0
    assert partial_ratio("Aberdene", "to Aberdeen.") == pytest.approx(87.5)  # 7 of 8 characters align
    assert ids(fuzzy_match(CHUNKS, ["Aberdene"], threshold=85)) == ["a", "b", "c", "e"]
    assert ids(fuzzy_match(CHUNKS, ["Aberdene"], threshold=95)) == []


def test_snapshots_refusals_and_rollback() -> None:
    state = FilterState(CHUNKS)
    first = state.apply("exact_match", {"keywords": ["Ashley"], "mode": "any"})
    assert ids(state.view()) == ["a", "c", "d", "e"] and first.parent == 0
    assert state.apply("exact_match", {"keywords": ["Ashley"], "mode": "any"}) == "no-op: the filter kept every chunk"
    second = state.apply("exact_match", {"keywords": ["Abilene"], "mode": "any"})
    assert ids(state.view()) == ["d"] and ids(state.discarded(second.index)) == ["a", "c", "e"]
    state.record(second, "over_filtered")
    assert state.final().index == 1  # the over-filtered snapshot is not the answer
    assert state.rollback(1) == "" and state.current == 1
    assert "repeated call" in state.apply("exact_match", {"keywords": ["Abilene"], "mode": "any"})
    assert "unknown tool" in state.apply("grep", {"keywords": ["x"]})
    assert "keywords must be" in state.apply("exact_match", {"keywords": []})
    assert "no snapshot C9" in state.rollback(9)
    assert ids(state.view(2)) == ["d"]  # the discarded branch stays addressable
    assert [e.action for e in state.memory] == ["no-op", "filter", "rollback", "refused", "refused", "refused",
                                                "refused"]
    assert "step" in state.memory_text(window=2) and "steps 1-" in state.memory_text(window=2)


def test_dedup_merges_aliases_transitively_and_counts_cross_batch_pairs() -> None:
    found = [Found("The Acme Corp.", ("c1",), 0), Found("acme corp", ("c2",), 1),  # same canonical name
             Found("Acme Corporation", ("c3",), 1), Found("ACME Co", ("c4",), 2),
             Found("Flight 28", ("c5",), 0), Found("Flight 29", ("c6",), 2)]
    asked: list[tuple[str, str]] = []

    def same(pairs: list[tuple[str, str]]) -> list[bool]:
        asked.extend(pairs)
        return [{a, b} in ({"The Acme Corp.", "Acme Corporation"}, {"Acme Corporation", "ACME Co"})
                for a, b in pairs]

    result = deduplicate(found, auto=95, judge=60, same=same)
    names = sorted(sorted(e.names) for e in result.entities)
    assert names == [["ACME Co", "Acme Corporation", "The Acme Corp.", "acme corp"], ["Flight 28"], ["Flight 29"]]
    acme = next(e for e in result.entities if "ACME Co" in e.names)
    assert sorted(acme.chunk_ids) == ["c1", "c2", "c3", "c4"]
    assert all("Flight" not in a for pair in asked for a in pair)  # differing numbers never merge
    assert canonical("The  Acme, Corp.") == "acme corp"
    # groups after the canonical merge: Acme{b0,b1}, Acme Corporation{b1}, ACME Co{b2}, F28{b0}, F29{b2}: 10 pairs,
    # less ACME Co / F29 (both only in batch 2, that batch's judge compared them) -> CP = 9
    assert result.candidate_pairs == 9
    assert len(deduplicate(found, same=None).entities) == 5  # without a judge only the canonical merge happens


# --- scripted LM end to end --------------------------------------------------------------------------------------

def fields(user: str) -> dict[str, str]:
    """The input fields of a JSONAdapter user message (``[[ ## name ## ]]`` sections)."""
    parts = re.split(r"\[\[ ## (\w+) ## \]\]", user)
    return {parts[i]: parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}


def judge_rule(word: str):
    def judge(user: str) -> dict:
        lines = re.findall(r"\[(\d+)\] (.*)", fields(user)["chunks"])
        return {"entities": [{"name": re.search(r"Flight \d+", text).group(0), "chunks": [int(n)],
                              "justification": "stated"} for n, text in lines if f"in {word}" in text]}
    return judge


def dfa_rules(plans: list[dict], verdicts: list[str]) -> dict:
    plan_iter, verdict_iter = iter(plans), iter(verdicts)
    return {
        "Decide whether this counting question": lambda u: {"ambiguities": [
            {"type": "A2", "span": "to Ashley", "readings": ["arrives in Ashley", "passes Ashley"]}]},
        "that follows the clarifications": lambda u: {
            "rewritten_question": "How many flights arrive in Ashley?", "entity_type": "flight",
            "conditions": ["the flight arrives in Ashley"], "connective": "AND", "counting_unit": "flight",
            "dedup_rule": "flight number", "assumptions": ["'to Ashley' means arrives in Ashley"]},
        "You narrow a corpus down": lambda u: next(plan_iter, {**STOP}),
        "A filter was applied": lambda u: {"verdict": next(verdict_iter), "kept_summary": "flights",
                                           "discarded_summary": "other flights"},
        "List every entity of the given type": judge_rule("Ashley"),
        "For each numbered pair": lambda u: {"same": []},
    }


STOP = {"action": "stop", "tool": "", "keywords": [], "mode": "any", "threshold": 0, "target_snapshot": 0,
        "rationale": "done"}


def plan(keywords: list[str]) -> dict:
    return {**STOP, "action": "filter", "tool": "exact_match", "keywords": keywords, "rationale": "narrow"}


def run_dfa(rules: dict, **kwargs):
    import dspy

    from disambig.programs import build_program

    lm, engine = scripted_lm(rules)
    program = build_program("dfa", embedder=FakeEmbedder(), corpus=CHUNKS, **kwargs)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        return program(question="How many flights go to Ashley?"), engine


def test_dfa_recovers_from_over_filtering_and_counts() -> None:
    # plan 1 keeps only Abilene chunks (b, d): over-filtered -> automatic rollback to C0; plan 2 keeps the
    # Ashley chunks (a, c, d, e): complete -> stop. The judge finds flights arriving in Ashley: 10, 13, 14.
    rules = dfa_rules([plan(["Abilene"]), plan(["Ashley"])], ["over_filtered", "complete"])
    pred, engine = run_dfa(rules)
    assert pred.count == 3 and sorted(e["name"] for e in pred.entities) == ["Flight 10", "Flight 13", "Flight 14"]
    assert pred.retained_chunk_ids == ["a", "c", "d", "e"]
    notes = pred.trace["notes"]
    assert (notes["lc_disambig"], notes["lc_filter_plan"], notes["lc_filter_eval"]) == (2, 2, 2)
    assert notes["lc_judge"] == len(notes["batches"]) >= 1 and pred.trace["lm_calls"] == sum(
        notes[f"lc_{s}"] for s in ("disambig", "filter_plan", "filter_eval", "judge", "dedup"))
    assert [s["verdict"] for s in notes["snapshots"]] == ["", "over_filtered", "complete"]
    assert notes["assumptions"] == ["'to Ashley' means arrives in Ashley"]
    assert notes["ambiguities"][0]["type"] == "A2"
    assert pred.long_answer.startswith("3: ")
    discarded_seen = [u for phrase, u in engine.calls if phrase == "A filter was applied"][0]
    assert "Flight 10" in fields(discarded_seen)["discarded_sample"]  # the evaluator sees discarded evidence


def test_dfa_ablation_hides_discarded_chunks_and_stops_on_idle_steps() -> None:
    rules = dfa_rules([plan([]), plan([])], [])  # two refused calls in a row end the filtering
    pred, engine = run_dfa(rules, observe_discarded=False, disambiguation="none", features="tfidf")
    assert pred.retained_chunk_ids == ids(CHUNKS) and pred.count == 3
    assert pred.trace["notes"]["lc_filter_plan"] == 2 and pred.trace["notes"]["lc_disambig"] == 0
    assert all(e.startswith("step") for e in pred.trace["notes"]["memory"])


def test_scripted_dfa_on_a_built_spiderqa_question(tmp_path) -> None:
    import dspy
    from test_spiderqa import QUESTIONS, make_database

    from disambig.data import load_dataset
    from disambig.data.spiderqa import build_spiderqa
    from disambig.metrics import get_metric
    from disambig.programs import build_program

    make_database(tmp_path / "db")
    (tmp_path / "dev.json").write_text(json.dumps(QUESTIONS), encoding="utf-8")
    build_spiderqa(tmp_path / "dev.json", tmp_path / "db", tmp_path / "sqa")
    example = next(e for e in load_dataset(str(tmp_path / "sqa")) if "United" in e.question)  # gold 3

    def judge(user: str) -> dict:
        lines = re.findall(r"\[(\d+)\] (.*)", fields(user)["chunks"])
        number = re.compile(r"no is (\d+)")
        return {"entities": [{"name": "flight " + number.search(t).group(1), "chunks": [int(n)]}
                             for n, t in lines if "airline is 1;" in t]}

    rules = {**dfa_rules([plan(["airline is 1"])], ["complete"]), "List every entity of the given type": judge}
    lm, _ = scripted_lm(rules)
    program = build_program("dfa", embedder=FakeEmbedder())
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        pred = program(**example.inputs())
    assert pred.count == 3
    assert get_metric("ace")(example, pred) == 0.0
    assert get_metric("chunk-recall")(example, pred) == 1.0  # flights 1, 2, 5 all retained


def test_count_baselines_with_a_scripted_lm() -> None:
    import dspy

    from disambig.programs import build_program

    rules = {
        "from your own knowledge": lambda u: {"count": 7, "entities": ["Flight 1"]},
        "Using only the numbered passages": lambda u: {
            "entities": ["Flight 10"] if "Flight 10" in u else [], "count": 1},
        "List every entity of the given type": judge_rule("Ashley"),
    }
    lm, engine = scripted_lm(rules)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        closed = build_program("llm-only-count")(question="How many flights go to Ashley?")
        rag = build_program("naive-rag-count", embedder=FakeEmbedder(), k=2, corpus=CHUNKS)(
            question="How many flights arrive in Ashley?")
        mapped = build_program("map-count", corpus=CHUNKS)(question="How many flights go to Ashley?")
    assert (closed.count, closed.retained_chunk_ids) == (7, [])
    assert rag.count == 1 and len(rag.retained_chunk_ids) == 2 and rag.trace["notes"]["k"] == 2
    assert mapped.count == 3 and mapped.trace["notes"]["lc_judge"] == len(CHUNKS)  # one call per chunk
    assert sorted(mapped.retained_chunk_ids) == ["a", "d", "e"]


def test_count_programs_need_a_scope() -> None:
    from disambig.errors import ConfigurationError
    from disambig.programs import build_program

    with pytest.raises(ConfigurationError, match="needs the chunks"):
        build_program("map-count")(question="How many?")
