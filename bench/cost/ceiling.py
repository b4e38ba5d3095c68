"""What llama.cpp itself does with a loaded model, and what the engine gets inside DSPy calls.

``ceiling`` repeats llama-bench's two tests through the library's C API on the engine's own context: ``pp``, one
batch of ``prompt_tokens`` random tokens decoded at once, and ``tg``, ``gen_tokens`` random tokens decoded one at a
time. No sampling, grammar or detokenising happens between tokens, only one ctypes call each (microseconds, against
tens of milliseconds a token), so these are the rates the engine could reach at best.

``in_dspy`` times real ``dspy.Predict`` calls as the programs make them (the project's adapter, the chat template,
the response grammar, the repetition guard): one with a long prompt and a one-word reply, one with a short prompt
and a long reply, each from a fresh context. Their wall-clock rates against the ceiling's are the engine's overhead.
"""

from __future__ import annotations

import random
import time
from typing import Any

import dspy

PROMPT_TOKENS = 512  # llama-bench's pp512
GEN_TOKENS = 128  # llama-bench's tg128
PASSAGE = ("The river rises in the northern hills, runs south through three market towns and a long reservoir, "
           "and reaches the sea at a port that grew rich on its trade in grain, wool and timber. ")


def ceiling(llama: Any, prompt_tokens: int = PROMPT_TOKENS, gen_tokens: int = GEN_TOKENS,
            seed: int = 0) -> tuple[float, float]:
    """``(prefill, decode)`` tokens/s of llama.cpp alone on ``llama``'s context, after one warm-up of each test."""
    import llama_cpp.llama_cpp as c

    rng = random.Random(seed)
    n_vocab = llama.n_vocab()
    ctx = llama.ctx
    memory = c.llama_get_memory(ctx)

    def decode(tokens: list[int]) -> None:
        array = (c.llama_token * len(tokens))(*tokens)
        if c.llama_decode(ctx, c.llama_batch_get_one(array, len(tokens))) != 0:
            raise RuntimeError("llama_decode failed")

    def prefill() -> float:
        c.llama_memory_clear(memory, True)
        tokens = [rng.randrange(n_vocab) for _ in range(prompt_tokens)]
        start = time.perf_counter()
        decode(tokens)
        c.llama_synchronize(ctx)
        return prompt_tokens / (time.perf_counter() - start)

    def generate() -> float:
        c.llama_memory_clear(memory, True)
        start = time.perf_counter()
        for _ in range(gen_tokens):
            decode([rng.randrange(n_vocab)])
        c.llama_synchronize(ctx)
        return gen_tokens / (time.perf_counter() - start)

    prefill(), generate()  # warm-up, as llama-bench does
    rates = prefill(), generate()
    c.llama_memory_clear(memory, True)
    llama.reset()  # the Python object's token history no longer matches the context
    return rates


class ReadPassage(dspy.Signature):
    """Read the passage and answer the question."""

    passage: str = dspy.InputField()
    question: str = dspy.InputField()
    answer: str = dspy.OutputField()


class Describe(dspy.Signature):
    """Write a long, detailed description of the topic, several sentences."""

    topic: str = dspy.InputField()
    description: str = dspy.OutputField()


def in_dspy(lm: Any) -> tuple[float, float]:
    """``(prefill, decode)`` tokens/s of whole ``dspy.Predict`` calls through ``lm`` (the project's engine), wall
    clock: new prompt tokens over the seconds of a call whose reply is a few tokens (their decode counted in, so
    the rate is a little low), and generated tokens over the seconds of a call with a short prompt (its prefill
    time, at the first call's rate, taken off)."""
    from disambig.lm.runtime import default_adapter
    from disambig.lm.usage import measured

    llama = lm.engine.llama
    with dspy.context(lm=lm, adapter=default_adapter(), cache=False):
        llama.reset()
        with measured() as read:
            start = time.perf_counter()
            dspy.Predict(ReadPassage)(passage=PASSAGE * 12, question="Does the river reach the sea? Yes or no.")
            read_seconds = time.perf_counter() - start
        prefill = (read.input_tokens - read.reused_prompt_tokens) / read_seconds
        llama.reset()
        with measured() as write:
            start = time.perf_counter()
            dspy.Predict(Describe)(topic="how a river shapes the towns along it")
            write_seconds = time.perf_counter() - start
        new_prompt = write.input_tokens - write.reused_prompt_tokens
        llama.reset()
    return prefill, write.output_tokens / max(write_seconds - new_prompt / prefill, 1e-9)
