"""Remote LM: a program in-process against the same model behind `disambig lm serve`, at 1, 2 and 4 requests at once.

    python -m bench.cost.remote_lm --program vanilla-rag --limit 20            # every setting, 4 questions at a time
    python -m bench.cost.remote_lm --program verdict --settings inproc served-1 served-2-pc2 served-4-pc4
    python -m bench.cost.remote_lm --report-only --program vanilla-rag verdict --results docs/benchmarks.md

Each setting is one resumable `disambig eval` folder, OUT/PROGRAM/SETTING, on the first --limit ASQA dev questions
(hybrid retrieval over the wiki slice, Qwen2.5-Coder-0.5B, no response cache, the default repetition guard, which the
server applies as the in-process engine does). The settings run round robin, --chunk questions at a time (all
settings answer questions 1-4, then 5-8, ...), so a change in the machine's load falls on every setting alike; a
stopped run goes on where it stopped. A served setting starts `disambig lm serve --parallel P --threads 2` on a free
loopback port for its chunk (each of the P workers gets max(1, 2 // P) threads) and stops it after; `disambig eval`
then sends Q questions at once (`--threads Q`) and C calls at once inside a question (`--parallel-calls C`).
In-process runs the model inside `eval` with both cores. The Spark settings answer through `eval --engine spark
--master local[2]`: each executor loads its own model, or all send to one server; their time is the whole job's.
Every command runs the code of a clean worktree at ``--commit`` (default HEAD; ``bench.harness.clean_worktree``), so
the rows carry that commit.

Timing: while `eval` runs, this script notes when each new row appears in results.jsonl. A chunk's answering time is
from the earliest (appearance - the row's own seconds) to the last appearance, so command start-up, index and model
loading and the report are outside it; timing.jsonl keeps one line per chunk (questions, answering and wall seconds,
load average, server start seconds, commit).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.harness import Script, clean_worktree, cpu_name, python_in
from bench.harness.docs import CHECKOUT
from bench.harness.serve import serving

SCRIPT = Script.of(__file__)
STORED = CHECKOUT / "bench" / "results" / "remote-lm"
CORES = 2
MODEL = "local:qwen2.5-0.5b"  # the model of the stored rows (the default `local` until the 1.5B)


@dataclass(frozen=True)
class Setting:
    """How one setting runs: server workers (0 = in-process), questions at once, calls at once inside a question,
    and Spark executors (0 = no Spark: `eval` answers in its own process)."""

    workers: int
    questions: int
    calls: int
    spark: int = 0
    llama_server: bool = False  # llama.cpp's own server (its binary in LLAMA_SERVER) instead of `disambig lm serve`
    prompt_cache: bool = True  # `lm serve --prompt-cache-mb 512` (its default is off)

    def describe(self) -> str:
        if self.llama_server:
            return (f"llama.cpp's llama-server, {self.workers} slot{'s' * (self.workers > 1)} × {CORES} threads "
                    f"(continuous batching); {self.questions} question{'s' * (self.questions > 1)} × {self.calls} "
                    f"call{'s' * (self.calls > 1)} at once")
        if self.spark:
            lm = "each loads its own model (1 thread)" if not self.workers else \
                f"sharing one server of {self.workers} workers × {max(1, CORES // self.workers)} thread"
            return f"Spark local[{self.spark}], {self.spark} executors {lm}"
        if not self.workers:
            return f"in-process, {CORES} threads"
        return (f"served (prompt cache {'on' if self.prompt_cache else 'off'}), {self.workers} "
                f"worker{'s' * (self.workers > 1)} × "
                f"{max(1, CORES // self.workers)} "
                f"thread{'s' * (CORES // self.workers > 1)}; {self.questions} question{'s' * (self.questions > 1)} "
                f"× {self.calls} call{'s' * (self.calls > 1)} at once")


SETTINGS = {
    "inproc": Setting(0, 1, 1),
    "served-1": Setting(1, 1, 1),
    "served-1-nocache": Setting(1, 1, 1, prompt_cache=False),
    "served-2": Setting(2, 2, 1),
    "served-4": Setting(4, 4, 1),
    "served-2-pc2": Setting(2, 1, 2),
    "served-4-pc4": Setting(4, 1, 4),
    "llama-server-1": Setting(1, 1, 1, llama_server=True),
    "llama-server-2": Setting(2, 2, 1, llama_server=True),
    "llama-server-4": Setting(4, 4, 1, llama_server=True),
    "llama-server-2-pc2": Setting(2, 1, 2, llama_server=True),
    "llama-server-4-pc4": Setting(4, 1, 4, llama_server=True),
    "spark-own": Setting(0, 1, 1, spark=2),
    "spark-served": Setting(2, 1, 1, spark=2),
}


def child_env() -> dict[str, str]:
    """The environment of `eval` and the server: no response cache, no inherited LM or endpoint choice."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISAMBIG_LM", "DISAMBIG_API_BASE", "DISAMBIG_THREADS")}
    env.update({"DISAMBIG_LM_CACHE": "0", "HF_HUB_OFFLINE": "1", "OMP_WAIT_POLICY": "PASSIVE",
                "TOKENIZERS_PARALLELISM": "false"})
    return env


