"""The compiled programs shipped in ``artifacts/`` still load into today's programs, and hold no pickle."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pickle_scan import pickles_under
from program_fakes import FakeEmbedder, FakeRetriever

from disambig import load

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts"


def shipped() -> list[Path]:
    return sorted(manifest.parent / entry["state_file"] for manifest in ARTIFACTS.glob("*/*/manifest.json")
                  for entry in json.loads(manifest.read_text()).values())


class RetrieverWithEncoder(FakeRetriever):
    embedder = FakeEmbedder()


def test_the_project_ships_compiled_vanilla_rag_and_diva():
    assert {path.parts[-3] for path in shipped()} >= {"vanilla-rag", "diva"}


@pytest.mark.parametrize("state", shipped(), ids=lambda p: "/".join(p.parts[-3:]))
def test_shipped_state_loads_into_the_current_program(state):
    program = load(state, retriever=RetrieverWithEncoder())
    saved = json.loads(state.read_text())
    for name, predictor in program.named_predictors():
        assert len(predictor.demos) == len(saved[name]["demos"])


@pytest.mark.parametrize("state", shipped(), ids=lambda p: "/".join(p.parts[-3:]))
def test_manifest_records_the_measured_change(state):
    entry = json.loads((state.parent / "manifest.json").read_text())[state.stem]
    scores = entry["scores"]
    assert scores["heldout_size"] > 0 and 0.0 <= scores["before"] <= 1.0 and 0.0 <= scores["after"] <= 1.0
    assert entry["data"]["train"] != entry["data"]["heldout"]
    assert entry["lm"] and entry["metric"] and entry["dataset"] == state.parts[-2]


def test_no_pickle_anywhere_in_artifacts():
    assert pickles_under(ARTIFACTS) == []


def test_make_demo_uses_a_shipped_artifact():
    demo = re.search(r"^demo:.*?(?=^\S)", (ROOT / "Makefile").read_text(), re.S | re.M).group(0)
    variables = dict(re.findall(r"^(\w+) := (\S+)$", (ROOT / "Makefile").read_text(), re.M))
    used = [variables.get(v[2:-1], v) for v in re.findall(r"--artifact\s+(\S+)", demo)]
    assert used and all((ROOT / path).resolve() in {p.resolve() for p in shipped()} for path in used)
