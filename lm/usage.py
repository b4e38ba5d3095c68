"""What a run costs: wall time, LM calls and tokens, read from ``dspy.track_usage``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import dspy


@dataclass
class Trace:
    """What a question cost: LM calls and tokens (filled by ``measured``), retrieval calls, and extras.

    ``reused_prompt_tokens`` counts input tokens the in-process engine did not prefill because their KV state was
    reused from an earlier call (a shared prompt prefix); the prefill work was ``input_tokens`` minus that.
    """

    lm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    reused_prompt_tokens: int = 0
    retrieval_calls: int = 0
    seconds: float = 0.0
    notes: dict[str, object] = field(default_factory=dict)


@contextmanager
def measured() -> Iterator[Trace]:
    """Yield a ``Trace``; on exit it holds the wall time and the LM usage recorded inside the block.

    Usage recorded here also rolls up into any enclosing ``dspy.track_usage`` block.
    """
    trace = Trace()
    start = time.perf_counter()
    with dspy.track_usage() as usage:
        try:
            yield trace
        finally:
            trace.seconds = time.perf_counter() - start
            for entries in usage.usage_data.values():
                trace.lm_calls += len(entries)
                trace.input_tokens += sum(_count(e, "prompt_tokens", "input_tokens") for e in entries)
                trace.output_tokens += sum(_count(e, "completion_tokens", "output_tokens") for e in entries)
                trace.reused_prompt_tokens += sum(_count(e.get("prompt_tokens_details") or {}, "cached_tokens")
                                                  for e in entries)


def _count(entry: dict[str, object], *keys: str) -> int:
    for key in keys:
        value = entry.get(key)
        if isinstance(value, int):
            return value
    return 0