def server_command(setting: Setting, port: int, cli: list[str]) -> list[str]:
    """`disambig lm serve` of ``MODEL`` with the setting's workers, or llama.cpp's llama-server with as many
    slots (each slot's context as large as one worker's)."""
    if not setting.llama_server:
        return [*cli, "lm", "serve", "--model", MODEL, "--port", str(port), "--parallel", str(setting.workers),
                "--threads", str(CORES), "--prompt-cache-mb", "512" if setting.prompt_cache else "0"]
    from disambig.lm.spec import local_file, parse_spec
    from disambig.settings import load_settings

    binary = os.environ.get("LLAMA_SERVER")
    if not binary:
        sys.exit("the llama-server settings need LLAMA_SERVER=/path/to/llama-server")
    spec = parse_spec(MODEL)
    path, _ = local_file(spec, load_settings(threads=1).cache_dir)
    return [binary, "-m", str(path), "--host", "127.0.0.1", "--port", str(port), "-np", str(setting.workers),
            "-t", str(CORES), "-tb", str(CORES), "-c", str(8192 * setting.workers), "--alias", spec.embedded.name]


@contextmanager
def server(setting: Setting, log_path: Path, cli: list[str]) -> Iterator[tuple[str, str, float]]:
    """The setting's server on a free loopback port; yields (api base, model id, start s)."""
    start = time.monotonic()
    with serving(lambda port: server_command(setting, port, cli), model_id, log_path, child_env(), 180.0) as found:
        port, _, model = found
        yield f"http://127.0.0.1:{port}/v1", model, time.monotonic() - start


def model_id(port: int) -> str | None:
    """The model id the server at ``port`` lists under ``/v1/models``, or None before it answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2) as reply:
            return json.load(reply)["data"][0]["id"]
    except OSError:
        return None


def row_count(path: Path) -> int:
    if not path.exists():
        return 0
    with path.open("rb") as f:
        return sum(1 for line in f if line.endswith(b"\n"))


def run_eval(program: str, folder: Path, limit: int, setting: Setting, lm: list[str], cli: list[str]) -> dict:
    """One `disambig eval` up to ``limit`` questions; when each new row appeared, and the command's wall time."""
    folder.mkdir(parents=True, exist_ok=True)
    results = folder / "results.jsonl"
    before = row_count(results)
    threads = CORES if not setting.workers else setting.questions
    spark: list[str] = []
    if setting.spark:  # one partition per executor; an executor's own model gets one thread
        threads = 1
        spark = ["--engine", "spark", "--master", f"local[{setting.spark}]", "--partitions", str(setting.spark)]
    command = [*cli, "eval", program, "--dataset", "asqa", "--split", "dev", "--limit", str(limit), *spark,
               "--threads", str(threads), "--parallel-calls", str(setting.calls),
               "--no-track", "--no-cache", "--out", str(folder), *lm]
    start = time.monotonic()
    appeared: list[float] = []
    with (folder / "eval.log").open("a") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=child_env())
        while process.poll() is None:
            time.sleep(0.25)
            seen = row_count(results) - before
            appeared += [time.monotonic() - start] * (seen - len(appeared))
    appeared += [time.monotonic() - start] * (row_count(results) - before - len(appeared))
    if process.returncode:
        sys.exit(f"eval exited with {process.returncode}; see {folder / 'eval.log'}")
    rows = [json.loads(line) for line in results.read_text().splitlines()][before:]
    began = min((t - row["trace"].get("seconds", 0.0) for t, row in zip(appeared, rows, strict=False)), default=0.0)
    if setting.spark:  # the rows are written when the Spark job ends: its whole wall time counts
        began = 0.0
    return {"questions": len(rows), "answering_s": round(max(appeared, default=0.0) - max(began, 0.0), 2),
            "wall_s": round(time.monotonic() - start, 2), "code": code_of(rows)}


def code_of(rows: list[dict]) -> str:
    """The commit (``+dirty`` when uncommitted code ran) that answered ``rows``."""
    stamps = {(row.get("code") or {}).get("commit", "?") + ("+dirty" if (row.get("code") or {}).get("dirty") else "")
              for row in rows}
    return ",".join(sorted(stamps))


