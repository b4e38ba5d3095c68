"""The Δ-to-reference column of the table writers (``bench/quality/rescore.py``, ``bench/quality/grounded.py``,
``bench/quality/spiderqa_table.py``): which run is the reference, and what each row's cell says."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    return importlib.import_module


def run_row(program: str, label: str, scores: dict[str, float], lm: str = "local", retriever: str = "hybrid:x",
            artifact: str = "", dataset: str = "asqa") -> dict:
    """A ``rescore`` row over questions q1..q4, each ``{metric: value}`` of ``scores`` by question."""
    per_question = {f"q{i}": {name: values[i - 1] for name, values in scores.items()} for i in range(1, 5)}
    return {"program": label, "lm": lm, "questions": 4, "failures": 0, "metrics": {"ambigqa-f1": 0.0},
            "params": {"program": program, "dataset": dataset, "lm": lm, "retriever": retriever, "artifact": artifact},
            "primary": "ambigqa-f1", "per_question": per_question, "code": "abc", "cost": {}}


def test_rescore_compares_each_row_with_the_vanilla_rag_of_its_lm_and_retriever(bench):
    rescore = bench("bench.quality.rescore")
    hybrid = run_row("vanilla-rag", "vanilla-rag", {"ambigqa-f1": [0.0, 0.5, 1.0, 0.5]})
    bm25 = run_row("vanilla-rag", "vanilla-rag-bm25", {"ambigqa-f1": [0.0] * 4}, retriever="bm25:x")
    compiled = run_row("vanilla-rag", "vanilla-rag-compiled", {"ambigqa-f1": [1.0] * 4}, artifact="state.json")
    adf_bm25 = run_row("adf", "adf-bm25", {"ambigqa-f1": [0.5] * 4}, retriever="bm25:x")
    closed = run_row("closed-book", "closed-book", {"ambigqa-f1": [0.0, 0.5, 1.0, 0.5]}, retriever="")
    other_lm = run_row("diva", "smollm2-diva", {"ambigqa-f1": [0.0] * 4}, lm="local:smollm2")
    rows = [hybrid, bm25, compiled, adf_bm25, closed, other_lm]
    assert rescore.reference_of(adf_bm25, rows) is bm25  # several vanilla-rag runs: the one with its retriever
    assert rescore.reference_of(compiled, rows) is hybrid  # a compiled vanilla-rag is no reference
    assert rescore.reference_of(closed, rows) is None  # two uncompiled vanilla-rag runs, neither on its retriever
    assert rescore.reference_of(other_lm, rows) is None  # no vanilla-rag on its LM
    assert rescore.reference_of(hybrid, [hybrid, closed, compiled]) is hybrid
    assert rescore.reference_of(closed, [hybrid, closed, compiled]) is hybrid  # one candidate: retriever not needed
    text = rescore.table([hybrid, closed, compiled, other_lm])
    assert "| ambigqa-f1 | Δ ambigqa-f1 vs vanilla-rag [95% CI] | readings/q |" in text
    assert "| vanilla-rag | local | 4 | 0 | 0.000 | reference |" in text
    assert "| closed-book | local | 4 | 0 | 0.000 | +0.000 [+0.000, +0.000] tie |" in text  # the same scores
    # compiled: 1.0 on every question against 0.0, 0.5, 1.0, 0.5 -> +0.5, every difference >= 0, so low >= 0
    assert "| vanilla-rag-compiled | local | 4 | 0 | 0.000 | +0.500 [" in text
    assert "| smollm2-diva | local:smollm2 | 4 | 0 | 0.000 | – |" in text


def test_rescore_names_how_many_questions_a_shorter_reference_shares(bench):
    rescore = bench("bench.quality.rescore")
    scores = {f"q{i}": {"ambigqa-f1": 1.0} for i in range(1, 5)}
    reference = {"q1": {"ambigqa-f1": 0.0}, "q2": {"ambigqa-f1": 0.0}}
    assert rescore.difference_cell(scores, reference, "ambigqa-f1") == "+1.000 [+1.000, +1.000] better on 2"
    assert rescore.difference_cell(scores, scores, "ambigqa-f1") == "reference"
    assert rescore.difference_cell(scores, None, "ambigqa-f1") == "–"
    assert rescore.difference_cell(scores, reference, None) == "–"


def test_rescore_bootstraps_corpus_dr_from_its_inputs(bench):
    rescore = bench("bench.quality.rescore")
    # program: mean D-F1 0.4, mean ROUGE-L 0.9 -> DR 0.6; reference: D-F1 0.1, ROUGE-L 0.4 -> DR 0.2; Δ = +0.4
    program = {"q1": {"d-f1": 0.2, "rouge-l": 0.8, "dr": 0.4}, "q2": {"d-f1": 0.4, "rouge-l": 0.9, "dr": 0.6},
               "q3": {"d-f1": 0.6, "rouge-l": 1.0, "dr": 0.77}}
    reference = {q: {"d-f1": 0.1, "rouge-l": 0.4, "dr": 0.2} for q in program}
    assert rescore.difference_cell(program, reference, "dr").startswith("+0.400 [")


def spiderqa_run(name: str, naces: list[float]) -> dict:
    """A scored SpiderQA run (``spiderqa_table.scored``'s shape) with the given NACE per question."""
    trace = {"lm_calls": 1, "input_tokens": 10, "output_tokens": 1, "seconds": 1.0, "retrieval_calls": 0}
    questions = {f"q{i}": {"ace": n, "nace": n, "recall": 1.0, "failed": False, "stages": None, "cp": None,
                           "batches": None, "row": {"trace": trace}} for i, n in enumerate(naces, start=1)}
    return {"name": name, "params": {"dataset": "sq", "lm_model": "m.gguf"}, "questions": questions, "code": "abc"}


def test_spiderqa_table_calls_a_lower_nace_better(bench):
    table = bench("bench.quality.spiderqa_table")
    runs = [spiderqa_run("naive-rag-count-k5", [0.5, 0.5, 1.0]), spiderqa_run("dfa", [0.25, 0.25, 0.75])]
    text = table.section("runs", runs, paper=False)
    assert "| chunk recall | Δ NACE mean vs naive-rag-count-k5 [95% CI] | LM calls/q |" in text
    assert "| `naive-rag-count-k5` | 3 | 0 | 0.667 | 0.500 | 0.667 | 0 | 1.000 | reference |" in text
    assert "| `dfa` | 3 | 0 | 0.417 | 0.250 | 0.417 | 0 | 1.000 | -0.250 [-0.250, -0.250] better |" in text
    assert "Reference: `naive-rag-count-k5` (Naive RAG at k = 5" in text
    alone = table.section("runs", runs[1:], paper=False)
    assert "| 1.000 | – |" in alone and "is not among these runs" in alone


def test_grounded_table_measures_g_f1_against_the_named_reference(bench):
    grounded = bench("bench.quality.grounded")

    def row(program: str, precision: list[float], recall: list[float]) -> dict:
        pairs = enumerate(zip(precision, recall, strict=True))
        per_question = {f"q{i}": {"g-precision": p, "g-recall": r} for i, (p, r) in pairs}
        return {"program": program, "lm": "m", "dataset": "asqa", "questions": 2, "failures": 0, "metrics": {},
                "judge": {"parse_failures": 0, "judge_calls": 2}, "proxy": "fp", "cost": {}, "code": "abc",
                "per_question": per_question}

    # rac: G-P 0.5, G-R 0.5 -> G-F1 0.5; verdict: G-P 1.0, G-R 0.5 -> G-F1 2 * 0.5 / 1.5 = 0.667; Δ +16.67 points
    rows = [row("rac-top20", [0.5, 0.5], [0.5, 0.5]), row("verdict", [1.0, 1.0], [0.5, 0.5])]
    text = grounded.table(rows, "rac-top20")
    assert "| Δ G-F1 (points) vs rac-top20 [95% CI] | unparsable |" in text
    assert "| +16.67 [+16.67, +16.67] better | 0 |" in text and "| reference | 0 |" in text
    assert "| – | 0 |" in grounded.table(rows)  # no vanilla-rag among them
    note = grounded.section("--runs r", rows, {"judge_lm": "j", "judge_model": "m"}, "own", "vanilla-rag")
    assert "Reference: `vanilla-rag` (not among these runs: no row has a Δ)" in note


def test_spiderqa_reference_option_is_named_in_the_command(bench, tmp_path, monkeypatch, capsys):
    table = bench("bench.quality.spiderqa_table")
    monkeypatch.setattr(table, "scored", lambda folder: spiderqa_run(folder.name, [0.5, 1.0]))
    for name in ("dfa", "dfa-labeled"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.jsonl").write_text(json.dumps({"id": "q1"}) + "\n")
    monkeypatch.setattr("sys.argv", ["spiderqa_table.py", "--runs", str(tmp_path), "--only", "dfa", "dfa-labeled",
                                     "--reference", "dfa", "--no-paper"])
    table.main()
    out = capsys.readouterr().out
    assert f"--runs {tmp_path} --only dfa dfa-labeled --reference dfa`" in out
    assert "| `dfa` | 2 | 0 | 0.750 | 0.750 | 0.750 | 0 | 1.000 | reference |" in out
