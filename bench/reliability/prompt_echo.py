"""How many stored answers carry our own prompt text, before and after ``disambig.programs.prompt_echo`` cleans them.

    python -m bench.reliability.prompt_echo                                  # every results.jsonl under bench/results
    python -m bench.reliability.prompt_echo --out bench/results/prompt-echo.json

Reads the stored rows of every run folder under ``--root`` (at any depth; ``bench.harness.raw_rows``), no LM call. Per
answered row: whether its long answer, and each reading (question and answer), contains the passage-framing note
(``programs/context.py``'s ``UNTRUSTED_NOTE``: a run of 6 of its words, case-blind, ``prompt_echo.echoes``) and any
of our prompt texts (``prompt_echo.prompt_texts``), as stored and after ``clean_prediction`` (the cleaning every
prediction now goes through in ``make_prediction``). Prints the counts and writes them as JSON with the code that
counted.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from bench.harness import raw_rows


def count(root: Path) -> dict[str, Any]:
    """The counts for every ``results.jsonl`` under ``root``: totals, and the long answers with the note as stored by
    the folder under ``root`` that holds them."""
    from disambig.programs.context import UNTRUSTED_NOTE
    from disambig.programs.prompt_echo import clean_prediction, echoes

    totals: Counter[str] = Counter()
    by_folder: Counter[str] = Counter()
    runs = sorted(p.parent for p in root.rglob("results.jsonl"))
    for run in runs:
        for row in raw_rows(run):
            prediction = row.get("prediction") or {}
            if not isinstance(prediction.get("long_answer"), str):
                continue
            readings = list(prediction.get("interpretations") or [])
            cleaned = clean_prediction(readings, prediction["long_answer"])
            stages = {"before": (prediction["long_answer"], readings), "after": (cleaned.long_answer,
                                                                                cleaned.interpretations)}
            totals["long_answers"] += 1
            totals["readings_before"] += len(readings)
            totals["readings_after"] += len(cleaned.interpretations)
            totals["readings_dropped"] += cleaned.dropped_readings
            totals["cuts"] += cleaned.removed
            for stage, (answer, shown) in stages.items():
                texts = [f"{r.get('question') or ''}\n{r.get('answer') or ''}" for r in shown]
                totals[f"long_answers_with_note_{stage}"] += echoes(answer, (UNTRUSTED_NOTE,))
                totals[f"long_answers_with_prompt_text_{stage}"] += echoes(answer)
                totals[f"readings_with_note_{stage}"] += sum(echoes(t, (UNTRUSTED_NOTE,)) for t in texts)
                totals[f"readings_with_prompt_text_{stage}"] += sum(echoes(t) for t in texts)
            if echoes(prediction["long_answer"], (UNTRUSTED_NOTE,)):
                by_folder[run.relative_to(root).parts[0]] += 1
    return {"root": str(root), "run_folders": len(runs), **dict(totals),
            "long_answers_with_note_before_by_folder": dict(sorted(by_folder.items()))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=Path("bench/results"), help="Folder searched for results.jsonl.")
    parser.add_argument("--out", type=Path, default=None, help="JSON file to write the counts to.")
    args = parser.parse_args()
    from disambig.evaluation.code_version import code_stamp

    report = count(args.root) | {"code": code_stamp()}
    text = json.dumps(report, indent=2)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
