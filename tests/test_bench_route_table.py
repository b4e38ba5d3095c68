"""``bench/quality/route_table.py``: the routers' table is the manifests' numbers, and an old manifest is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def route_table(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    import bench.quality.route_table

    return bench.quality.route_table


def manifest(route_vs: dict | None) -> dict:
    held = {"questions": 50, "route": {"score": 0.2254, "lm_calls_per_q": 5.74},
            "singles": {"vanilla-rag": {"score": 0.1669, "lm_calls_per_q": 2.0},
                        "diva": {"score": 0.2254, "lm_calls_per_q": 5.74}},
            "oracle": {"score": 0.2348, "lm_calls_per_q": 3.36}, "actions": {"answer:diva": 50}}
    if route_vs is not None:
        held["route_vs"] = route_vs
    return {"policy": {"dataset": "asqa", "metric": "dr", "lm_model": "Qwen.gguf", "train_labels": {"answer:diva": 40},
                       "fit": {"policy_constant": "answer:diva"},
                       "scores": {"train_size": 60, "heldout": held}}}


def test_the_table_shows_each_candidate_with_the_routes_paired_interval(route_table, tmp_path):
    versus = {"vanilla-rag": {"difference": 0.0585, "low": 0.018, "high": 0.113, "verdict": "better"},
              "diva": {"difference": 0.0, "low": 0.0, "high": 0.0, "verdict": "tie"}}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest(versus)))
    text = route_table.report([tmp_path / "policy.json"])
    assert "| | vanilla-rag | 0.167 | +0.059 [+0.018, +0.113] better | 2.00 | |" in text
    assert "| | diva | 0.225 | +0.000 [+0.000, +0.000] tie | 5.74 | |" in text
    assert "0.225 | – | 5.74 | diva 50 |" in text and "a constant policy, diva" in text and "labelled diva 40;" in text


def test_a_manifest_without_the_paired_comparison_or_the_state_is_refused(route_table, tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps(manifest(None)))
    with pytest.raises(SystemExit, match="compile it again"):
        route_table.report([tmp_path / "policy.json"])
    with pytest.raises(SystemExit, match="has no entry 'other'"):
        route_table.report([tmp_path / "other.json"])


def test_a_cascade_fit_is_named_as_one(route_table):
    assert route_table.kept({"cascade_C": 1.0, "cascade_threshold": 0.5, "cascade_constant": None}) == (
        "an escalation model, C = 1.0, threshold 0.5")
    assert route_table.kept({"policy_C": 0.3, "policy_constant": None}) == "a logistic policy, C = 0.3"
