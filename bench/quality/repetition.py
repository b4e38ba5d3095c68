"""How often stored long answers loop, and what an n-gram stop guard would have made of them (no LM call).

    python -m bench.quality.repetition --runs bench/results/qwen [--ngram 6 --repeats 3] [--results docs/RESULTS.md]

A long answer *loops* when some run of ``--ngram`` words occurs ``--repeats`` times. Under greedy decoding a guard
that stops generation as soon as that happens produces exactly the prefix of the unguarded answer up to that point,
so its effect can be computed from the stored answers: each looping answer is cut where the n-gram's second
occurrence starts, then back to its last whole sentence, and re-scored with the dataset's metrics. (A guard that
changes the sampling distribution, such as llama.cpp's repetition penalty, cannot be simulated this way and needs
new runs.)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from disambig.lm.repetition import guarded, loop_cut


def run_row(run: Path, ngram: int, repeats: int) -> dict:
    """One run's looping share and its metrics with and without the guard."""
    from disambig.cli.score_cmd import build_metrics, flatten_result, load_questions
    from disambig.data.jsonl import read_jsonl
    from disambig.evaluation.scoring import score_predictions

    params = json.loads((run / "params.json").read_text(encoding="utf-8"))
    rows = [flatten_result(row) for _, row in read_jsonl(run / "results.jsonl")]
    examples, kind = load_questions(params["dataset"])
    metrics = build_metrics([], kind, None, None)
    cut_rows = [{**r, "long_answer": guarded(r.get("long_answer") or "", ngram, repeats)} for r in rows]
    loops = sum(loop_cut(r.get("long_answer") or "", ngram, repeats) is not None for r in rows)
    scored = [score_predictions(rs, examples, metrics) for rs in (rows, cut_rows)]
    before, after = (result.metrics for result in scored)
    words = [len((r.get("long_answer") or "").split()) for r in rows]
    cut_words = [len(r["long_answer"].split()) for r in cut_rows]
    return {"run": run.name, "dataset": kind, "n": len(rows), "looping": loops, "words": sum(words) / len(rows),
            "words_guarded": sum(cut_words) / len(rows), "before": before, "after": after,
            "delta": guard_difference(*(result.per_question for result in scored), PRIMARY[kind])}


PRIMARY = {"asqa": "dr", "ambignq": "ambigqa-f1"}  # the metric of each row's paired interval


def guard_difference(before: list[dict], after: list[dict], metric: str) -> str:
    """The paired-bootstrap cell of ``metric``'s change from the stored answers to their guarded cut."""
    from bench.quality.rescore import difference_cell

    def by_id(per_question: list[dict]) -> dict[str, dict[str, float]]:
        return {q["id"]: q["scores"] for q in per_question}

    return f"{metric} " + difference_cell(by_id(after), by_id(before), metric)


def markdown(rows: list[dict], ngram: int, repeats: int) -> str:
    metric_names = {"asqa": ["rouge-l", "d-f1", "dr"], "ambignq": ["ambigqa-f1", "d-f1"]}
    lines = [f"Loop: a run of {ngram} words occurring {repeats} times in the long answer.", "",
             "| run | n | looping | words/answer (guarded) | metrics before → guarded | Δ guarded − before [95% CI] |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        shown = ", ".join(f"{m} {r['before'][m]:.3f} → {r['after'][m]:.3f}" for m in metric_names[r["dataset"]]
                          if m in r["before"])
        lines.append(f"| {r['run']} | {r['n']} | {r['looping']} | {r['words']:.0f} ({r['words_guarded']:.0f}) | "
                     f"{shown} | {r['delta']} |")
    return "\n".join(lines)


def main() -> None:
    import sys

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=Path("bench/results/qwen"))
    parser.add_argument("--only", nargs="*", default=None, help="Run folder names to include (default: all).")
    parser.add_argument("--ngram", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--results", type=Path)
    args = parser.parse_args()
    folders = [p.parent for p in sorted(args.runs.glob("*/results.jsonl"))
               if args.only is None or p.parent.name in args.only]
    text = markdown([run_row(f, args.ngram, args.repeats) for f in folders], args.ngram, args.repeats)
    print(text)
    if args.results:
        from bench.quality.route_table import write_section

        write_section(args.results, "repetition", text, "python -m bench.quality.repetition " + " ".join(sys.argv[1:]),
                      "bench/quality/repetition.py")


if __name__ == "__main__":
    main()