def run(program: str, names: list[str], limit: int, chunk: int, out: Path, cli: list[str]) -> None:
    """Every setting up to ``limit`` questions, ``chunk`` at a time, round robin, with the ``cli`` command."""
    for end in range(chunk, limit + chunk, chunk):
        end = min(end, limit)
        for name in names:
            folder = out / program / name
            if row_count(folder / "results.jsonl") >= end:
                continue
            setting = SETTINGS[name]
            load = os.getloadavg()[0]
            started = 0.0
            if setting.workers:
                with server(setting, folder.parent / f"{name}-server.log", cli) as (url, model, started):
                    timing = run_eval(program, folder, end, setting, ["--lm", f"openai/{model}", "--api-base", url],
                                      cli)
            else:
                timing = run_eval(program, folder, end, setting, ["--lm", MODEL], cli)
            line = {"up_to": end, **timing, "load1": round(load, 2), "server_start_s": round(started, 2),
                    "cpu": cpu_name()}
            with (folder / "timing.jsonl").open("a") as f:
                f.write(json.dumps(line) + "\n")
            print(f"{program} {name} up to {end}: {timing}", flush=True)


def summary(folder: Path) -> dict | None:
    """A setting's figures from its stored rows and timings."""
    if not (folder / "timing.jsonl").exists():
        return None
    timings = [json.loads(line) for line in (folder / "timing.jsonl").read_text().splitlines()]
    timed = sum(t["questions"] for t in timings)  # rows of a turn stopped before its timing line wait for a resume
    rows = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()][:timed]
    seconds = sorted(row["trace"]["seconds"] for row in rows)
    answering = sum(t["answering_s"] for t in timings)
    return {
        "rows": rows, "n": len(rows), "failed": sum(bool(row.get("error")) for row in rows),
        "per_minute": 60 * sum(t["questions"] for t in timings) / answering if answering else 0.0,
        "p50": statistics.median(seconds), "p95": seconds[min(len(seconds) - 1, round(0.95 * (len(seconds) - 1)))],
        "tokens": statistics.mean(row["trace"]["input_tokens"] + row["trace"]["output_tokens"] for row in rows),
        "calls": statistics.mean(row["trace"]["lm_calls"] for row in rows),
        "load": (min(t["load1"] for t in timings), max(t["load1"] for t in timings)),
        "commits": sorted({t["code"] for t in timings if t["code"]}), "cpu": timings[-1]["cpu"],
    }


def answer_of(row: dict) -> str:
    prediction = row.get("prediction") or {}
    return json.dumps([prediction.get("long_answer"), prediction.get("interpretations")], sort_keys=True)


def table(program: str, out: Path, shown: Path) -> str:
    """The markdown table of one program's settings, each compared with in-process on the questions both answered."""
    figures = {name: summary(out / program / name) for name in SETTINGS}
    figures = {name: f for name, f in figures.items() if f}
    if not figures:
        return f"No stored runs of {program} under {shown}.\n"
    reference = {row["id"]: answer_of(row) for row in figures.get("inproc", {"rows": []})["rows"]}
    lines = [f"{program}:", "",
             "| setting | how | questions | questions/min | p50 s | p95 s | LM calls/q | tokens/q | same answer as "
             "in-process | load (1-min) |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for name, f in figures.items():
        both = [row for row in f["rows"] if row["id"] in reference]
        same = sum(answer_of(row) == reference[row["id"]] for row in both)
        failed = f" ({f['failed']} failed)" if f["failed"] else ""
        lines.append(f"| {name} | {SETTINGS[name].describe()} | {f['n']}{failed} | {f['per_minute']:.2f} | "
                     f"{f['p50']:.1f} | {f['p95']:.1f} | {f['calls']:.2f} | {f['tokens']:,.0f} | "
                     f"{same} of {len(both)} | {f['load'][0]:.1f}-{f['load'][1]:.1f} |")
    commits = sorted({c for f in figures.values() for c in f["commits"]})
    cpu = next(iter(figures.values()))["cpu"]
    lines += ["", f"CPU: {cpu}; code {', '.join(commits)}; rows in `{shown / program}`."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--program", nargs="+", default=["vanilla-rag"])
    parser.add_argument("--settings", nargs="+", choices=sorted(SETTINGS),
                        default=["inproc", "served-1", "served-2", "served-4"])
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--chunk", type=int, default=4)
    parser.add_argument("--out", type=Path, default=STORED)
    parser.add_argument("--commit", default="HEAD", help="the commit whose code answers (a clean worktree of it)")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--results", type=Path,
                        help="Markdown file with bench/cost/remote_lm.py:PROGRAM markers (PROGRAM@OUT for another "
                        "--out)")
    args = parser.parse_args()
    out = args.out.resolve()
    shown = out.relative_to(CHECKOUT) if out.is_relative_to(CHECKOUT) else out
    where = "" if out == STORED.resolve() else f" --out {shown}"
    command = SCRIPT.command(f"--report-only --program {' '.join(args.program)}{where} --results {args.results}")
    for program in args.program:
        if not args.report_only:
            with clean_worktree(args.commit) as tree:
                run(program, args.settings, args.limit, args.chunk, out, [*python_in(tree), "disambig"])
        text = f"Generated by `{command}`.\n\n{table(program, out, shown)}".removesuffix("\n")
        SCRIPT.section(args.results, text, program + where.replace(" --out ", "@"))


if __name__ == "__main__":
    main()
