"""ADF's ambiguity gate on AmbigNQ: the paper's hand-set thresholds, the released code's rule, and gates learned
from the train split's free labels (ambiguous iff an annotator wrote multipleQAs), scored on held-out dev.

    python -m bench.quality.adf_gate                          # hybrid retrieval over the wiki slice; statistics cached
    python -m bench.quality.adf_gate --retriever bm25 --results docs/RESULTS.md   # also rewrite the RESULTS section

Only retrieval and the embedder run (no LM): each question's top-10 passages are embedded and their coherence
statistics (eq. 1-2) computed once, cached in ``--cache`` (JSON), then every gate is fitted and scored.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path
from typing import Any

from bench.harness import Script

SCRIPT = Script.of(__file__)


def statistics(examples: list[Any], retriever: Any, depth: int, cache: dict[str, dict]) -> list[Any]:
    """Each question's Coherence over its top-``depth`` passages (cached by question id)."""
    import numpy as np

    from disambig.programs.adf.geometry import Coherence, coherence
    from disambig.programs.adf.program import passage_text

    vectors: dict[str, np.ndarray] = {}
    todo = [ex for ex in examples if ex.id not in cache]
    start = time.perf_counter()
    for n, ex in enumerate(todo, 1):
        passages = retriever.search(ex.question, depth)
        new = [p for p in passages if p.id not in vectors]
        if new:
            for p, v in zip(new, retriever.embedder.encode([passage_text(p) for p in new]), strict=True):
                vectors[p.id] = v
        cache[ex.id] = coherence(np.array([vectors[p.id] for p in passages])).to_dict()
        if n % 100 == 0:
            logging.info("%d/%d questions (%.0f s)", n, len(todo), time.perf_counter() - start)
    return [Coherence(**cache[ex.id]) for ex in examples]


def gates() -> dict[str, Any]:
    """The gates compared: name -> (unfitted gate, whether it is fitted on train)."""
    from disambig.programs.adf.gate import AmbiguityGate

    return {
        "paper (variance >= 0.25 or separation >= 0.1)": (AmbiguityGate(0.25, 0.1), False),
        "released code (separation > 0.1; mean distance > 0.8 alone answers)": (
            AmbiguityGate(0.8, 0.1, dispersion="mean_distance", strict=True, uncertain="answer"), False),
        "learned, paper's rule, max accuracy": (AmbiguityGate(0.25, 0.1), True),
        "learned, paper's rule, max F1": (AmbiguityGate(0.25, 0.1, objective="f1"), True),
        "learned, paper's rule, max balanced accuracy": (AmbiguityGate(0.25, 0.1, objective="balanced_accuracy"), True),
        "learned, separation only (code's rule), max accuracy": (
            AmbiguityGate(0.8, 0.1, dispersion="mean_distance", strict=True, uncertain="answer"), True),
    }


def evaluate(train: list[Any], y_train: list[bool], dev: list[Any], y_dev: list[bool]) -> list[dict[str, Any]]:
    from disambig.programs.adf.gate import gate_metrics

    rows = []
    for name, (gate, fit) in gates().items():
        if fit:
            gate.fit(train, y_train)
        tau_var, tau_sep = gate.thresholds
        rows.append({"gate": name, "tau_var": tau_var, "tau_sep": tau_sep, "dispersion": gate.dispersion,
                     "train": gate_metrics(gate.predict(train), y_train),
                     "dev": gate_metrics(gate.predict(dev), y_dev)})
    rows.append(logistic(train, y_train, dev, y_dev))
    rows.append({"gate": "always decompose", "tau_var": None, "tau_sep": None, "dispersion": "",
                 "train": gate_metrics([True] * len(y_train), y_train),
                 "dev": gate_metrics([True] * len(y_dev), y_dev)})
    return rows


