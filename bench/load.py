"""The served program under load: `disambig serve` of a closed-book compile on loopback, 1, 4 and 16 concurrent
clients × a fixed number of questions each round; throughput, p50/p95/p99 latency, replies by kind, the server's
memory before and after, and every answer checked against its request (no lost, duplicated or swapped answers).

    python bench/load.py --lm scripted [--delay 0] [--clients 1,4,16] [--requests 64] [--out FILE]
    python bench/load.py --lm embedded --clients 1,4 --requests 8 --threads 1 --max-seconds 360

`--lm scripted` is the LM of tests/batch_fakes.py (DISAMBIG_LM_FACTORY): its answer is made from the question, so
each answer is checked exactly, and `--delay` makes each call wait like a remote LM; `--lm embedded` is the default
embedded model (Qwen2.5-Coder-0.5B), whose answers are checked by the question their row carries. Past capacity
(more clients than --max-concurrent + --max-queue, e.g. `--clients 32 --delay 0.5`) the overflow is counted as
http-503. The run is bounded: nothing is sent after --max-seconds, the server start has its own bound, and the
server (with its process group) is stopped when the run ends, however it ends. Prints one JSON document (also
written to --out).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from load_clients import figures, run_clients

ROOT = Path(__file__).resolve().parents[1]
FACTORY = f"{ROOT / 'tests' / 'batch_fakes.py'}:scripted_lm"
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
        env["DISAMBIG_LM"] = "local"
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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def pings(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def family(pid: int) -> set[int]:
    """``pid`` and every live process below it, read from ``/proc``."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split() if entry.isdigit() else []
        except OSError:
            continue
        if fields and fields[0] != "Z":
            parents[int(entry)] = int(fields[1])
    found, frontier = {pid}, {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


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
    """`disambig serve` on a free loopback port until the block ends: yields (port, server PID). The server is
    stopped as a user would (SIGTERM to `disambig serve`, which stops its group); whatever of it is left after 30 s
    is killed, group by group."""
    from disambig.cli.process_group import stop_group

    port = free_port()
    command = [str(Path(sys.executable).with_name("disambig")), "serve", model_uri, "--port", str(port),
               "--tracking-uri", store, *limits]
    with open(log, "w", encoding="utf-8") as out:
        server = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    groups = {server.pid}
    try:
        deadline = time.monotonic() + START_SECONDS
        while not pings(port):
            if server.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(encoding="utf-8", errors="replace")[-2000:]
                raise RuntimeError(f"the server did not come up (exit {server.poll()}); its log ends:\n{tail}")
            time.sleep(0.5)
        groups |= {os.getpgid(pid) for pid in family(server.pid) if _exists(pid)}
        yield port, server.pid
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        for group in groups:
            stop_group(group, grace=5)


def _exists(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def counts(text: str) -> list[int]:
    """``1,4,16`` as [1, 4, 16]; anything else is refused before a server starts."""
    values = [int(part) for part in text.split(",") if part.strip().isdigit() and int(part) > 0]
    if len(values) != len(text.split(",")):
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of positive counts, e.g. 1,4,16")
    return values


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
    args = parser.parse_args()
    for stop in (signal.SIGTERM, signal.SIGHUP):  # end as Ctrl-C does: through the blocks that stop the server
        signal.signal(stop, lambda signum, _frame: sys.exit(128 + signum))
    from disambig.evaluation.code_version import code_stamp

    deadline = time.monotonic() + args.max_seconds
    expected = scripted_answer() if args.lm == "scripted" else None
    limits = ["--max-concurrent", str(args.max_concurrent), "--max-queue", str(args.max_queue)]
    report = {"command": " ".join(["python", "bench/load.py", *sys.argv[1:]]), "lm": args.lm, "delay": args.delay,
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
