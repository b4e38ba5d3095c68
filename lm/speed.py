"""Say so, once, when the embedded LM decodes far slower than its size allows, and how to set its threads.

Decoding on a CPU is bound by memory bandwidth: every token reads the whole model once, so an idle CPU decodes about
``DECODE_BYTES_PER_S / model bytes`` tokens a second (docs/benchmarks.md, idle, this project's 2-core machine:
SmolLM2-135M, 98 MB, 82 tokens/s with one thread; Qwen2.5-0.5B, 491 MB, 23-28). A rate below ``SLOW_FRACTION`` of
that means the threads are fighting other processes for the cores, which looks like a hang: the warning names the
measured rate, the expected one, the load, and the setting that fixes it. The rate is llama.cpp's own count of the
call's decode tokens and time, read after each call.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dspy.utils.callback import BaseCallback

logger = logging.getLogger(__name__)

DECODE_BYTES_PER_S = 8e9
SLOW_FRACTION = 0.2
MIN_DECODE_TOKENS = 8  # fewer tokens say little about the rate (the first token also pays for the prompt)


def expected_decode_per_s(model_bytes: int) -> float:
    """Tokens per second an idle CPU decodes a model file of ``model_bytes`` at (``DECODE_BYTES_PER_S / bytes``)."""
    return DECODE_BYTES_PER_S / max(model_bytes, 1)


def slow_decode_warning(tokens: int, ms: float, model_bytes: int, threads: int, load: float, cores: int) -> str:
    """The warning for ``tokens`` decoded in ``ms`` milliseconds when that is far below the expected rate; else "".

    >>> slow_decode_warning(64, 1000.0, 491_000_000, 2, 0.2, 2)  # 64 tokens/s for an expected ~16: fine
    ''
    >>> slow_decode_warning(4, 4000.0, 491_000_000, 2, 3.0, 2)  # too few tokens to judge
    ''
    """
    if tokens < MIN_DECODE_TOKENS or ms <= 0:
        return ""
    rate, expected = 1000 * tokens / ms, expected_decode_per_s(model_bytes)
    if rate >= SLOW_FRACTION * expected:
        return ""
    advice = ("run it when the machine is less busy" if threads == 1 else
              f"set fewer threads with --threads {max(1, threads // 2)} or DISAMBIG_THREADS={max(1, threads // 2)}")
    return (f"the embedded LM decodes {rate:.1f} tokens/s, far below the ~{expected:.0f} a {model_bytes / 1e6:.0f} MB "
            f"model reaches on an idle CPU: other processes are likely using the cores ({threads} threads, load "
            f"average {load:.1f} on {cores} usable cores); {advice}")


class DecodeSpeedWatch(BaseCallback):
    """A ``dspy.LM`` callback that reads the decode count of each finished call and logs ``slow_decode_warning``
    the first time there is one.

    Args:
        decode_counts: returns the last call's (decode tokens, decode milliseconds).
        model_bytes: size of the model file.
        threads: the threads the model runs with.
    """

    def __init__(self, decode_counts: Callable[[], tuple[int, float]], model_bytes: int, threads: int) -> None:
        self.decode_counts = decode_counts
        self.model_bytes = model_bytes
        self.threads = threads
        self.warned_ = False

    def on_lm_end(self, call_id: str, outputs: Any, exception: BaseException | None = None) -> None:
        if self.warned_ or exception is not None:
            return
        from disambig.lm.threads import load_average, usable_cores

        message = slow_decode_warning(*self.decode_counts(), self.model_bytes, self.threads, load_average(),
                                      usable_cores())
        if message:
            self.warned_ = True
            logger.warning(message)


def watch_decode_speed(lm: Any) -> Any:
    """Add a ``DecodeSpeedWatch`` to ``lm`` when it runs the in-process engine (other LMs are returned unchanged)."""
    from disambig.lm.llama_engine import LlamaEngine, read_counters

    engine = getattr(lm, "engine", None)
    if not isinstance(engine, LlamaEngine):
        return lm

    def decode_counts() -> tuple[int, float]:
        counters = read_counters(engine.llama)
        return counters.decode_tokens, counters.decode_ms

    lm.callbacks.append(DecodeSpeedWatch(decode_counts, Path(engine.model_path).stat().st_size, engine.threads))
    return lm
