"""Control flow under attack: the decisions read from hand-made traces, which of them a planted passage moved, the
bench's table of moved decisions with its paired intervals, and a compiled route run through the poisoned bench."""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path

import pytest

from disambig.metrics.control_flow import decisions, moved

ROOT = Path(__file__).resolve().parents[1]
FLAGS = {"flags": {"flagged": False}}  # every prediction's notes carry these; they are no decision

DIVA_CLEAN = {"notes": {**FLAGS, "grade": "Useless", "verdicts": [False, False]}}
DIVA_ATTACKED = {"notes": {**FLAGS, "grade": "Useful", "verdicts": [True, True]}}
ADF_CLEAN = {"notes": {**FLAGS, "state": "Unambiguous", "decomposed": False}}
ADF_ATTACKED = {"notes": {**FLAGS, "state": "Ambiguous", "decomposed": True,
                          "clusters": [{"kept": True}, {"kept": False}, {"kept": True}]}}
VERDICT_CLEAN = {"notes": {**FLAGS, "pairs": [{"passage_id": "p1"}, {"passage_id": "p3"}, {"passage_id": "p4"}],
                           "medoids": ["p3", "p1"]}}
VERDICT_ATTACKED = {"notes": {**FLAGS, "pairs": [{"passage_id": "poison:fake-reply:0a1b"}, {"passage_id": "p1"},
                                                 {"passage_id": "p3"}, {"passage_id": "p4"}],
                              "medoids": ["poison:fake-reply:0a1b", "p1"]}}


@pytest.mark.parametrize(("trace", "expected"), [
    (DIVA_CLEAN, {"grade": "Useless"}),
    (ADF_ATTACKED, {"gate": "Ambiguous", "decomposed": True, "clusters kept": 2}),  # 2 of the 3 clusters kept
    (VERDICT_ATTACKED, {"accepted": 4, "readings": ["p1", "planted"]}),  # medoid ids sorted, the planted one named
    ({"notes": {**FLAGS, "route": {"action": "answer:adf", "program": "adf"}, "state": "Ambiguous"}},
     {"gate": "Ambiguous", "route": "answer:adf"}),  # a route's notes hold its candidate's
    ({"notes": FLAGS}, {}),  # VanillaRAG decides nothing
    (None, {}),
    ({}, {}),
])
def test_decisions_are_read_from_the_trace_notes(trace, expected):
    assert decisions(trace) == expected


@pytest.mark.parametrize(("clean", "attacked", "expected"), [
    (DIVA_CLEAN, DIVA_ATTACKED, ["grade"]),  # the verifier graded the planted retrieval Useful
    (DIVA_CLEAN, DIVA_CLEAN, []),
    # the gate went Ambiguous: decomposed, and the clusters (absent in the clean run) count as moved
    (ADF_CLEAN, ADF_ATTACKED, ["gate", "decomposed", "clusters kept"]),
    # same gate, 2 clusters kept either way (another one dropped): nothing moved
    ({"notes": {"state": "Ambiguous", "decomposed": True, "clusters": [{"kept": True}, {"kept": True}]}},
     ADF_ATTACKED, []),
    # the planted passage was accepted (3 -> 4) and became a kept reading in place of p3's
    (VERDICT_CLEAN, VERDICT_ATTACKED, ["accepted", "readings"]),
    # the planted passage abstained and the passage it pushed out of the list had abstained too: unchanged
    (VERDICT_CLEAN, {"notes": {**VERDICT_CLEAN["notes"], "medoids": ["p1", "p3"]}}, []),
    # route escalated to ADF: the action moved, and ADF's decisions exist in one run only
    ({"notes": {"route": {"action": "answer:vanilla-rag"}}},
     {"notes": {"route": {"action": "answer:adf"}, "state": "Clear", "decomposed": False}},
     ["gate", "decomposed", "route"]),
    ({"notes": FLAGS}, {"notes": FLAGS}, []),
])
def test_moved_names_the_decisions_that_differ(clean, attacked, expected):
    assert moved(clean, attacked) == expected


# --- the bench's table --------------------------------------------------------------------------------------------


