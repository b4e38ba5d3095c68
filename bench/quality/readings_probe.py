"""Does the LM see a question's readings where the router's retrieval features do not? ROC AUC on AmbigNQ dev.

    python -m bench.quality.readings_probe --lm local:qwen2.5-1.5b --threads 1     # the LM calls (resumable)
    python -m bench.quality.readings_probe --split train --limit 300 ...          # train rows: fit its direction
    python -m bench.quality.readings_probe --report --results docs/RESULTS.md      # the table, no LM call

Label: an AmbigNQ question is ambiguous when it has a ``multipleQAs`` annotation. Each dev question gets one
``ReadingsProbe`` call (``programs/route/readings_probe.py``: the question alone, P(Yes) from the reply's
log-probabilities), one row each in ``--out`` as it is made. The report scores P(Yes) and, on the same questions, the
router's detector (retrieval features, fitted on AmbigNQ train; no LM), on all questions and on those outside ASQA:
the wiki slice holds ASQA's evidence and every ASQA question is ambiguous, so retrieval features score well there
for a reason that is not ambiguity. With probe rows of train questions (``--split train``) the report also fits, on
those questions only, the probe alone (its direction), the detector, and the detector with the probe as a feature.
"""

from __future__ import annotations

import argparse
import os
from functools import cache
from pathlib import Path

import numpy as np

from bench.harness import Rows, Script, cpu_name, load1
from bench.harness.docs import generated

SCRIPT = Script.of(__file__)
OUT = "bench/results/route15/readings-probe-ambignq-{split}.jsonl"


def run(lm: str, split: str, threads: int, limit: int | None, rows: Rows) -> None:
    """One probe call per question of ``split`` not yet in ``rows``, each row appended as it is made."""
    from disambig.data import load_dataset
    from disambig.data.text import normalize
    from disambig.lm.runtime import build_lm, configure_dspy
    from disambig.lm.usage import measured
    from disambig.programs.adf.gate import is_ambiguous
    from disambig.programs.route.readings_probe import ReadingsProbe
    from disambig.settings import load_settings

    rows.refuse_other("lm", lm)
    settings = load_settings(lm=lm, threads=threads)
    configure_dspy(build_lm(settings))
    probe, inside = ReadingsProbe(), asqa_questions()
    todo = [ex for ex in load_dataset("ambignq", split=split, limit=limit) if not rows.done(str(ex.id))]
    for n, ex in enumerate(todo, 1):
        with measured() as trace:
            verdict = probe(question=ex.question)
        rows.add({"id": str(ex.id), "lm": lm, "ambiguous": is_ambiguous(ex),
                  "in_asqa": normalize(ex.question) in inside,
                  "p_yes": round(verdict.probability, 4), "verdict": verdict.verdict, "source": verdict.source,
                  "seconds": round(trace.seconds, 2), "prompt_tokens": trace.input_tokens,
                  "reused_prompt_tokens": trace.reused_prompt_tokens,
                  "threads": threads, "load1": load1(), "cpu": cpu_name()})
        print(f"{n}/{len(todo)} p={verdict.probability:.3f} ambiguous={is_ambiguous(ex)}", flush=True)


