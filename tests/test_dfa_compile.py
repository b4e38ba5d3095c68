"""``disambig compile dfa``: gold judging demos from SpiderQA's annotations, knob search, and the artifact loading
back as a DFA that shows the demos to its judge, also behind the served model (a tiny built SpiderQA, a scripted
LM)."""

from __future__ import annotations

import json
import re

import dspy
from program_fakes import scripted_lm, use_in_cli
from test_dfa import dfa_rules
from test_spiderqa import QUESTIONS, make_database
from typer.testing import CliRunner

from disambig.cli import app
from disambig.data.spiderqa import build_spiderqa


def flight_judge(user: str) -> dict:
    """Flights of airline 1 among the numbered chunks of the question's own batch (the last user message)."""
    found = re.findall(r"\[(\d+)\] [^\n]*airline is 1; no is (\d+)", user)
    return {"entities": [{"name": f"flight {no}", "chunks": [int(n)]} for n, no in found]}


def test_compile_dfa_with_gold_judging_demos_and_knob_search(tmp_path, monkeypatch):
    from disambig.lm.adapter import CompactJSONAdapter
    from disambig.optimizers.loading import load

    make_database(tmp_path / "db")
    (tmp_path / "dev.json").write_text(json.dumps(QUESTIONS), encoding="utf-8")
    build_spiderqa(tmp_path / "dev.json", tmp_path / "db", tmp_path / "sqa")
    rules = {**dfa_rules([], []), "List every entity of the given type": flight_judge}
    lm, engine = scripted_lm(rules)
    use_in_cli(monkeypatch, lm)
    monkeypatch.setenv("DISAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "artifacts"
    result = CliRunner().invoke(app, [
        "compile", "dfa", "--dataset", str(tmp_path / "sqa"), "--metric", "count-score", "--optimizer",
        "labeled-fewshot", "--train", "2", "--val", "1", "--demos", "2", "--tune-knobs", "1",
        "--set", "features=tfidf", "--no-track", "--out", str(out)])
    assert result.exit_code == 0, result.output
    state_path = out / "dfa" / "sqa" / "labeled-fewshot.json"
    manifest = json.loads((state_path.parent / "manifest.json").read_text())["labeled-fewshot"]
    assert manifest["scores"]["train_size"] == 2 and len(manifest["knob_trials"]) == 1
    state = json.loads(state_path.read_text())
    demos = state["judge"]["demos"]
    assert len(demos) == 2 and all({"chunks", "entities"} <= d.keys() for d in demos)
    trip = next(d for d in demos if "Ashley" in d["question"])
    assert [e["name"] for e in trip["entities"]] == ["airline is 1; no is 10; source is APG",
                                                      "airline is 1; no is 11; source is ABR"]
    # no other step is shown these rows as demos: they carry none of its outputs
    assert not any({"rewritten_question", "entity_type", "action", "ambiguities"} & d.keys()
                   for name in ("rewrite", "plan", "classify") for d in state[name]["demos"])

    with dspy.context(lm=lm, adapter=CompactJSONAdapter()):
        program = load(state_path)
        calls = len(lm.history)
        pred = program(question="How many flights does United Airlines operate?", scope="air",
                       corpus=str(tmp_path / "sqa" / "corpus.jsonl"))
    assert pred.count == 3  # flights 10, 11 and 14
    judge_prompts = [h["messages"] for h in lm.history[calls:]
                     if "List every entity" in str(h["messages"][0]["content"])]
    assert judge_prompts and any("no is 10; source is APG" in str(m["content"]) for m in judge_prompts[0][1:-1])

    # the served model (what `disambig serve` runs) takes the scope and corpus from the request's columns
    import pandas as pd

    from disambig.serving.model import CompiledProgram

    served = CompiledProgram()
    served.program, served.lm, served.adapter = program, lm, CompactJSONAdapter()
    corpus = str(tmp_path / "sqa" / "corpus.jsonl")
    rows = served.predict(None, pd.DataFrame([
        {"question": "How many flights does United Airlines operate?", "scope": "air", "corpus": corpus},
        {"question": "How many flights does United Airlines operate?", "scope": None, "corpus": None},
        {"question": "How many flights does United Airlines operate?", "scope": None, "corpus": corpus}]))
    assert rows[0]["error"] == "" and json.loads(rows[0]["extra"])["count"] == 3
    assert "needs the chunks to count over" in rows[1]["error"]  # no corpus: that row fails, alone
    assert rows[2]["error"] == "ConfigurationError: the row has a corpus but no scope; give one of: air"
    both = served.predict(None, {"question": ["How many flights does United Airlines operate?"] * 2,
                                 "scope": "air", "corpus": corpus})  # one scope and corpus for every question
    assert [json.loads(r["extra"])["count"] for r in both] == [3, 3]
