"""The one runner of LM runs: a configuration (programs × datasets × LM × N, and options) answered by
``disambig eval`` with the code of a clean worktree at a commit, one resumable run folder per run.

    python -m bench.run bench/quality/suite.toml                        # HEAD's code, every run of the file
    python -m bench.run bench/quality/suite.toml --commit 3dbc4af --only vanilla-rag-asqa
    python -m bench.run bench/quality/artifacts.toml --dry-run          # print the commands, run nothing
    python -m bench.run bench/cost/speed.toml --out bench/results/speed-after   # the same runs into other folders

A configuration is TOML; ``out`` is the folder of its run folders (relative to the checkout), ``[defaults]`` holds
keys every run gets, and each ``[[runs]]`` entry is one run, or one per program × dataset when it lists several:

    out = "bench/results/suite"
    [defaults]
    lm = "local:smollm2"
    limit = 50
    flags = ["--no-track"]                       # any other `disambig eval` options, as typed
    [[runs]]
    programs = ["closed-book", "vanilla-rag"]    # or program = "..."
    datasets = ["asqa", "ambignq"]               # or dataset = "..."

A run's keys: program(s), dataset(s), name (default PROGRAM-DATASET), split, limit, skip, lm, retriever, corpus,
artifact, metrics, flags. A stopped run resumes where it stopped (``disambig eval`` refuses to mix answers of other
code into a folder); every row carries the worktree's commit, clean. Each sitting of a run appends its start and end
(time, CPU, load, rows so far) to the run folder's ``machine.jsonl``, so a run resumed on another machine says so.
"""

from __future__ import annotations

import argparse
import logging
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.harness.docs import CHECKOUT
from bench.harness.machine import record_sitting
from bench.harness.worktree import clean_worktree, git, python_in

OPTIONS = {"split": "--split", "limit": "--limit", "skip": "--skip", "lm": "--lm", "retriever": "--retriever",
           "corpus": "--corpus", "artifact": "--artifact"}
KEYS = {"program", "programs", "dataset", "datasets", "name", "metrics", "flags", *OPTIONS}


@dataclass(frozen=True)
class Run:
    """One ``disambig eval`` run: its folder's name, the program, the dataset and the other options."""

    name: str
    program: str
    dataset: str
    options: tuple[str, ...] = ()

    def arguments(self, out: Path) -> list[str]:
        """``disambig eval``'s arguments, writing to ``out/NAME``."""
        return ["eval", self.program, "--dataset", self.dataset, *self.options, "--out", str(out / self.name)]


def expand(config: dict[str, Any]) -> list[Run]:
    """The runs of a configuration, in file order (programs before datasets within an entry)."""
    runs = []
    for number, entry in enumerate(config.get("runs", []), 1):
        entry = {**config.get("defaults", {}), **entry}
        unknown = sorted(set(entry) - KEYS)
        if unknown:
            raise ValueError(f"run {number}: unknown key {unknown[0]!r}; a run takes {', '.join(sorted(KEYS))}")
        for program in entry.get("programs") or [entry["program"]]:
            for dataset in entry.get("datasets") or [entry["dataset"]]:
                options = [str(v) for key, flag in OPTIONS.items() if key in entry for v in (flag, entry[key])]
                options += [v for metric in entry.get("metrics", []) for v in ("--metric", metric)]
                name = entry.get("name") or f"{program}-{Path(dataset).stem}"
                runs.append(Run(name, program, str(Path(dataset).expanduser()) if "/" in dataset else dataset,
                                (*options, *entry.get("flags", []))))
    names = [run.name for run in runs]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"two runs write the folder {twice[0]!r}; give them distinct names")
    return runs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", type=Path, help="a TOML configuration (bench/*/*.toml)")
    parser.add_argument("--commit", default="HEAD", help="the commit whose code answers (a clean worktree of it)")
    parser.add_argument("--only", nargs="+", default=None, help="run folder names to run, of the configuration's")
    parser.add_argument("--out", default=None,
                        help="the folder of run folders (relative to the checkout) instead of the configuration's "
                             "`out`, e.g. one per code")
    parser.add_argument("--dry-run", action="store_true", help="print the commands and run nothing")
    args = parser.parse_args(argv)
    config = tomllib.loads(args.config.read_text(encoding="utf-8"))
    runs = [run for run in expand(config) if args.only is None or run.name in args.only]
    if not runs:
        raise SystemExit(f"no run of {args.config} is named {', '.join(args.only or [])}")
    out = CHECKOUT / (args.out or config["out"])
    if args.dry_run:
        print("\n".join(" ".join(["disambig", *run.arguments(out)]) for run in runs))
        return
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    with clean_worktree(args.commit) as tree:
        commit = git(tree, "rev-parse", "HEAD")
        for run in runs:
            logging.info("%s: disambig %s (code of %s)", run.name, " ".join(run.arguments(out)), args.commit)
            record_sitting(out / run.name, event="start", commit=commit)
            code = None  # stays None when the sitting is interrupted (Ctrl-C, a signal)
            try:
                code = subprocess.run([*python_in(tree), "disambig", *run.arguments(out)], cwd=CHECKOUT).returncode
            finally:
                record_sitting(out / run.name, event="end", commit=commit, returncode=code)
            if code:
                raise SystemExit(f"{run.name} stopped; run the same command again to resume it")


if __name__ == "__main__":
    main()
