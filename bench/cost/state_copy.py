"""What the prompt cache pays to keep a call's state: ``save_kv_state`` copying llama.cpp's KV state out of the
context, and ``load_kv_state`` handing it back, against what the engine did before: ``bytes(buffer[:n])`` to save,
which goes through a Python list of one int a byte, and a copy of the bytes into a new buffer to restore.

    python -m bench.cost.state_copy --model qwen2.5-1.5b --tokens 250 500 1000 2000 --threads 1
    python -m bench.cost.state_copy --report [--results docs/benchmarks.md]

The engine saves a state after every call (``disambig.lm.prompt_cache``), so DIVA pays a save five or six times a
question, each for a state of every token in the context. One row per prompt length: the state's size and the median
of 3 timings of each copy, no LM call beyond the prompt's prefill.
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import time
from functools import partial
from pathlib import Path
from typing import Any

from bench.harness import Rows, Script, cpu_name
from bench.harness.docs import generated
from bench.harness.machine import load1

SCRIPT = Script.of(__file__)
OUT = Path("bench/results/state-copy.jsonl")
TEXT = "The river rises in the northern hills and reaches the sea at a port that grew rich on grain and wool. "


def old_save(llama: Any) -> bytes:
    """The engine's copy before: the same buffer, turned into bytes through a list of ints."""
    import llama_cpp

    size = llama_cpp.llama_state_get_size(llama.ctx)
    buffer = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_get_data(llama.ctx, buffer, size)
    return bytes(buffer[:written])


def old_load(llama: Any, state: Any) -> None:
    """The engine's restore before: the state's bytes copied into a new buffer first."""
    import llama_cpp

    buffer = (ctypes.c_uint8 * state.llama_state_size).from_buffer_copy(state.llama_state)
    if llama_cpp.llama_state_set_data(llama.ctx, buffer, state.llama_state_size) != state.llama_state_size:
        raise RuntimeError("llama.cpp did not accept the saved state")


def old_save_state(llama: Any) -> Any:
    """``save_kv_state`` as it was before: the state's bytes through ``old_save`` (for ``engine_ab``'s off engine)."""
    import llama_cpp
    import numpy as np

    data = old_save(llama)
    return llama_cpp.llama.LlamaState(input_ids=llama.input_ids.copy(), scores=np.empty((0, 0), dtype=np.single),
                                      n_tokens=llama.n_tokens, llama_state=data, llama_state_size=len(data),
                                      seed=llama._seed)


def timed(call: Any, repeats: int = 3) -> float:
    """Median seconds of ``repeats`` calls."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(model: str, lengths: list[int], threads: int, rows: Rows) -> None:
    from disambig.lm import make_lm
    from disambig.lm.prompt_cache import load_kv_state, save_kv_state

    llama = make_lm(f"local:{model}", threads=threads).engine.llama
    for length in lengths:
        tokens = (llama.tokenize(TEXT.encode()) * (length // 20 + 1))[:length]
        llama.reset()
        llama.eval(tokens)
        state = save_kv_state(llama)
        if old_save(llama) != state.llama_state:
            raise SystemExit("the two copies differ")
        row = {"model": model, "tokens": length, "threads": threads, "when": time.time(), "cpu": cpu_name(),
               "load": load1(), "state_mb": round(state.llama_state_size / 2**20, 1),
               "save_before_s": timed(lambda: old_save(llama)), "save_s": timed(lambda: save_kv_state(llama)),
               "load_before_s": timed(partial(old_load, llama, state)),
               "load_s": timed(partial(load_kv_state, llama, state))}
        print(row, flush=True)
        rows.add(row)


def report(path: Path) -> str:
    """One line a row: the state's size and the seconds of each copy."""
    head = generated(SCRIPT.command(["--report"]), f"the rows of `{path}` (no LM call)")
    lines = [head, "", "| model | prompt tokens | state MiB | save before (s) | save now (s) | restore before (s) "
             "| restore now (s) | CPU | load avg | code |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- |"]
    for row in Rows(path, key=("model", "tokens", "when")):
        restore_before = f"{row['load_before_s']:.3f}" if "load_before_s" in row else "–"
        lines.append(f"| {row['model']} | {row['tokens']} | {row['state_mb']} | {row['save_before_s']:.3f} "
                     f"| {row['save_s']:.3f} | {restore_before} | {row['load_s']:.3f} | {row['cpu']} | {row['load']} "
                     f"| `{row['code']['commit']}` |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-1.5b")
    parser.add_argument("--tokens", type=int, nargs="+", default=[250, 500, 1000, 2000])
    parser.add_argument("--threads", type=int, default=1)
    SCRIPT.add_report_options(parser)
    args = parser.parse_args()
    if args.report:
        SCRIPT.section(args.results, report(OUT))
        return
    measure(args.model, args.tokens, args.threads, Rows(OUT, key=("model", "tokens", "when")))


if __name__ == "__main__":
    main()
