"""The served program under load: `disambig serve` of a closed-book compile on loopback, 1, 4 and 16 concurrent
clients × a fixed number of questions each round; throughput, p50/p95/p99 latency, replies by kind, the server's
memory before and after, and every answer checked against its request (no lost, duplicated or swapped answers).

    python -m bench.reliability.load --lm scripted [--delay 0] [--clients 1,4,16] [--requests 64] [--out FILE]
    python -m bench.reliability.load --lm embedded --clients 1,4 --requests 8 --threads 1 --max-seconds 360
    python -m bench.reliability.load table [--reports bench/results/load] [--results docs/reliability.md]

`--lm scripted` is the LM of tests/batch_fakes.py (DISAMBIG_LM_FACTORY): its answer is made from the question, so
each answer is checked exactly, and `--delay` makes each call wait like a remote LM; `--lm embedded` is the default
embedded model (Qwen2.5-Coder-0.5B), whose answers are checked by the question their row carries. Past capacity
(more clients than --max-concurrent + --max-queue, e.g. `--clients 32 --delay 0.5`) the overflow is counted as
http-503. The run is bounded: nothing is sent after --max-seconds, the server start has its own bound, and the
server (with its process group) is stopped when the run ends, however it ends. Prints one JSON document (also
written to --out).

``table`` starts no server: it makes a Markdown table of each stored report (``--reports``, one JSON file a run) with
a line on the run that made it, and writes each between the ``bench/reliability/load.py:NAME`` markers of
``--results`` (NAME:
the file's name without ``.json``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import socket
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.harness import Script
from bench.harness.docs import CHECKOUT, generated
from bench.harness.serve import family, serving
from bench.reliability.load_clients import figures, run_clients

SCRIPT = Script.of(__file__)
FACTORY = f"{CHECKOUT / 'tests' / 'batch_fakes.py'}:scripted_lm"
START_SECONDS = 240.0  # the embedded model loads before the server answers /ping


def scripted_answer() -> Callable[[str], str]:
    """``scripted_answer`` of tests/batch_fakes.py: the answer its LM gives to a question."""
    spec = importlib.util.spec_from_file_location("bench_load_fakes", FACTORY.rpartition(":")[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.scripted_answer


def server_env(lm: str, delay: float, threads: int) -> dict[str, str]:
    """The server's environment: the chosen LM, its threads, no LM response cache (timings stay honest)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISAMBIG_LM_FACTORY", "DISAMBIG_API_BASE")}
    env.update({"DISAMBIG_THREADS": str(threads), "DISAMBIG_LM_CACHE": "0", "HF_HUB_OFFLINE": "1"})
    if lm == "scripted":
        env.update({"DISAMBIG_LM_FACTORY": FACTORY, "DISAMBIG_SCRIPTED_DELAY": str(delay)})
    else:
        env["DISAMBIG_LM"] = "local:qwen2.5-0.5b"  # the model of the stored rows (the default `local` until 1.5B)
    return env


def logged_model(folder: Path) -> tuple[str, str]:
    """A plain closed-book state logged as a compile run in an MLflow store in ``folder``: (store, model URI)."""
    from disambig.optimizers.artifact import save_artifact
    from disambig.optimizers.compile import CompileResult
    from disambig.optimizers.tracking import log_compile_run
    from disambig.programs import build_program

    manifest = {"program": "closed-book", "dataset": "load", "metric": "none", "optimizer": "none", "budget": {}}
    state = save_artifact(build_program("closed-book"), folder / "art" / "plain.json", manifest)
    store = f"sqlite:///{folder / 'mlflow.db'}"
    return store, log_compile_run(CompileResult(state, manifest, 0.0, 0.0), uri=store, register=False)["model_uri"]


