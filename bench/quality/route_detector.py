"""How well the router's ambiguity detector tells ambiguous questions from clear ones (no LM call).

    python -m bench.quality.route_detector --out bench/results/route/detector.json

Fits on AmbigNQ's train split (label: more than one annotated interpretation) and reports ROC AUC on its dev split
for the detector (question embedding + retrieval features), the embedding alone, the retrieval features alone, and
ADF's gate statistics used directly as scores (separation, variance), each with C chosen by cross-validation on
train only. ``--limit`` caps the questions of each split.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from bench.harness import Script
from bench.harness.docs import generated

SCRIPT = Script.of(__file__)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench/results/route/detector.json"))
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--results", type=Path, help="Write the table into this file's generated section.")
    parser.add_argument("--report-only", action="store_true", help="Table from --out's stored report, no search.")
    parser.add_argument("--diva-run", type=Path, default=Path("bench/results/qwen/diva-ambignq"),
                        help="A stored DIVA run on AmbigNQ dev: its typing step scored on the same label.")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    report = json.loads(args.out.read_text(encoding="utf-8")) if args.report_only else measure(args)
    if args.results:
        command = SCRIPT.command(["--report-only", "--out", str(args.out), "--results", str(args.results)])
        SCRIPT.write(args.results, f"{generated(command)}\n\n{markdown(report)}", "detector")


def measure(args: argparse.Namespace) -> dict:
    """Fit and score every detector variant; write the report to ``args.out`` and print it."""
    from sklearn.metrics import roc_auc_score

    from disambig.data import load_dataset
    from disambig.evaluation.code_version import code_stamp
    from disambig.optimizers.route_data import matrix, observe_all
    from disambig.optimizers.route_fit import fit_detector
    from disambig.programs.adf.gate import is_ambiguous
    from disambig.programs.route.features import FEATURES, embedding_names
    from disambig.retrieval import build_retriever
    from disambig.settings import load_settings

    retriever = build_retriever("hybrid", corpus="wiki-slice", settings=load_settings())
    data = {s: load_dataset("ambignq", split=s, limit=args.limit) for s in ("train", "dev")}
    start = time.perf_counter()
    obs = {s: observe_all([ex.question for ex in exs], retriever) for s, exs in data.items()}
    seconds = time.perf_counter() - start
    y = {s: [is_ambiguous(ex) for ex in exs] for s, exs in data.items()}
    emb = embedding_names(len(obs["train"][0].embedding))
    sets = {"detector (embedding + retrieval features)": [*emb, *FEATURES], "embedding only": emb,
            "retrieval features only": list(FEATURES)}
    outside = outside_asqa(data["dev"])  # the slice holds ASQA's evidence, and every ASQA question is ambiguous
    y_out = [y["dev"][i] for i in outside]
    rows = {"in ASQA (the question's evidence is in the slice) as the score": {"dev_auc": round(float(
        roc_auc_score(y["dev"], [float(i not in set(outside)) for i in range(len(y["dev"]))])), 4)}}
    for label, names in sets.items():
        fitted = fit_detector(matrix(obs["train"], names), y["train"], names)
        p = fitted.model.predict_proba(matrix(obs["dev"], names))[:, 1]
        rows[label] = {"dev_auc": round(float(roc_auc_score(y["dev"], p)), 4), "C": fitted.C,
                       "train_cv_auc": round(fitted.cv_scores[fitted.C], 4),
                       "dev_auc_outside_asqa": round(float(roc_auc_score(y_out, p[outside])), 4)}
    for feature in ("passage_separation", "passage_variance"):
        score = matrix(obs["dev"], [feature])[:, 0]
        rows[f"ADF gate statistic alone: {feature.split('_')[1]}"] = {
            "dev_auc": round(float(roc_auc_score(y["dev"], score)), 4)}
    if args.diva_run and (args.diva_run / "results.jsonl").is_file():
        rows.update(diva_typing(args.diva_run, {str(ex.id): ex for ex in data["dev"]}))
    report = {"train": len(y["train"]), "dev": len(y["dev"]), "dev_outside_asqa": len(outside),
              "ambiguous_outside_asqa": sum(y_out), "ambiguous_share_dev": round(sum(y["dev"]) /
                                                                                             len(y["dev"]), 4),
              "feature_seconds_per_question": round(seconds / sum(len(v) for v in obs.values()), 4),
              "rows": rows, "code": code_stamp()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    json.dump(report, sys.stdout, indent=2)
    return report


def markdown(report: dict) -> str:
    """The report as a table: each score's ROC AUC on AmbigNQ dev, all questions and those outside ASQA."""
    lines = [f"| score | dev AUC ({report['dev']} q) | dev AUC outside ASQA ({report['dev_outside_asqa']} q, "
             f"{report['ambiguous_outside_asqa']} ambiguous) | C (train CV AUC) |", "|---|---|---|---|"]
    for label, row in report["rows"].items():
        cv = f"{row['C']} ({row['train_cv_auc']:.3f})" if "C" in row else ""
        outside = f"{row['dev_auc_outside_asqa']:.3f}" if "dev_auc_outside_asqa" in row else ""
        lines.append(f"| {label} | {row['dev_auc']:.3f} | {outside} | {cv} |")
    code = report["code"]
    lines += ["", f"Fitted on {report['train']} AmbigNQ train questions; features cost "
              f"{report['feature_seconds_per_question'] * 1000:.0f} ms a question (one BM25 and one dense search); "
              f"code `{code['commit']}`{' (dirty)' if code.get('dirty') else ''}."]
    return "\n".join(lines)


def outside_asqa(examples: list) -> list[int]:
    """Positions of the questions that are not ASQA questions (whose evidence passages the slice holds)."""
    from disambig.data import load_dataset
    from disambig.data.text import normalize

    asqa = {normalize(ex.question) for ex in load_dataset("asqa", split="all")}
    return [i for i, ex in enumerate(examples) if normalize(ex.question) not in asqa]


def diva_typing(run: Path, dev: dict) -> dict[str, dict]:
    """ROC AUC of DIVA's typing step (typed ambiguous or N/A) and of its number of pseudo-interpretations, on the
    dev questions a stored DIVA run answered."""
    from sklearn.metrics import roc_auc_score

    from disambig.data.jsonl import read_jsonl
    from disambig.programs.adf.gate import is_ambiguous

    rows = [row for _, row in read_jsonl(run / "results.jsonl") if str(row["id"]) in dev]
    notes = [(row.get("trace") or {}).get("notes") or {} for row in rows]
    y = [is_ambiguous(dev[str(row["id"])]) for row in rows]
    typed = [float((n.get("types") or ["N/A"]) != ["N/A"]) for n in notes]
    readings = [len(n.get("pseudo_interpretations") or []) for n in notes]
    label = f"DIVA typing ({len(rows)} dev questions of {run.name}; {sum(typed):.0f} typed ambiguous)"
    return {label: {"dev_auc": round(float(roc_auc_score(y, typed)), 4)},
            "DIVA's number of pseudo-interpretations (same questions)": {
                "dev_auc": round(float(roc_auc_score(y, readings)), 4)}}


if __name__ == "__main__":
    main()
