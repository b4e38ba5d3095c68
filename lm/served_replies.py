"""Served replies made as the in-process engine makes them: grammar-masked log-probabilities, the repetition guard,
and a capped JSON reply cut to its last whole sentence.

llama-cpp-python's server reports log-probabilities only for a model loaded with ``logits_all=True``: logits of
every prompt token, which more than doubled a served question's time on 2 cores (a ~1,500-token prompt: 13-16 s
against 23-37 s), and then over the raw vocabulary, not the tokens the response grammar allows. So ``disambig lm
serve`` loads the model without it, takes ``logprobs``/``top_logprobs`` out of what the server sees, and records
them for that request only with the engine's ``LogprobRecorder``. Likewise the engine's ``RepetitionGuard`` stops a
looping reply, and ``finish_reply`` cuts the reply text as ``disambig.lm.llama_engine.to_response`` does, so a
question asked over HTTP gets the answer it gets in-process.

Each request's wishes travel in ``CURRENT`` (a context variable: the server generates in a worker thread that runs
in a copy of the request's context) to the generation hook that ``hook_generations`` puts on the model.
"""

from __future__ import annotations

import json
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from disambig.lm.repetition import LoopRule
from disambig.lm.reply_cut import cut_loop, cut_to_sentence, is_json_reply


@dataclass
class ServedRequest:
    """One chat completion's wishes (set before generation) and what its generation recorded (set during it).

    Attributes:
        top_logprobs: alternatives per token the client asked for; None when it asked for no log-probabilities.
        schema: the response's JSON schema (the recorder masks logits with its grammar), None for free text.
        rule: the repetition guard in force, None when off.
        logprobs: OpenAI-format ``logprobs.content`` entries, once generated.
        looped: whether the guard stopped the reply.
    """

    top_logprobs: int | None = None
    schema: dict[str, Any] | None = None
    rule: LoopRule | None = None
    logprobs: list[dict[str, Any]] | None = field(default=None, repr=False)
    looped: bool = False


CURRENT: ContextVar[ServedRequest | None] = ContextVar("served_request", default=None)


def take_wishes(body: dict[str, Any], rule: LoopRule | None) -> tuple[dict[str, Any], ServedRequest]:
    """``body`` without the log-probability fields the server would refuse, and the request's ``ServedRequest``."""
    out = dict(body)
    wants = bool(out.pop("logprobs", False))
    top = out.pop("top_logprobs", None)
    fmt = out.get("response_format")
    schema = fmt.get("schema") if isinstance(fmt, dict) else None
    top_logprobs = (top if isinstance(top, int) and not isinstance(top, bool) and top > 0 else 1) if wants else None
    return out, ServedRequest(top_logprobs=top_logprobs, schema=schema if isinstance(schema, dict) else None,
                              rule=rule)


def hook_generations(llama: Any) -> None:
    """From now on each ``llama.create_completion`` of a request with a ``ServedRequest`` in ``CURRENT`` runs with
    that request's repetition guard and log-probability recorder, and leaves what they saw in it; every greedy
    call under a grammar samples as the engine does (``disambig.lm.lazy_grammar``)."""
    from llama_cpp import LogitsProcessorList, StoppingCriteriaList

    from disambig.lm.guard import RepetitionGuard
    from disambig.lm.lazy_grammar import LazyGrammar
    from disambig.lm.token_logprobs import LogprobRecorder

    generate = llama.create_completion
    lazy = LazyGrammar(llama)

    def original(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("stream"):  # a stream generates after this returns, outside any block
            return generate(*args, **kwargs)
        with lazy.active():
            return generate(*args, **kwargs)

    def create_completion(*args: Any, stopping_criteria: Any = None, logits_processor: Any = None,
                          **kwargs: Any) -> Any:
        request = CURRENT.get()
        if request is None or kwargs.get("stream"):
            return original(*args, stopping_criteria=stopping_criteria, logits_processor=logits_processor, **kwargs)
        guard = RepetitionGuard(llama, request.rule) if request.rule is not None else None
        recorder = LogprobRecorder(llama, request.top_logprobs, request.schema) \
            if request.top_logprobs is not None else None
        criteria = StoppingCriteriaList([*(stopping_criteria or []), *([guard] if guard else [])])
        processors = LogitsProcessorList([*(logits_processor or []), *([recorder] if recorder else [])])
        try:
            result = original(*args, stopping_criteria=criteria, logits_processor=processors or None, **kwargs)
            request.looped = guard is not None and guard.fired_
            if recorder is not None:  # read now, under the model's lock: the next request overwrites the tokens
                request.logprobs = [openai_token(t) for t in recorder.token_logprobs()]
            return result
        finally:
            if recorder is not None:
                recorder.close()

    llama.create_completion = create_completion


def openai_token(token: Any) -> dict[str, Any]:
    """A ``dspy.lm15.TokenLogprob`` as an entry of OpenAI's ``choices[i].logprobs.content``."""
    return {"token": token.token, "logprob": token.logprob, "bytes": list(token.token.encode("utf-8")),
            "top_logprobs": [{"token": t.token, "logprob": t.logprob, "bytes": list(t.token.encode("utf-8"))}
                             for t in token.top]}


def finish_reply(body: bytes, request: ServedRequest) -> bytes:
    """A chat completion's JSON body with the engine's cuts and the recorded log-probabilities (other bodies, such
    as errors, unchanged).

    A reply the guard stopped has its looping text cut and finishes as ``stop``; a JSON reply the token cap stopped
    is cut to its last whole sentence and closed, and still finishes as ``length``.
    """
    try:
        reply = json.loads(body)
        choice = reply["choices"][0]
        message = choice["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        return body
    text = message.get("content")
    if isinstance(text, str):
        if request.looped and request.rule is not None:
            message["content"] = cut_loop(text, request.rule) or text
            choice["finish_reason"] = "stop"
        elif choice.get("finish_reason") == "length" and is_json_reply(text):
            message["content"] = cut_to_sentence(text)
    if request.top_logprobs is not None:
        choice["logprobs"] = {"content": request.logprobs or [], "refusal": None}
    return json.dumps(reply).encode()