def pings(port: int) -> bool | None:
    """True when the server at ``port`` answers ``/ping``, else None (not yet)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=2) as response:
            return response.status == 200 or None
    except OSError:
        return None


def rss_mb(pids: set[int]) -> float:
    """Resident memory of ``pids`` together, in MB (processes gone since are left out)."""
    total = 0
    for pid in pids:
        try:
            lines = Path(f"/proc/{pid}/status").read_text().splitlines()
        except OSError:
            continue
        total += sum(int(line.split()[1]) for line in lines if line.startswith("VmRSS:"))
    return round(total / 1024, 1)


@contextmanager
def served(model_uri: str, store: str, env: dict[str, str], limits: list[str], log: Path) -> Iterator[tuple[int, int]]:
    """`disambig serve` on a free loopback port until the block ends: yields (port, server PID); stopped as a user
    would stop it (``bench.harness.serve.serving``)."""
    command = [str(Path(sys.executable).with_name("disambig")), "serve", model_uri, "--tracking-uri", store, *limits]
    with serving(lambda port: [*command, "--port", str(port)], pings, log, env, START_SECONDS) as (port, pid, _):
        yield port, pid


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def counts(text: str) -> list[int]:
    """``1,4,16`` as [1, 4, 16]; anything else is refused before a server starts."""
    values = [int(part) for part in text.split(",") if part.strip().isdigit() and int(part) > 0]
    if len(values) != len(text.split(",")):
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of positive counts, e.g. 1,4,16")
    return values


MISMATCHES = ("swapped", "duplicated", "wrong", "lost")
HEAD = ["| clients | requests | answered | req/s | p50 ms | p95 ms | p99 ms | other replies | "
        "swapped / duplicated / wrong / lost | RSS after (MB) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: |"]


def rate(value: float) -> str:
    """Answers per second: one decimal, two below 1 (``0.20``, not ``0.2``)."""
    return f"{value:.1f}" if value >= 1 else f"{value:.2f}"


def millis(value: float | None) -> str:
    """Milliseconds: one decimal below a second, whole and grouped from a second up (``4,811``); "–" when none."""
    if value is None or value != value:  # NaN: no request answered
        return "–"
    return f"{value:.1f}" if value < 1000 else f"{value:,.0f}"


def other_replies(round_: dict) -> str:
    """The replies that are not answers, by kind (``12 http-503 (slowest 22.3 ms)``), or "none"."""
    parts = []
    for kind, n in round_["kinds"].items():
        if kind == "ok":
            continue
        slowest = round_.get("slowest_503_ms") if kind == "http-503" else None
        parts.append(f"{n} {kind}" + (f" (slowest {millis(slowest)} ms)" if slowest is not None else ""))
    return ", ".join(parts) or "none"


def round_row(round_: dict) -> str:
    """One round of a stored report as a table row."""
    cells = [str(round_["clients"]), str(round_["requests"]), str(round_["answered"]), rate(round_["throughput_rps"]),
             *(millis(round_[k]) for k in ("p50_ms", "p95_ms", "p99_ms")), other_replies(round_),
             " / ".join(str(round_["mismatches"][k]) for k in MISMATCHES), f"{round_['rss_mb_after']:,.1f}"]
    return "| " + " | ".join(cells) + " |"


def run_note(report: dict) -> str:
    """What a stored report records about its run: command, LM, code, load average, limits, server start."""
    code = report["code"]
    edits = f"with uncommitted edits (diff `{code['diff']}`)" if code["dirty"] else "clean checkout"
    threads = f"{report['threads']} thread" + ("s" if report["threads"] != 1 else "")
    delay = f"at {report['delay']:g} s a call" if report["delay"] else "with no delay"
    lm = f"scripted LM {delay}" if report["lm"] == "scripted" else f"{report['lm']} LM on {threads}"
    parts = [f"Run by `{report['command']}`: {lm}; code `{code['commit']}`, {edits}",
             "load average " + ", ".join(f"{v:.2f}" for v in report["load_average"]) + " (1, 5, 15 min) at the start",
             f"limits {report['max_concurrent']} + {report['max_queue']}"]
    if "start_s" in report:
        parts.append(f"`/ping` answered {report['start_s']:g} s after the server started"
                     + (f", RSS {report['rss_mb_start']:,.1f} MB then" if "rss_mb_start" in report else ""))
    if "port_freed" in report:
        parts.append("port freed afterwards" if report["port_freed"] else "port NOT freed afterwards")
    return "; ".join(parts) + "."


def table(report: dict) -> str:
    """A stored report's rounds as a Markdown table, and a line on the run that made them."""
    return "\n".join([*HEAD, *(round_row(r) for r in report["rounds"]), "", run_note(report)])


