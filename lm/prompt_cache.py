"""Resume a call from the KV state of whichever earlier call shares the longest prompt prefix with it.

llama.cpp by itself reuses only the prefix a prompt shares with the *previous* call. A program's calls interleave
signatures (typing, verification, extraction...), each with its own instruction and demos, so most prefixes
were last seen several calls ago. llama-cpp-python's ``LlamaRAMCache`` keeps the state after every call and
restores the one with the longest shared prefix, but its ``save_state`` also copies a ``(n_batch, vocab)``
logits array (100 MB for SmolLM2, 311 MB for Qwen2.5, 0.3-1.7 s per copy on 2 cores) that is not counted against
the cache's capacity. With ``logits_all=False`` (how the engine loads models) llama-cpp-python never reads
those logits: sampling reads the context's own, and a restored state always re-evaluates at least one token.
So the states kept here hold the KV cache and token ids only.
"""

from __future__ import annotations

import ctypes
from functools import partial
from typing import Any


def enable_prompt_cache(llama: Any, capacity_mb: int) -> None:
    """Give ``llama`` a RAM cache of KV states (``capacity_mb`` MiB, least recently used dropped first)."""
    from llama_cpp import LlamaRAMCache

    llama.set_cache(LlamaRAMCache(capacity_bytes=capacity_mb << 20))
    if llama._logits_all:  # the logits would be needed: keep llama-cpp-python's own, complete states
        return
    llama.save_state = partial(save_kv_state, llama)
    llama.load_state = partial(load_kv_state, llama)


def save_kv_state(llama: Any) -> Any:
    """``Llama.save_state`` without the logits array: the context state (KV cache) and the token ids."""
    import llama_cpp
    import numpy as np

    size = llama_cpp.llama_state_get_size(llama.ctx)
    buffer = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_get_data(llama.ctx, buffer, size)
    if written == 0 or written > size:  # llama.cpp returns 0 when it fails to write the state
        raise RuntimeError(f"llama.cpp wrote {written} bytes of state, announcing {size}")
    # string_at copies the bytes in one go; bytes(buffer[:written]) went through a list of one int a byte, ~2 s a
    # call for the 1.5B's 27 MiB state of 1,000 tokens (docs/benchmarks.md, "Saving a prompt's state").
    return llama_cpp.llama.LlamaState(input_ids=llama.input_ids.copy(), scores=np.empty((0, 0), dtype=np.single),
                                      n_tokens=llama.n_tokens, llama_state=ctypes.string_at(buffer, written),
                                      llama_state_size=written, seed=llama._seed)


def load_kv_state(llama: Any, state: Any) -> None:
    """``Llama.load_state`` for a state from ``save_kv_state``; the next call re-evaluates at least one token."""
    import llama_cpp

    llama.input_ids = state.input_ids.copy()
    llama.n_tokens = state.n_tokens
    llama._requires_eval = True
    llama._seed = state.seed
    # A pointer into the bytes themselves: llama.cpp only reads them, so no copy is made first.
    source = ctypes.cast(ctypes.c_char_p(state.llama_state), ctypes.POINTER(ctypes.c_uint8))
    if llama_cpp.llama_state_set_data(llama.ctx, source, state.llama_state_size) != state.llama_state_size:
        raise RuntimeError("llama.cpp did not accept the saved state")
