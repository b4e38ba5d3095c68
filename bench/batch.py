"""Batch answering, local vs Spark: the same 200 questions through `--engine local` and `--engine spark` on
local[1], local[2] and local[4], with a remote-like scripted LM (a fixed delay per call, built in every worker from
DISAMBIG_LM_FACTORY); rows per second and whether every engine gave the same answers.

    python bench/batch.py [--questions 200] [--delay 0.1] [--out bench/results/batch/delay-0.1.json]

The program is closed-book (one LM call per question, no retriever) saved as a compiled state; the questions are
generated here. Prints a Markdown table for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FACTORY = f"{ROOT / 'tests' / 'batch_fakes.py'}:scripted_lm"
RUNS = [("local", None), ("spark", "local[1]"), ("spark", "local[2]"), ("spark", "local[4]")]
SUBJECTS = ["river", "mountain", "novel", "bridge", "painting", "treaty", "comet", "opera", "stadium", "vaccine"]
ASKS = ["Who named the {} of {}?", "When was the {} of {} first described?", "Where is the largest {} of {}?",
        "Who owns the oldest {} of {}?"]


def make_questions(n: int) -> list[dict[str, str]]:
    """``n`` distinct questions from templates: no benchmark file is read."""
    return [{"id": f"b{i}", "question": ASKS[i % len(ASKS)].format(SUBJECTS[i % len(SUBJECTS)], 1800 + i)}
            for i in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--delay", type=float, default=0.1, help="seconds each scripted LM call waits")
    parser.add_argument("--out", type=Path, default=None, help="default bench/results/batch/delay-DELAY.json")
    args = parser.parse_args()
    args.out = args.out or ROOT / "bench" / "results" / "batch" / f"delay-{args.delay:g}.json"
    os.environ.update({"DISAMBIG_LM_FACTORY": FACTORY, "DISAMBIG_SCRIPTED_DELAY": str(args.delay)})

    import pandas as pd

    from disambig.optimizers.artifact import save_artifact
    from disambig.optimizers.batch import run_batch
    from disambig.optimizers.batch_io import read_table, write_table
    from disambig.programs import build_program

    rows, reference = [], None
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as folder:
        work = Path(folder)
        state = save_artifact(build_program("closed-book"), work / "art" / "plain.json",
                              {"program": "closed-book", "optimizer": "none"})
        source = write_table(pd.DataFrame(make_questions(args.questions)), work / "questions.parquet")
        for engine, master in RUNS:
            output = work / f"{engine}-{master or 'process'}.jsonl"
            began = time.perf_counter()
            result = run_batch(str(state), source, output, engine=engine, master=master or "local[1]")
            wall = time.perf_counter() - began
            answers = read_table(output)[["id", "long_answer", "error"]].to_dict("records")
            reference = reference or answers
            rows.append({"engine": engine, "master": master or "-", "rows": result.answered, "failed": result.failed,
                         "answer_seconds": round(result.seconds, 2), "wall_seconds": round(wall, 2),
                         "rows_per_second": round(result.rows_per_second, 2), "same_answers": answers == reference})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"questions": args.questions, "delay": args.delay, "runs": rows}, indent=2))
    print("| engine | master | rows | failed | answering s | wall s (with Spark start) | rows/s | same answers |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        print(f"| {r['engine']} | {r['master']} | {r['rows']} | {r['failed']} | {r['answer_seconds']} | "
              f"{r['wall_seconds']} | {r['rows_per_second']} | {'yes' if r['same_answers'] else 'NO'} |")


if __name__ == "__main__":
    main()
