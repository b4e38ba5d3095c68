"""The compiled ASQA cascade (``bench/results/route/compiled/route/asqa/asqa-cascade.json``) reproduces the
"logistic, answer-side + retrieval" row of ``docs/RESULTS.md``'s recorded ASQA cascade table (drawn by
``bench/quality/route_cascade.py``, retired after commit 3772683) from the stored runs.

The fast test applies the saved model to the stored VanillaRAG dev answers (answer-side features recomputed here) and
to the retrieval features its ``route predict --first-run`` decisions recorded; the slow one compiles it again from
the stored runs with the real hybrid retriever (no LM call).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from disambig.optimizers.route_data import read_outcomes, read_rows
from disambig.optimizers.route_eval import corpus_score
from disambig.optimizers.route_labels import Outcome
from disambig.programs.route import ANSWER_FEATURES, Answered, CascadePolicy, answer_named

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "bench" / "results" / "route"
STATE = RUNS / "compiled" / "route" / "asqa" / "asqa-cascade.json"
DECISIONS = RUNS / "asqa-dev-decisions-asqa-cascade.jsonl"
BENCH_ROW = "logistic, answer-side + retrieval"


def results_row(label: str) -> list[str]:
    """The cells of ``label``'s row in the recorded ASQA cascade table of docs/RESULTS.md."""
    doc = (ROOT / "docs" / "RESULTS.md").read_text(encoding="utf-8")
    section = doc.split("python -m bench.quality.route_cascade policies --dataset asqa ")[1].split("\nLabel:")[0]
    line = next(line for line in section.splitlines() if line.startswith(f"| {label} |"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def approx_numbers(value: object, rel: float = 1e-6, absolute: float = 1e-4) -> object:
    """``value`` (JSON: dicts, lists, strings, numbers) with every float wrapped in ``pytest.approx``, so that a refit
    compares equal up to what another CPU changes: its retrieval features come from float32 embeddings (relative 1e-7
    apart across CPUs), and lbfgs stops the logistic fit at a gradient of 1e-4, so a coef may move by up to about that
    much (issue 38: a coef's 16th digit; on another machine a coef of -0.0124 moved by 1.1e-6, mean and scale by 1e-7
    relative)."""
    if isinstance(value, dict):
        return {key: approx_numbers(item, rel, absolute) for key, item in value.items()}
    if isinstance(value, list):
        return [approx_numbers(item, rel, absolute) for item in value]
    return pytest.approx(value, rel=rel, abs=absolute) if isinstance(value, float) else value


def composed(escalated: dict[str, bool]) -> tuple[float, float]:
    """Dev DR and LM calls per question when the questions in ``escalated`` take adf's stored answer."""
    first, second = (read_outcomes(RUNS / "asqa-dev" / p) for p in ("vanilla-rag", "adf"))
    chosen = [Outcome(second[i].scores, first[i].lm_calls + second[i].lm_calls) if up else first[i]
              for i, up in escalated.items()]
    return corpus_score("dr", chosen), float(np.mean([o.lm_calls for o in chosen]))


def test_the_compiled_cascade_reproduces_the_bench_row_from_stored_answers():
    policy = CascadePolicy.from_dict(json.loads(STATE.read_text(encoding="utf-8"))["route_cascade"])
    assert (policy.first, policy.escalate, policy.threshold) == ("vanilla-rag", "adf", 0.5)
    rows = read_rows(RUNS / "asqa-dev" / "vanilla-rag")
    decisions = [json.loads(line) for line in DECISIONS.read_text(encoding="utf-8").splitlines()]
    assert len(decisions) == 50
    escalated = {}
    for d in decisions:
        answer = Answered.from_row(rows[d["id"]])
        assert answer_named(answer) == {k: d["features"][k] for k in ANSWER_FEATURES}  # deterministic
        x = [ANSWER_FEATURES[n](answer) if n in ANSWER_FEATURES else d["features"][n] for n in policy.model.features]
        p = float(policy.model.predict_proba(np.asarray(x))[0, 1])
        assert p == pytest.approx(d["p_escalate"], abs=1e-4) and (p > policy.threshold) == d["escalated"]
        escalated[d["id"]] = d["escalated"]
    dr, calls = composed(escalated)
    cells = results_row(BENCH_ROW)  # policy | train dr | dev dr | Δ | escalated | calls/q | tokens/q | chosen by
    assert f"{dr:.3f}" == cells[2] == "0.192"
    assert f"{sum(escalated.values())} of 50" == cells[4] and f"{calls:.2f}" == cells[5] == "4.46"
    assert re.match(r"C = 1,", cells[7])
    manifest = json.loads((STATE.parent / "manifest.json").read_text(encoding="utf-8"))["asqa-cascade"]
    assert manifest["scores"]["after"] == pytest.approx(dr, abs=1e-6) and manifest["fit"]["cascade_C"] == 1.0


@pytest.mark.slow
def test_compiling_again_from_the_stored_runs_gives_the_same_cascade(tmp_path):
    from disambig.optimizers.route_compile import RouteJob, run_route_compile
    from disambig.settings import load_settings

    job = RouteJob(dataset="asqa", candidates=("vanilla-rag", "adf"), metric="dr", n_train=60, n_val=50, runs=RUNS,
                   name="again", cascade=("vanilla-rag", "adf"))
    result, _ = run_route_compile(load_settings(), job, tmp_path, track=False)
    held = result.manifest["scores"]["heldout"]
    assert f"{held['route']['score']:.3f}" == "0.192" and held["escalated"] == 20
    assert held["route"]["lm_calls_per_q"] == pytest.approx(4.46)
    again = json.loads(result.state_path.read_text())["route_cascade"]
    assert again == approx_numbers(json.loads(STATE.read_text(encoding="utf-8"))["route_cascade"])
