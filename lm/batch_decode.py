"""Independent calls decoded together on the in-process model: one forward pass a step for several replies.

On a CPU a decode step is bound by reading the model's weights, whatever the number of tokens in the batch, so
several replies decoded side by side cost little more than one. ``BatchDecoder`` answers a group of completions
in a llama.cpp context of its own over the same weights (one sequence per reply, a unified KV cache): the prompt
prefix all of them share is prefilled once and copied to every sequence, each prompt's rest is prefilled after it,
then every step decodes one token of each unfinished reply in one batch. Each reply is chosen greedily under its
own grammar (``disambig.lm.lazy_grammar.GreedyPick``) and ends as llama-cpp-python's ``create_completion`` ends it:
at an end-of-generation token, a stop string, its token cap, or its repetition guard.

Unlike the library, a reply's stop strings and cap are checked at every token, also inside a character whose UTF-8
bytes are not all decoded yet (the library waits for the character's last byte), and the chat format's own stopping
criterion (its end token, which ends the reply anyway) is not called. The replies are greedy replies, but not always
the one-at-a-time replies token for token: llama.cpp sums a batch
in another order than a single token, so where two tokens are nearly tied the other may win
(``python -m bench.cost.engine_ab --change batch-calls`` measures how often answers change).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from disambig.lm.lazy_grammar import GrammarCounts, GreedyPick, logits_at

MAX_SEQUENCES = 8  # replies decoded side by side at most
BATCH_TOKENS = 512  # tokens a forward pass takes at most (prefill chunks)


@dataclass
class Job:
    """One completion to decode: its prompt tokens and how it ends; the decoder fills in the outcome.

    Attributes:
        prompt: the prompt's token ids (as the chat handler tokenized it).
        grammar: the reply's ``LlamaGrammar`` (None: free text).
        max_tokens: the reply's token cap.
        stop: strings that end the reply (cut before them).
        guard: a stopping criterion called as ``Llama.generate`` calls it (``disambig.lm.guard``), or None.
    """

    prompt: list[int]
    grammar: Any = None
    max_tokens: int = 256
    stop: list[str] = field(default_factory=list)
    guard: Any = None
    completion: list[int] = field(default_factory=list)
    text: str = ""
    finish_reason: str = "length"
    prefilled: int = 0  # prompt tokens this job's sequence evaluated (the shared prefix counts for the first only)
    done: bool = False
    error: BaseException | None = None

    def result(self, model: str) -> dict[str, Any]:
        """The outcome as a llama-cpp-python completion dict (what ``create_completion`` returns)."""
        if self.error is not None:
            raise self.error
        return {"id": f"cmpl-{uuid.uuid4()}", "object": "text_completion", "created": int(time.time()),
                "model": model,
                "choices": [{"text": self.text, "index": 0, "logprobs": None, "finish_reason": self.finish_reason}],
                "usage": {"prompt_tokens": len(self.prompt), "completion_tokens": len(self.completion),
                          "total_tokens": len(self.prompt) + len(self.completion)}}


class BatchDecoder:
    """Decodes groups of jobs side by side over ``llama``'s weights, in a context of its own made on first use.

    Args:
        llama: the loaded ``llama_cpp.Llama`` (weights, vocabulary, tokenizer).
        ctx: KV cells the context holds for all the sequences of a group together.
        threads: CPU threads.
    """

    def __init__(self, llama: Any, ctx: int, threads: int, repair_quotes: bool = True) -> None:
        self.llama = llama
        self.ctx = ctx
        self.threads = threads
        self.repair_quotes = repair_quotes  # as the engine's lazy grammar does (disambig.lm.json_quotes)
        self.counts = GrammarCounts()
        self.steps = 0  # decode steps run (each one batch of a token per unfinished reply)
        self._context: Any = None
        self._batch: Any = None

    def run(self, jobs: list[Job]) -> None:
        """Decode ``jobs`` (at most ``MAX_SEQUENCES``), in groups that fit the context; every job ends done."""
        for group in self._groups(jobs):
            try:
                self._run_group(group)
            except Exception as exc:  # noqa: BLE001 - handed to each job's caller, which raises it
                for job in group:
                    job.error = job.error or exc
            finally:
                for job in group:
                    job.done = True

    def _groups(self, jobs: list[Job]) -> list[list[Job]]:
        groups: list[list[Job]] = [[]]
        used = 0
        for job in jobs:
            need = len(job.prompt) + job.max_tokens
            if len(job.prompt) >= self.ctx:
                job.error = ValueError(f"Requested tokens ({len(job.prompt)}) exceed context window of {self.ctx}")
                job.done = True
                continue
            if groups[-1] and (used + need > self.ctx or len(groups[-1]) == MAX_SEQUENCES):
                groups.append([])
                used = 0
            groups[-1].append(job)
            used += need
        return [group for group in groups if group]

    def _run_group(self, jobs: list[Job]) -> None:
        import llama_cpp

        context = self._ensure_context()
        llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(context), True)
        shared = shared_prefix([job.prompt for job in jobs]) if len(jobs) > 1 else 0
        if shared:
            self._decode([(0, position, token, False) for position, token in enumerate(jobs[0].prompt[:shared])])
            for seq in range(1, len(jobs)):
                llama_cpp.llama_memory_seq_cp(llama_cpp.llama_get_memory(context), 0, seq, 0, shared)
        picks: list[GreedyPick | None] = []
        try:
            for job in jobs:
                picks.append(None if job.grammar is None
                             else GreedyPick(self.llama, job.grammar, self.counts, self.repair_quotes))
            pending: dict[int, int] = {}  # sequence -> the token it samples next is fed at this position
            for seq, job in enumerate(jobs):
                rest = job.prompt[shared:]
                job.prefilled = len(rest) + (shared if seq == 0 else 0)
                self._decode([(seq, shared + i, token, i == len(rest) - 1) for i, token in enumerate(rest)])
                if self._take(job, picks[seq], logits_at(context, self.llama.n_vocab(), -1)):
                    pending[seq] = len(job.prompt)
            while pending:
                order = sorted(pending)
                self._decode([(seq, pending[seq], jobs[seq].completion[-1], True) for seq in order])
                self.steps += 1
                for index, seq in enumerate(order):
                    if self._take(jobs[seq], picks[seq], logits_at(context, self.llama.n_vocab(), index)):
                        pending[seq] += 1
                    else:
                        del pending[seq]
        finally:
            for pick in picks:
                if pick is not None:
                    pick.close()

    def _take(self, job: Job, pick: GreedyPick | None, logits: Any) -> bool:
        """Choose the job's next token and apply the ends ``Llama.create_completion`` applies; True to go on."""
        import llama_cpp
        import numpy as np

        token = pick(logits) if pick is not None else int(np.argmax(logits))
        if job.guard is not None and job.guard(job.prompt + job.completion):
            return self._end(job, "stop")
        if llama_cpp.llama_vocab_is_eog(self.llama._model.vocab, token):
            return self._end(job, "stop")
        job.completion.append(token)
        text = self._text(job)
        stops = [s for s in job.stop if s in text]
        if stops:
            job.text, job.finish_reason = text[: text.index(stops[0])], "stop"
            return False
        if len(job.completion) >= job.max_tokens:
            return self._end(job, "length")
        return True

    def _end(self, job: Job, reason: str) -> bool:
        job.text, job.finish_reason = self._text(job), reason
        return False

    def _text(self, job: Job) -> str:
        return self.llama.detokenize(job.completion, prev_tokens=job.prompt).decode("utf-8", errors="ignore")

    def _decode(self, tokens: list[tuple[int, int, int, bool]]) -> None:
        """Evaluate ``(sequence, position, token, wants logits)`` entries, ``BATCH_TOKENS`` a forward pass."""
        import llama_cpp

        for start in range(0, len(tokens), BATCH_TOKENS):
            chunk = tokens[start:start + BATCH_TOKENS]
            batch = self._batch
            batch.n_tokens = len(chunk)
            for i, (seq, position, token, logits) in enumerate(chunk):
                batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, position, 1
                batch.seq_id[i][0], batch.logits[i] = seq, logits
            code = llama_cpp.llama_decode(self._context, batch)
            if code != 0:
                raise RuntimeError(f"llama_decode failed with code {code} on a batch of {len(chunk)} tokens")

    def _ensure_context(self) -> Any:
        if self._context is None:
            import llama_cpp

            params = library_settings(self.llama.context_params, llama_cpp.llama_context_default_params())
            params.n_ctx, params.n_batch, params.n_ubatch = self.ctx, BATCH_TOKENS, BATCH_TOKENS
            params.n_seq_max, params.kv_unified = MAX_SEQUENCES, True
            params.n_threads = params.n_threads_batch = self.threads
            params.no_perf = True
            context = llama_cpp.llama_init_from_model(self.llama._model.model, params)
            if context is None:
                raise RuntimeError(f"llama.cpp could not make a {self.ctx}-token context for batched calls")
            self._context = context
            self._batch = llama_cpp.llama_batch_init(BATCH_TOKENS, 0, MAX_SEQUENCES)
        return self._context

    def close(self) -> None:
        if self._context is not None:
            import llama_cpp

            llama_cpp.llama_batch_free(self._batch)
            llama_cpp.llama_free(self._context)
            self._context = self._batch = None


def library_settings(library: Any, params: Any) -> Any:
    """``params`` (a fresh ``llama_context_params``) given every setting of the library's context ``library``
    (attention kernel, KV types, RoPE...), so that a lone reply's arithmetic is the library's: llama.cpp's default
    turns flash attention on where llama-cpp-python turns it off. Pointers (callbacks, samplers, another context) stay
    the fresh ones': they belong to the context they were made for."""
    import ctypes

    fields = type(library)._fields_
    pointers = {name for name, kind in fields if kind is ctypes.c_void_p
                or issubclass(kind, (ctypes._Pointer, ctypes._CFuncPtr))}
    for name, _ in fields:
        if name not in pointers and name.removeprefix("n_") not in pointers:  # n_samplers goes with samplers
            setattr(params, name, getattr(library, name))
    return params


def shared_prefix(prompts: list[list[int]]) -> int:
    """Tokens every prompt starts with, leaving each at least one token of its own (whose logits start its reply)."""
    shortest = min(len(p) for p in prompts)
    length = 0
    while length < shortest - 1 and all(p[length] == prompts[0][length] for p in prompts):
        length += 1
    return length