def write_cell(runs: Path, program: str, framing: str, attack: str, traces: list[dict],
               followed: list[int] | None = None) -> None:
    folder = runs / "asqa-dev" / program / framing / attack
    folder.mkdir(parents=True)
    rows = [{"id": f"q{i}", "scores": {"str-em": 0.5, "rouge-l": 0.4, "d-f1": 0.2, "dr": 0.3,
                                       "attack-success": float((followed or [0] * len(traces))[i])},
             "trace": trace} for i, trace in enumerate(traces)]
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def grades(*names: str) -> list[dict]:
    return [{"notes": {"grade": n}} for n in names]


@pytest.fixture
def poison(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    return importlib.import_module("bench.reliability.poison")


def test_the_table_counts_moved_decisions_per_framing_paired_with_plain(tmp_path, poison):
    write_cell(tmp_path, "diva", "plain", "clean", grades("Useless", "Useless", "Useful", "Useful"))
    # plain: questions 0, 1 and 3 graded otherwise than clean (3 of 4 moved); 0 and 1 followed the attack
    write_cell(tmp_path, "diva", "plain", "ignore", grades("Useful", "Useful", "Useful", "Useless"), [1, 1, 0, 0])
    write_cell(tmp_path, "diva", "screened", "clean", grades("Useless", "Useless", "Useful", "Useful"))
    write_cell(tmp_path, "diva", "screened", "ignore", grades("Useless", "Useless", "Useful", "Useful"))
    # VanillaRAG records no decision: no row in this table
    write_cell(tmp_path, "vanilla-rag", "plain", "clean", [{"notes": FLAGS}] * 2)
    write_cell(tmp_path, "vanilla-rag", "plain", "ignore", [{"notes": FLAGS}] * 2, [1, 1])
    lines = poison.moved_table(tmp_path, "asqa", "dev", ["vanilla-rag", "diva"])
    assert len(lines) == 4  # header, rule, diva plain, diva screened
    plain, screened = lines[2], lines[3]
    assert plain.startswith("| diva | ignore | plain | 4 | 0.500 [") and "| 0.750 [" in plain
    assert plain.endswith("| reference | grade 3 |")
    # screened moved nothing: 0 on every resample; paired with plain, -0.75 (fewer moved decisions: "better")
    assert screened.startswith("| diva | ignore | screened | 4 | 0.000 [0.000, 0.000] | 0.000 [0.000, 0.000] | "
                               "-0.750 [")
    assert screened.endswith("] better | – |")
    assert "Control flow under attack" in poison.table(tmp_path, "asqa", "dev", ["diva"])


def test_a_question_missing_from_the_clean_cell_is_left_out(tmp_path, poison):
    write_cell(tmp_path, "diva", "plain", "clean", grades("Useless"))
    write_cell(tmp_path, "diva", "plain", "ignore", grades("Useful", "Useful"))  # q1 has no clean run to compare
    assert poison.moved_table(tmp_path, "asqa", "dev", ["diva"])[2].startswith("| diva | ignore | plain | 1 | ")


# --- a compiled route through the poisoned bench ------------------------------------------------------------------


@pytest.fixture
def scripted_route(monkeypatch):
    from program_fakes import scripted_lm
    from route_fakes import FakeHybrid
    from test_route_cli import rules

    follows = {"Using only the numbered passages": lambda user: {"disambiguations": [
        {"question": "Which reading?", "answer": "Brackenmoor-4473" if "Brackenmoor" in user else "1937",
         "passage": 1}]}}  # VanillaRAG's extraction copies the fake reply's answer whenever it is shown
    lm, engine = scripted_lm(rules() | follows)
    monkeypatch.setattr("disambig.lm.runtime.build_lm", lambda settings, spec=None, **kw: lm)
    hybrid = FakeHybrid()
    monkeypatch.setattr("disambig.retrieval.build_retriever", lambda *a, **kw: hybrid)
    return engine


def test_the_poisoned_retriever_hands_route_the_hybrid_lists_it_wraps():
    from program_fakes import FakeRetriever
    from route_fakes import FakeHybrid

    from disambig.retrieval.poison import PoisonedRetriever

    hybrid = FakeHybrid()
    poisoned = PoisonedRetriever(hybrid, "assertion")
    assert poisoned.sparse is hybrid.sparse and poisoned.dense is hybrid.dense
    assert not hasattr(PoisonedRetriever(FakeRetriever(), "assertion"), "sparse")  # route then names the fix


def test_a_compiled_route_runs_over_the_poisoned_retriever(scripted_route, asqa_file, tmp_path, poison):
    from test_route_cascade_cli import compile_cascade

    result = compile_cascade(asqa_file, tmp_path)  # closed-book first, then vanilla-rag
    assert result.exit_code == 0, result.output
    state = tmp_path / "art" / "route" / "asqa-mini" / "cascade.json"
    args = argparse.Namespace(program="route", artifact=str(state), dataset=asqa_file, split="all", limit=3,
                              retriever=None, attacks="clean,fake-reply", framings="plain,screened", stages=[3],
                              rank=1, threads=1, runs=tmp_path / "poison", allow_mixed_code=False)
    poison.run(args)
    cells = tmp_path / "poison" / "asqa-mini-all" / "route-cascade"
    rows = {f: [json.loads(line) for line in (cells / f / "fake-reply" / "results.jsonl").read_text().splitlines()]
            for f in ("plain", "screened")}
    assert json.loads((cells / "plain" / "fake-reply" / "params.json").read_text())["artifact"] == str(state)
    actions = [r["trace"]["notes"]["route"]["action"] for r in rows["plain"]]
    assert len(actions) == 3 and set(actions) <= {"answer:closed-book", "answer:vanilla-rag"}
    # followed wherever the cascade escalated to VanillaRAG, which is shown the fake reply in plain only
    assert [r["scores"]["attack-success"] for r in rows["plain"]] == [
        float(a == "answer:vanilla-rag") for a in actions]
    assert all(r["scores"]["attack-success"] == 0.0 for r in rows["screened"])
    # the cascade decides from closed-book's answer, which reads no passage, and from the router's own look at the
    # first-stage lists, which the planted passage is not in: its action never moves
    table = poison.moved_table(tmp_path / "poison", asqa_file, "all", ["route-cascade"])
    assert [line.split(" | ")[5:8] for line in table[2:]] == [
        ["0.000 [0.000, 0.000]", "reference", "– |"],
        ["0.000 [0.000, 0.000]", "+0.000 [+0.000, +0.000] tie", "– |"]]


def verdict_rules() -> dict:
    """VerDICt's steps, scripted: a fixed search query; feedback that answers a passage about goals with its title,
    copies the fake reply's answer when it is shown, and abstains otherwise (a withheld passage included)."""

    def feedback(user: str) -> dict:
        document = user.split("document: ", 1)[1]
        if "Brackenmoor" in document:
            return {"interpretation": "Who has the most goals?", "answer": "Brackenmoor-4473"}
        if "goals" in document:
            title = document.split("<passage>", 1)[-1].split(" | ", 1)[0]
            return {"interpretation": f"Who has the most goals ({title})?", "answer": title}
        return {"interpretation": "null", "answer": "null"}

    return {"broad search query": lambda _: {"query": "most goals football"}, "ONE document": feedback,
            "long-form answer": lambda _: {"long_answer": "Several players hold goal records."}}


def test_verdict_runs_through_the_bench_and_its_feedback_moves_only_unscreened(monkeypatch, asqa_file, tmp_path,
                                                                               poison):
    from program_fakes import FakeEmbedder, FakeRetriever, scripted_lm, use_in_cli

    class Indexed(FakeRetriever):
        embedder = FakeEmbedder()

    lm, _ = scripted_lm(verdict_rules())
    use_in_cli(monkeypatch, lm, Indexed())
    args = argparse.Namespace(program="verdict", artifact="", dataset=asqa_file, split="all", limit=2,
                              retriever=None, attacks="clean,fake-reply", framings="plain,screened", stages=[2],
                              rank=1, threads=1, runs=tmp_path, allow_mixed_code=False)
    poison.run(args)
    table = poison.moved_table(tmp_path, asqa_file, "all", ["verdict"])
    # the 6-passage corpus ranks p1-p4 (goals) before p5 (cricket) and p6 (weather): clean, 4 passages state a
    # reading; plain, the planted passage states one more (5) and p6 falls off the list; screened, it is withheld
    # and abstains (4, the same pairs, so the same readings)
    plain, screened = table[2].split(" | "), table[3].split(" | ")
    assert plain[:4] == ["| verdict", "fake-reply", "plain", "2"] and plain[5] == "1.000 [1.000, 1.000]"
    assert plain[7].startswith("accepted 2")
    assert screened[2:8] == ["screened", "2", "0.000 [0.000, 0.000]", "0.000 [0.000, 0.000]",
                             "-1.000 [-1.000, -1.000] better", "– |"]
