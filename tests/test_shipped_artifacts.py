"""What ``artifacts/`` ships: every compiled state loads into today's program and records a measured gain (a
router: a tie with its best single candidate at fewer LM calls), no pickle anywhere, and ``make demo`` asks a
registered program or a shipped artifact.

A compiled program is shipped only while it measures better than its uncompiled program (``artifacts/README.md``),
so the folder may hold none; the checks then run over an empty list and still fail on a broken state.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pickle_scan import pickles_under
from program_fakes import FakeEmbedder, FakeRetriever

from disambig import load
from disambig.programs import PROGRAMS

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts"


def shipped() -> list[Path]:
    return sorted(manifest.parent / entry["state_file"] for manifest in ARTIFACTS.glob("*/*/manifest.json")
                  for entry in json.loads(manifest.read_text()).values())


class RetrieverWithEncoder(FakeRetriever):
    embedder = FakeEmbedder()


def test_every_shipped_state_loads_into_the_current_program():
    for state in shipped():
        program = load(state, retriever=RetrieverWithEncoder())
        saved = json.loads(state.read_text())
        for name, predictor in program.named_predictors():
            assert len(predictor.demos) == len(saved[name]["demos"]), state


def test_every_shipped_state_records_a_held_out_gain_or_a_router_a_cheaper_tie():
    for state in shipped():
        entry = json.loads((state.parent / "manifest.json").read_text())[state.stem]
        scores = entry["scores"]
        assert scores["heldout_size"] > 0, state
        if entry["program"] == "route":  # a router ships while it ties its best single candidate and is cheaper
            held = scores["heldout"]
            best = held["best_single"]
            assert held["route_vs"][best["program"]]["verdict"] != "worse", state
            assert scores["after"] > scores["before"] or held["route"]["lm_calls_per_q"] < best["lm_calls_per_q"]
        else:
            assert scores["after"] > scores["before"], state
        assert entry["data"]["train"] != entry["data"]["heldout"]
        # compile writes to artifacts/PROGRAM/<dataset's stem>/, the dataset being a name or a built folder's path
        assert entry["lm"] and entry["metric"] and Path(entry["dataset"]).stem == state.parts[-2]


def test_no_pickle_anywhere_in_artifacts():
    assert pickles_under(ARTIFACTS) == []


def test_make_demo_asks_a_registered_program_or_a_shipped_artifact():
    makefile = (ROOT / "Makefile").read_text()
    demo = re.search(r"^demo:.*?(?=^\S)", makefile, re.S | re.M).group(0)
    variables = dict(re.findall(r"^(\w+) := (\S+)$", makefile, re.M))
    artifacts = [variables.get(v[2:-1], v) for v in re.findall(r"--artifact\s+(\S+)", demo)]
    programs = re.findall(r"--program\s+(\S+)", demo)
    assert "disambig ask" in demo and (artifacts or programs)
    assert all((ROOT / path).resolve() in {p.resolve() for p in shipped()} for path in artifacts)
    assert all(name in PROGRAMS for name in programs)