def write_tables(reports: Path, results: Path | None, command: str) -> None:
    """Print the table of every stored report in ``reports``; with ``results``, write each into its marked section."""
    paths = sorted(reports.glob("*.json"))
    if not paths:
        raise SystemExit(f"no stored report (*.json) in {reports}; write one with `{SCRIPT.command('--out FILE')}`")
    for path in paths:
        text = table(json.loads(path.read_text(encoding="utf-8")))
        print(f"{path}:")
        SCRIPT.section(results, f"{generated(command, f'`{path}` (no server started)')}\n\n{text}", path.stem)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lm", choices=("scripted", "embedded"), default="scripted")
    parser.add_argument("--clients", type=counts, default="1,4,16",
                        help="concurrent clients of each round, comma-separated")
    parser.add_argument("--requests", type=int, default=64, help="questions sent in each round")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds each scripted LM call waits")
    parser.add_argument("--threads", type=int, default=1, help="the embedded LM's CPU threads")
    parser.add_argument("--max-concurrent", type=int, default=4)
    parser.add_argument("--max-queue", type=int, default=16)
    parser.add_argument("--max-seconds", type=float, default=600.0, help="nothing is sent after this (from start)")
    parser.add_argument("--out", type=Path, default=None)
    commands = parser.add_subparsers(dest="command", metavar="{table}")
    show = commands.add_parser("table", help="the tables of the stored reports (no server started)")
    show.add_argument("--reports", type=Path, default=Path("bench/results/load"), help="folder of stored reports")
    show.add_argument("--results", type=Path, default=None, help="Markdown file to write the tables into")
    args = parser.parse_args()
    if args.command == "table":
        write_tables(args.reports, args.results, SCRIPT.command(sys.argv[1:]))
        return
    measure(args)


def measure(args: argparse.Namespace) -> None:
    """Serve, send the rounds, print the report (and write it to ``args.out``)."""
    for stop in (signal.SIGTERM, signal.SIGHUP):  # end as Ctrl-C does: through the blocks that stop the server
        signal.signal(stop, lambda signum, _frame: sys.exit(128 + signum))
    from disambig.evaluation.code_version import code_stamp

    deadline = time.monotonic() + args.max_seconds
    expected = scripted_answer() if args.lm == "scripted" else None
    limits = ["--max-concurrent", str(args.max_concurrent), "--max-queue", str(args.max_queue)]
    report = {"command": SCRIPT.command(sys.argv[1:]), "lm": args.lm, "delay": args.delay,
              "threads": args.threads, "max_concurrent": args.max_concurrent, "max_queue": args.max_queue,
              "load_average": os.getloadavg(), "code": code_stamp()}
    with tempfile.TemporaryDirectory(prefix="bench-load-") as folder:
        store, model_uri = logged_model(Path(folder))
        started = time.monotonic()
        with served(model_uri, store, server_env(args.lm, args.delay, args.threads), limits,
                    Path(folder) / "server.log") as (port, pid):
            report["start_s"] = round(time.monotonic() - started, 1)
            report["rss_mb_start"] = rss_mb(family(pid))  # disambig serve and its uvicorn, model loaded
            report["rounds"] = []
            for clients in args.clients:
                outcomes, wall = run_clients(port, f"c{clients}", clients, args.requests, deadline)
                report["rounds"].append({"clients": clients, **figures(outcomes, wall, expected),
                                         "rss_mb_after": rss_mb(family(pid))})
        report["port_freed"] = not port_open(port)
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
