"""Does the LM see a question's readings where the router's retrieval features do not? ROC AUC on AmbigNQ dev.

    python -m bench.quality.readings_probe --lm local:qwen2.5-1.5b --threads 1     # the LM calls (resumable)
    python -m bench.quality.readings_probe --report --results docs/RESULTS.md      # the table, no LM call

Label: an AmbigNQ question is ambiguous when it has a ``multipleQAs`` annotation. Each dev question gets one
``ReadingsProbe`` call (``programs/route/readings_probe.py``: the question alone, P(Yes) from the reply's
log-probabilities), one row each in ``--out`` as it is made. The report scores P(Yes) and, on the same questions, the
router's detector (retrieval features, fitted on AmbigNQ train; no LM), on all questions and on those outside ASQA:
the wiki slice holds ASQA's evidence and every ASQA question is ambiguous, so retrieval features score well there
for a reason that is not ambiguity.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

from bench.harness import Rows, Script, cpu_name, load1
from bench.harness.docs import generated

SCRIPT = Script.of(__file__)
OUT = Path("bench/results/route15/readings-probe-ambignq-dev.jsonl")
RESAMPLES = 2000


def run(lm: str, threads: int, limit: int | None, rows: Rows) -> None:
    """One probe call per dev question not yet in ``rows``, each row appended as it is made."""
    from disambig.data import load_dataset
    from disambig.lm.runtime import build_lm, configure_dspy
    from disambig.lm.usage import measured
    from disambig.programs.adf.gate import is_ambiguous
    from disambig.programs.route.readings_probe import ReadingsProbe
    from disambig.settings import load_settings

    rows.refuse_other("lm", lm)
    settings = load_settings(lm=lm, threads=threads)
    configure_dspy(build_lm(settings))
    probe, inside = ReadingsProbe(), asqa_questions()
    todo = [ex for ex in load_dataset("ambignq", split="dev", limit=limit) if not rows.done(str(ex.id))]
    for n, ex in enumerate(todo, 1):
        with measured() as trace:
            verdict = probe(question=ex.question)
        rows.add({"id": str(ex.id), "lm": lm, "ambiguous": is_ambiguous(ex), "in_asqa": normal(ex.question) in inside,
                  "p_yes": round(verdict.probability, 4), "verdict": verdict.verdict, "source": verdict.source,
                  "seconds": round(trace.seconds, 2), "prompt_tokens": trace.input_tokens,
                  "reused_prompt_tokens": trace.reused_prompt_tokens,
                  "threads": threads, "load1": load1(), "cpu": cpu_name()})
        print(f"{n}/{len(todo)} p={verdict.probability:.3f} ambiguous={is_ambiguous(ex)}", flush=True)


def report(rows: list[dict], out: Path) -> str:
    """The table: each score's AUC with its bootstrap interval, all questions and outside ASQA."""
    detector = detector_scores([row["id"] for row in rows])
    y = np.array([row["ambiguous"] for row in rows], dtype=bool)
    outside = np.array([not row["in_asqa"] for row in rows], dtype=bool)
    scores = {"the LM's P(Yes) (`ReadingsProbe`)": np.array([row["p_yes"] for row in rows]),
              "the router's detector (retrieval features)": detector,
              "in ASQA as the score": (~outside).astype(float)}
    head = (f"| score | AUC, {len(y)} dev q ({int(y.sum())} ambiguous) | AUC outside ASQA, {int(outside.sum())} q "
            f"({int(y[outside].sum())} ambiguous) |")
    lines = [head, "|---|---|---|"]
    for label, score in scores.items():
        cells = [auc_cell(y, score), "" if label.startswith("in ASQA") else auc_cell(y[outside], score[outside])]
        lines.append(f"| {label} | {' | '.join(cells)} |")
    seconds, load = np.median([r["seconds"] for r in rows]), np.median([r["load1"] for r in rows])
    said_yes = sum(row["verdict"] == "Yes" for row in rows)
    from_logprobs = sum(row["source"] == "logprobs" for row in rows)
    commits = sorted({row["code"]["commit"] + ("-dirty" if row["code"].get("dirty") else "") for row in rows})
    lms = sorted({row["lm"] for row in rows})
    note = (f"LM {', '.join(lms)}; it said Yes to {said_yes} of {len(rows)}; P(Yes) from {from_logprobs} replies' "
            f"log-probabilities; {seconds:.1f} s a question (median; {rows[0]['threads']} thread(s), "
            f"{rows[0]['cpu']}, load {load:.1f}); 95% intervals: {RESAMPLES:,} bootstrap resamples of the questions; "
            f"code {', '.join(f'`{c}`' for c in commits)}.")
    return "\n".join([generated(SCRIPT.command(["--report", "--out", str(out)]), f"`{out}`"), "", *lines, "", note])


def auc_cell(y: np.ndarray, score: np.ndarray) -> str:
    """``0.612 [0.55, 0.67]``: ROC AUC and its percentile-bootstrap interval (resamples holding one class skipped)."""
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    draws = []
    for _ in range(RESAMPLES):
        pick = rng.integers(0, len(y), len(y))
        if 0 < y[pick].sum() < len(pick):
            draws.append(roc_auc_score(y[pick], score[pick]))
    low, high = np.percentile(draws, [2.5, 97.5])
    return f"{roc_auc_score(y, score):.3f} [{low:.3f}, {high:.3f}]"


def detector_scores(ids: list[str]) -> np.ndarray:
    """The router's detector (retrieval features, C by train cross-validation) fitted on AmbigNQ train: its P(ambiguous)
    for the dev questions ``ids`` (no LM call; one BM25 and one dense search a question)."""
    from disambig.data import load_dataset
    from disambig.optimizers.route_data import matrix, observe_all
    from disambig.optimizers.route_fit import fit_detector
    from disambig.programs.adf.gate import is_ambiguous
    from disambig.programs.route.features import FEATURES
    from disambig.retrieval import build_retriever
    from disambig.settings import load_settings

    retriever = build_retriever("hybrid", corpus="wiki-slice", settings=load_settings())
    train = load_dataset("ambignq", split="train")
    dev = {str(ex.id): ex for ex in load_dataset("ambignq", split="dev")}
    names = list(FEATURES)
    fitted = fit_detector(matrix(observe_all([ex.question for ex in train], retriever), names),
                          [is_ambiguous(ex) for ex in train], names)
    observed = observe_all([dev[i].question for i in ids], retriever)
    return fitted.model.predict_proba(matrix(observed, names))[:, 1]


def asqa_questions() -> set[str]:
    """ASQA's questions, normalised (the wiki slice holds their evidence passages)."""
    from disambig.data import load_dataset

    return {normal(ex.question) for ex in load_dataset("asqa", split="all")}


def normal(question: str) -> str:
    from disambig.data.text import normalize

    return normalize(question)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lm", default="local:qwen2.5-1.5b")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--limit", type=int, default=None, help="first N dev questions (default: all 300)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--report", action="store_true", help="the table from --out's rows, no LM call")
    parser.add_argument("--results", type=Path, default=None, help="with --report: write the table into this file")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    rows = Rows(args.out)
    if not args.report:
        run(args.lm, args.threads, args.limit, rows)
        return
    stored = list(rows)
    if not stored:
        raise SystemExit(f"no rows in {args.out}; run without --report first")
    SCRIPT.section(args.results, report(stored, args.out), "ambignq")


if __name__ == "__main__":
    main()
