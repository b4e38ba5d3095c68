"""Re-measure every shipped compiled artifact against its uncompiled program on held-out dev questions.

    python bench/artifacts.py --limit 50      # resumable; one run folder per program/state

For each ``artifacts/PROGRAM/DATASET/manifest.json`` entry this runs ``disambig eval`` twice on the first
``--limit`` questions of the dataset's dev hash split (disjoint from the train split the compile used):
the uncompiled program and the compiled state, with the LM model file the manifest records, the manifest's
retriever, and the same metrics. Run folders go to ``--out`` (default ``bench/results/artifacts``), each row
stamped with the code that produced it; killing the script and starting it again resumes.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

ARTIFACTS = Path("artifacts")


def shipped() -> list[tuple[Path, dict]]:
    """(state path, manifest entry) of every shipped compiled program."""
    found = []
    for manifest_path in sorted(ARTIFACTS.glob("*/*/manifest.json")):
        for entry in json.loads(manifest_path.read_text(encoding="utf-8")).values():
            found.append((manifest_path.parent / entry["state_file"], entry))
    return found


def lm_for(entry: dict) -> str:
    """The LM spec that loads the model file the artifact was compiled with."""
    from disambig.lm.paths import default_gguf

    model = entry.get("lm_model") or ""
    smollm2 = default_gguf()
    if entry.get("lm") == "local" and model in ("", smollm2.name):
        return f"local:{smollm2}"
    return entry.get("lm", "local")


def run_one(entry: dict, state: Path | None, args: argparse.Namespace) -> dict:
    from disambig.evaluation.session import EvalConfig, run_eval
    from disambig.run_setup import prepare_run
    from disambig.settings import load_settings

    settings = load_settings(lm=lm_for(entry))
    kind, _, corpus = (entry.get("retriever") or "").partition(":")
    program = entry["program"]
    run = prepare_run(settings, program, entry["dataset"], "dev", args.limit, list(args.metrics), kind or None,
                      corpus or "wiki-slice", artifact=str(state) if state else "")
    config = EvalConfig(program=program, dataset=entry["dataset"], split="dev", limit=args.limit, lm=settings.lm,
                        retriever=run.retriever_name, metrics=tuple(run.metrics), artifact=str(state or ""))
    name = f"{program}-{entry['dataset']}-" + (state.stem if state else "uncompiled")
    done = [0]

    def progress(result: object) -> None:
        done[0] += 1
        logging.info("%s: %d/%d%s", name, done[0], len(run.examples),
                     " (failed)" if getattr(result, "failed", False) else "")

    outcome = run_eval(config, run.program, run.examples, run.metrics, args.out / name, on_result=progress,
                       track=not args.no_track, allow_mixed_code=args.allow_mixed_code)
    return outcome.report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=50)
    parser.add_argument("--metrics", nargs="+", default=["d-f1", "rouge-l", "dr", "answer-f1"])
    parser.add_argument("--out", type=Path, default=Path("bench/results/artifacts"))
    parser.add_argument("--no-track", action="store_true", help="Do not record the runs in MLflow.")
    parser.add_argument("--allow-mixed-code", action="store_true")
    parser.add_argument("--programs", nargs="*", default=None, help="Only these programs.")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    entries = [(s, e) for s, e in shipped() if not args.programs or e["program"] in args.programs]
    seen_programs: set[tuple[str, str]] = set()
    for state, entry in entries:
        key = (entry["program"], entry["dataset"])
        if key not in seen_programs:
            seen_programs.add(key)
            start = time.perf_counter()
            run_one(entry, None, args)
            logging.info("%s uncompiled finished in %.0f s", key, time.perf_counter() - start)
        start = time.perf_counter()
        run_one(entry, state, args)
        logging.info("%s %s finished in %.0f s", key, state.stem, time.perf_counter() - start)


if __name__ == "__main__":
    main()