def report(rows: list[dict], train_rows: list[dict], out: Path, train_out: Path) -> str:
    """The table: each score's AUC with its bootstrap interval, all questions and outside ASQA, and its paired
    difference outside ASQA with the row it is compared with. With probe rows of train questions, also the probe's
    AUC on them, its direction fitted there (one feature: the raw AUC or one minus it), and the detector with and
    without the probe as a feature, fitted on those questions only."""
    from disambig.data import load_dataset
    from disambig.optimizers.route_fit import fit_detector
    from disambig.programs.adf.gate import is_ambiguous
    from disambig.programs.route.features import FEATURES

    y = np.array([row["ambiguous"] for row in rows], dtype=bool)
    outside = np.array([not row["in_asqa"] for row in rows], dtype=bool)
    p_yes = np.array([row["p_yes"] for row in rows])
    dev = {str(ex.id): ex.question for ex in load_dataset("ambignq", split="dev")}
    features = detector_features([dev[row["id"]] for row in rows])
    train = load_dataset("ambignq", split="train")
    train_matrix = dict(zip([str(ex.id) for ex in train], detector_features([ex.question for ex in train]),
                            strict=True))
    labels = {str(ex.id): is_ambiguous(ex) for ex in train}

    def fitted(ids: list[str], extra: np.ndarray | None = None) -> np.ndarray:
        X = np.array([train_matrix[i] for i in ids])
        names = list(FEATURES)
        if extra is not None:
            X, names = np.hstack([X, extra]), [*names, "p_yes"]
        model = fit_detector(X, [labels[i] for i in ids], names).model
        return model.predict_proba(features if extra is None else np.hstack([features, p_yes[:, None]]))[:, 1]

    detector = f"the router's detector (retrieval features, all {len(train)} train questions)"
    scores = {"the LM's P(Yes) (`ReadingsProbe`)": (p_yes, detector), detector: (fitted(list(train_matrix)), "")}
    if train_rows:
        n, train_ids = len(train_rows), [row["id"] for row in train_rows]
        train_p = np.array([[row["p_yes"]] for row in train_rows])
        alone = fit_detector(train_p, [labels[i] for i in train_ids], ["p_yes"]).model
        same = f"the detector fitted on the same {n} train questions"
        scores[f"P(Yes), direction fitted on {n} train questions"] = (alone.predict_proba(p_yes[:, None])[:, 1],
                                                                       detector)
        scores[same] = (fitted(train_ids), detector)
        scores[f"the detector + P(Yes), fitted on the same {n}"] = (fitted(train_ids, train_p), same)
    scores["in ASQA as the score"] = ((~outside).astype(float), "")
    head = (f"| score | AUC, {len(y)} dev q ({int(y.sum())} ambiguous) | AUC outside ASQA, {int(outside.sum())} q "
            f"({int(y[outside].sum())} ambiguous) | Δ AUC outside ASQA [95% CI] | compared with |")
    lines = [head, "|---|---|---|---|---|"]
    for label, (score, against) in scores.items():
        asqa = label.startswith("in ASQA")
        delta = delta_cell(y[outside], score[outside], scores[against][0][outside]) if against else ""
        cells = [auc_cell(y, score), "" if asqa else auc_cell(y[outside], score[outside]), delta, against]
        lines.append(f"| {label} | {' | '.join(cells)} |")
    if train_rows:
        ty, tp = np.array([row["ambiguous"] for row in train_rows], dtype=bool), train_p[:, 0]
        tout = np.array([not row["in_asqa"] for row in train_rows], dtype=bool)
        lines += ["", f"The LM's P(Yes) on the {len(train_rows)} train questions it was asked: AUC {auc_cell(ty, tp)}; "
                  f"outside ASQA ({int(tout.sum())} questions, {int(ty[tout].sum())} ambiguous) "
                  f"{auc_cell(ty[tout], tp[tout])}."]
    seconds, load = np.median([r["seconds"] for r in rows]), np.median([r["load1"] for r in rows])
    said_yes = sum(row["verdict"] == "Yes" for row in rows)
    from_logprobs = sum(row["source"] == "logprobs" for row in rows)
    commits = sorted({row["code"]["commit"] + ("-dirty" if row["code"].get("dirty") else "")
                      for row in [*rows, *train_rows]})
    lms = sorted({row["lm"] for row in [*rows, *train_rows]})
    note = (f"LM {', '.join(lms)}; on dev it said Yes to {said_yes} of {len(rows)}; P(Yes) from {from_logprobs} "
            f"replies' log-probabilities; {seconds:.1f} s a question (median; {rows[0]['threads']} thread(s), "
            f"{rows[0]['cpu']}, load {load:.1f}); 95% intervals: percentile bootstrap over the questions, "
            f"9,999 resamples (`disambig.evaluation.paired`), paired for the Δ; "
            f"fits: logistic regression, C by 5-fold train cross-validation; code "
            f"{', '.join(f'`{c}`' for c in commits)}.")
    args = ["--report", "--out", str(out), *(["--train-out", str(train_out)] if train_rows else [])]
    read = f"`{out}`" + (f" and `{train_out}`" if train_rows else "")
    return "\n".join([generated(SCRIPT.command(args), read), "", *lines, "", note])