def logistic(train: list[Any], y_train: list[bool], dev: list[Any], y_dev: list[bool]) -> dict[str, Any]:
    """A comparison, not a gate ADF uses: class-balanced logistic regression on all three statistics."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    from disambig.programs.adf.gate import gate_metrics

    def features(stats: list[Any]) -> np.ndarray:
        return np.array([[s.variance, s.mean_distance, s.separation] for s in stats])

    scaler = StandardScaler().fit(features(train))
    model = LogisticRegression(class_weight="balanced").fit(scaler.transform(features(train)), y_train)
    return {"gate": "logistic regression on variance, mean distance, separation (class-balanced; comparison)",
            "tau_var": None, "tau_sep": None, "dispersion": "all three",
            "train": gate_metrics(model.predict(scaler.transform(features(train))), y_train),
            "dev": gate_metrics(model.predict(scaler.transform(features(dev))), y_dev)}


def describe(stats: list[Any], labels: list[bool]) -> dict[str, Any]:
    import numpy as np
    from sklearn.metrics import roc_auc_score

    out: dict[str, Any] = {"n": len(labels), "ambiguous": float(np.mean(labels))}
    for field in ("variance", "mean_distance", "separation"):
        values = np.array([getattr(s, field) for s in stats])
        for label, mask in (("ambiguous", np.array(labels)), ("unambiguous", ~np.array(labels))):
            out[f"{field}_{label}_p50"] = float(np.median(values[mask])) if mask.any() else None
        out[f"{field}_p5_p95"] = [float(np.quantile(values, 0.05)), float(np.quantile(values, 0.95))]
        out[f"{field}_auc"] = float(roc_auc_score(labels, values)) if 0 < sum(labels) < len(labels) else None
    return out


def table(rows: list[dict[str, Any]], summary: dict[str, Any], args: argparse.Namespace) -> str:
    def threshold(value: float | None) -> str:
        return "" if value is None else f"{value:.3f}"

    lines = [
        f"AmbigNQ, {args.retriever} retrieval over `{args.corpus}`, top-{args.depth} passages embedded with "
        f"all-MiniLM-L6-v2; train {summary['train']['n']} questions ({summary['train']['ambiguous']:.1%} "
        f"ambiguous), held-out dev {summary['dev']['n']} ({summary['dev']['ambiguous']:.1%} ambiguous). "
        "Label: ambiguous iff the question has more than one annotated interpretation (`multipleQAs`). "
        "F1 is of the ambiguous class; decomposition rate = share of questions the gate sends to decomposition.",
        "",
        "| gate | dispersion | tau_var | tau_sep | dev accuracy | dev F1 | dev decomposition rate | train accuracy |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        d = r["dev"]
        lines.append(f"| {r['gate']} | {r['dispersion']} | {threshold(r['tau_var'])} | {threshold(r['tau_sep'])} | "
                     f"{d['accuracy']:.3f} | {d['f1']:.3f} | {d['decomposition_rate']:.3f} | "
                     f"{r['train']['accuracy']:.3f} |")
    s = summary["train"]
    lines += [
        "",
        "Medians on train (ambiguous / unambiguous): variance "
        f"{s['variance_ambiguous_p50']:.3f} / {s['variance_unambiguous_p50']:.3f}, mean distance "
        f"{s['mean_distance_ambiguous_p50']:.3f} / {s['mean_distance_unambiguous_p50']:.3f}, separation "
        f"{s['separation_ambiguous_p50']:.3f} / {s['separation_unambiguous_p50']:.3f}; variance p5-p95 "
        f"{s['variance_p5_p95'][0]:.3f}-{s['variance_p5_p95'][1]:.3f}. ROC AUC of each statistic for the label "
        "(train / dev; 0.5 = no signal, below 0.5 = higher values mean less ambiguous): "
        + ", ".join(f"{f.replace('_', ' ')} {s[f + '_auc']:.3f} / {summary['dev'][f + '_auc']:.3f}"
                    for f in ("variance", "mean_distance", "separation")) + ".",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--retriever", default="hybrid", choices=("bm25", "dense", "hybrid"))
    parser.add_argument("--corpus", default="wiki-slice")
    parser.add_argument("--depth", type=int, default=10, help="passages measured per question (2k)")
    parser.add_argument("--limit", type=int, default=None, help="questions per split (all by default)")
    parser.add_argument("--cache", type=Path, default=Path("bench/results/adf-gate"))
    parser.add_argument("--results", type=Path, default=None, help="write the section into this markdown file")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    from disambig.data import load_dataset
    from disambig.programs.adf.gate import is_ambiguous
    from disambig.retrieval import build_retriever

    retriever = build_retriever(args.retriever, corpus=args.corpus)
    if getattr(retriever, "embedder", None) is None:
        from disambig.retrieval.embedder import Embedder

        retriever.embedder = Embedder()
    args.cache.mkdir(parents=True, exist_ok=True)
    cache_file = args.cache / f"statistics-{args.retriever}-{args.corpus}-{args.depth}.json"
    cache = json.loads(cache_file.read_text()) if cache_file.exists() else {}
    splits = {}
    for split in ("train", "dev"):
        examples = load_dataset("ambignq", split=split, limit=args.limit)
        splits[split] = (statistics(examples, retriever, args.depth, cache), [is_ambiguous(ex) for ex in examples])
        cache_file.write_text(json.dumps(cache), encoding="utf-8")
    rows = evaluate(*splits["train"], *splits["dev"])
    summary = {split: describe(*splits[split]) for split in splits}
    report = {"retriever": args.retriever, "corpus": args.corpus, "depth": args.depth, "summary": summary,
              "gates": rows}
    (args.cache / f"report-{args.retriever}.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    SCRIPT.section(args.results, table(rows, summary, args))


if __name__ == "__main__":
    main()
