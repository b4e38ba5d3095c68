"""Gather the in-process model's concurrent calls into batches (``disambig.lm.batch_decode``).

``disambig.lm.parallel.ordered_map`` runs a program's independent calls on several threads and marks them with
``IN_GROUP``. On the in-process engine each such call formats its own chat prompt (llama-cpp-python's chat handler,
in the caller's thread) down to ``Llama.create_completion``, which ``CallBatcher.hook`` diverts: the call becomes a
``Job`` and waits. The first waiting caller leads: once no call has arrived for ``WINDOW_S``, or ``MAX_SEQUENCES``
wait, it decodes them together under the engine's lock and hands each caller its completion. Calls outside a group
go through the library as before. Calls of a group that cannot be batched (log-probability calls, such as DIVA's
verifications; sampling at a temperature) go through the library one at a time, in the order their threads reach
the model's lock.
"""

from __future__ import annotations

import threading
import time
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from disambig.lm.batch_decode import MAX_SEQUENCES, BatchDecoder, Job

WINDOW_S = 0.05  # a group's calls arrive within milliseconds of each other (their threads start together)


@dataclass
class GroupCall:
    """What a grouped call brings besides the chat handler's arguments (its repetition guard, or None), and the
    ``Job`` it became."""

    guard: Any = None
    job: Job | None = None


IN_GROUP: ContextVar[bool] = ContextVar("disambig_in_call_group", default=False)
CALL: ContextVar[GroupCall | None] = ContextVar("disambig_group_call", default=None)


class CallBatcher:
    """Collects grouped calls of one model and decodes them together.

    Args:
        decoder: the model's ``BatchDecoder``.
        lock: the engine's lock (held while a batch decodes, so no other call uses the model meanwhile).
        window_s: how long a batch waits for more calls after the last one arrived.
    """

    def __init__(self, decoder: BatchDecoder, lock: threading.Lock, window_s: float = WINDOW_S) -> None:
        self.decoder = decoder
        self.lock = lock
        self.window_s = window_s
        self.batches: list[int] = []  # calls per batch decoded, in order
        self._cv = threading.Condition()
        self._pending: list[Job] = []
        self._leading = False
        self._last_arrival = 0.0

    def hook(self, llama: Any) -> None:
        """Divert ``llama.create_completion`` for calls made with ``CALL`` set; others go through unchanged."""
        library = llama.create_completion

        def create_completion(*args: Any, **kwargs: Any) -> Any:
            call = CALL.get()
            if call is None or args or kwargs.get("stream") or kwargs.get("logprobs") is not None:
                return library(*args, **kwargs)
            stop, prompt, cap = kwargs.get("stop") or [], list(kwargs["prompt"]), kwargs.get("max_tokens")
            job = Job(prompt=prompt, grammar=kwargs.get("grammar"),
                      max_tokens=_cap(cap, self.decoder.ctx, len(prompt)),
                      stop=[stop] if isinstance(stop, str) else list(stop), guard=call.guard)
            call.job = job
            return self.submit(job).result(kwargs.get("model") or llama.model_path)

        llama.create_completion = create_completion

    def submit(self, job: Job) -> Job:
        """Queue ``job`` and return it once decoded, leading a batch when no one else is."""
        with self._cv:
            self._pending.append(job)
            self._last_arrival = time.monotonic()
            self._cv.notify_all()
        while True:
            with self._cv:
                while not job.done and self._leading:
                    self._cv.wait()
                if job.done:
                    return job
                self._leading = True
            try:
                self._lead()
            finally:
                with self._cv:
                    self._leading = False
                    self._cv.notify_all()

    def _lead(self) -> None:
        with self._cv:
            while len(self._pending) < MAX_SEQUENCES:
                quiet = time.monotonic() - self._last_arrival
                if quiet >= self.window_s:
                    break
                self._cv.wait(self.window_s - quiet)
            jobs, self._pending = self._pending[:MAX_SEQUENCES], self._pending[MAX_SEQUENCES:]
        if not jobs:
            return
        try:
            with self.lock:
                self.decoder.run(jobs)
        finally:
            for job in jobs:  # whatever stopped the decoder, no caller waits for ever
                if not job.done:
                    job.error = job.error or RuntimeError("the batch stopped before this call was decoded")
                    job.done = True
        self.batches.append(len(jobs))


def _cap(max_tokens: int | None, ctx: int, prompt_tokens: int) -> int:
    """The reply's token cap as ``Llama.create_completion`` sets it: none (or not positive) runs to the context's end,
    and a cap is lowered so prompt and reply fit the context."""
    room = ctx - prompt_tokens
    return room if not max_tokens or max_tokens <= 0 else min(max_tokens, room)