def auc(score: np.ndarray, label: np.ndarray, axis: int = -1) -> np.ndarray:
    """ROC AUC along ``axis`` (the Mann-Whitney U of the positives' ranks, ties averaged): a statistic for
    ``disambig.evaluation.paired``, one value per resample."""
    from scipy.stats import rankdata

    positives = label.sum(axis=axis)
    negatives = label.shape[axis] - positives
    ranks = (rankdata(score, axis=axis) * label).sum(axis=axis)
    return (ranks - positives * (positives + 1) / 2) / (positives * negatives)


def auc_cell(y: np.ndarray, score: np.ndarray) -> str:
    """``0.612 [0.550, 0.670]``: ROC AUC with its 95% bootstrap interval (the paired bootstrap against a constant
    score, whose AUC is 0.5 on every resample, as ``bench.harness.paired.rate`` does for a rate)."""
    from disambig.evaluation.paired import paired_difference

    result = paired_difference([score, y], [np.full(len(y), 0.5), y], auc)
    return f"{0.5 + result.difference:.3f} [{0.5 + result.low:.3f}, {0.5 + result.high:.3f}]"


def delta_cell(y: np.ndarray, score: np.ndarray, reference: np.ndarray) -> str:
    """``+0.070 [-0.050, +0.190] tie``: AUC of ``score`` minus that of ``reference`` on the same questions, with its
    paired-bootstrap interval."""
    from disambig.evaluation.paired import format_difference, paired_difference

    return format_difference(paired_difference([score, y], [reference, y], auc))


def detector_features(questions: list[str]) -> np.ndarray:
    """The router's retrieval features of ``questions``, in order (no LM call; one BM25 and one dense search a
    question)."""
    from disambig.optimizers.route_data import matrix, observe_all
    from disambig.programs.route.features import FEATURES

    return matrix(observe_all(questions, retriever()), list(FEATURES))


@cache
def retriever():
    """The hybrid retriever over the wiki slice, built once."""
    from disambig.retrieval import build_retriever
    from disambig.settings import load_settings

    return build_retriever("hybrid", corpus="wiki-slice", settings=load_settings())


def asqa_questions() -> set[str]:
    """ASQA's questions, normalised (the wiki slice holds their evidence passages)."""
    from disambig.data import load_dataset
    from disambig.data.text import normalize

    return {normalize(ex.question) for ex in load_dataset("asqa", split="all")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lm", default="local:qwen2.5-1.5b")
    parser.add_argument("--split", choices=["dev", "train"], default="dev",
                        help="the questions to probe (train: for fitting the probe's direction and weight)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--limit", type=int, default=None, help="first N questions of the split (default: all)")
    parser.add_argument("--out", type=Path, default=None, help=f"rows (default {OUT.format(split='SPLIT')})")
    parser.add_argument("--train-out", type=Path, default=Path(OUT.format(split="train")),
                        help="with --report: the train split's rows, used when the file exists")
    parser.add_argument("--report", action="store_true", help="the table from --out's rows, no LM call")
    parser.add_argument("--results", type=Path, default=None, help="with --report: write the table into this file")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    out = args.out or Path(OUT.format(split="dev" if args.report else args.split))
    if not args.report:
        run(args.lm, args.split, args.threads, args.limit, Rows(out))
        return
    stored = list(Rows(out))
    if not stored:
        raise SystemExit(f"no rows in {out}; run without --report first")
    train_rows = list(Rows(args.train_out)) if args.train_out.is_file() else []
    SCRIPT.section(args.results, report(stored, train_rows, out, args.train_out), "ambignq")


if __name__ == "__main__":
    main()
