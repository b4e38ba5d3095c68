"""Prompt-lookup decoding for the in-process model: reply tokens that copy the prompt are drafted from it.

Extracted answers, cited sentences and the JSON keys the demos already show are copies of prompt text. After each
sampled token, llama-cpp-python's ``LlamaPromptLookupDecoding`` finds the last ``ngram`` tokens earlier in the
context and drafts the ``draft_tokens`` that followed them there; the sampled token and its drafts are decoded in
one batch, and ``Llama.generate`` keeps each draft the sampler (greedy, under the response grammar) would have
chosen anyway, up to the first it would not. A batch of a few tokens costs about what one token does on a CPU, so a
wrong draft costs little and a right one saves a decode step. The reply is the one decoding without drafts gives up
to rounding: llama.cpp computes a batch in another order than a single token, so where two tokens are nearly tied
greedy decoding may pick the other (``bench/cost/prompt_lookup.py`` measures how often answers change).

llama-cpp-python turns this on only together with ``logits_all``, which computes and copies the logits of every
prompt token (about twice the prefill time measured for ``lm serve``). Here the library's ``eval`` is kept for
prompts, and a batch no longer than a token and its drafts is decoded with logits at every position instead, which
is all the sampler reads. Calls that record log-probabilities (``disambig.lm.token_logprobs`` reads the last token
of the context as the one sampled) are decoded without drafts.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

NGRAM = 2  # tokens matched against the context (the library falls back to 1 token when 2 find nothing)
MAX_DRAFT_TOKENS = 16  # a draft batch must fit the context's batch (512 tokens); more never pays on a CPU


@dataclass
class LookupCounts:
    """Of the calls decoded with drafts: the calls, their reply tokens, their decode steps after the prompt (one
    batch each: a sampled token and its drafts) and the draft tokens proposed."""

    calls: int = 0
    generated: int = 0
    steps: int = 0
    drafted: int = 0

    @property
    def kept(self) -> int:
        """Reply tokens that came from kept drafts: those no step of their own decoded (a reply cut by the token cap
        counts one too many)."""
        return max(self.generated - self.steps, 0)


class PromptLookup:
    """Drafts for ``llama`` from its own context, ``draft_tokens`` at a time, inside ``active()`` only."""

    def __init__(self, llama: Any, draft_tokens: int) -> None:
        from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

        if not 1 <= draft_tokens <= MAX_DRAFT_TOKENS:
            raise ValueError(f"draft_tokens must be within 1-{MAX_DRAFT_TOKENS}, not {draft_tokens}")
        self.llama = llama
        self.draft_tokens = draft_tokens
        self.counts = LookupCounts()
        self.batch_tokens = 0  # tokens of the current call's draft batches (llama.cpp counts them as prefill)
        self._prompt_seen = False
        lookup = LlamaPromptLookupDecoding(max_ngram_size=NGRAM, num_pred_tokens=draft_tokens)

        def drafter(input_ids: Any) -> Any:
            drafts = lookup(input_ids)
            self.counts.steps += 1
            self.counts.drafted += len(drafts)
            return drafts

        self._drafter = drafter
        self._library_eval = llama.eval
        llama.eval = self._eval

    @contextmanager
    def active(self) -> Iterator[None]:
        """Draft during this block, one call (``Llama.generate`` drafts whenever ``draft_model`` is set)."""
        self.batch_tokens, self._prompt_seen = 0, False
        self.llama.draft_model = self._drafter
        try:
            yield
        finally:
            self.llama.draft_model = None

    def finished(self, generated: int) -> None:
        """Count a call decoded inside ``active()`` that generated ``generated`` reply tokens."""
        self.counts.calls += 1
        self.counts.generated += generated

    def _eval(self, tokens: Sequence[int]) -> None:
        llama = self.llama
        prompt, self._prompt_seen = not self._prompt_seen, True  # a call's first eval is its prompt (or its suffix)
        if llama.draft_model is None or len(tokens) > self.draft_tokens + 1 or len(tokens) < 2:
            self._library_eval(tokens)
            return
        if not prompt:
            self.batch_tokens += len(tokens)
        llama._ctx.kv_cache_seq_rm(-1, llama.n_tokens, -1)
        start = llama.n_tokens
        llama._batch.set_batch(batch=list(tokens), n_past=start, logits_all=True)
        llama._ctx.decode(llama._batch)
        llama.input_ids[start:start + len(tokens)] = tokens
        llama.n_tokens += len(tokens)
        llama._requires_eval = False
