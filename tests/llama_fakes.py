"""A scripted stand-in for ``llama_cpp.Llama`` that generates a fixed token stream the way llama-cpp-python does.

Each "token" is a piece of text. ``create_chat_completion`` hands over to ``create_completion``, which yields them one
by one; after sampling each it calls the
``stopping_criteria`` with the ids evaluated so far (the prompt, then the tokens generated before this one) and
stops, dropping the token just sampled, when one returns True. It stops at ``max_tokens`` with finish reason
``length`` and checks the criteria once more at the end on the evaluated ids, as ``Llama._create_completion`` does.
"""

from __future__ import annotations

from typing import Any

import dspy

from disambig.lm.llama_engine import LlamaEngine

PROMPT = [900, 901, 902]  # the prompt's token ids; generated tokens are 0, 1, 2, ...


class ScriptedLlama:
    """Generates ``pieces`` (one text piece per token); records each call's keyword arguments (``guarded``: whether
    a stopping criterion was given)."""

    def __init__(self, pieces: list[str]) -> None:
        self.pieces = pieces
        self.calls: list[dict[str, Any]] = []

    def detokenize(self, tokens: list[int], prev_tokens: list[int] | None = None) -> bytes:
        return "".join(self.pieces[t] for t in tokens).encode()

    def create_chat_completion(self, messages: list[dict[str, str]], **kwargs: Any) -> dict[str, Any]:
        """As llama-cpp-python's chat handler: no criteria of its own, ``create_completion`` does the work."""
        completion = self.create_completion(prompt="<chat>", stopping_criteria=None, **kwargs)
        choice = completion["choices"][0]
        return {"choices": [{"message": {"content": choice["text"]}, "finish_reason": choice["finish_reason"]}],
                "usage": completion["usage"]}

    def create_completion(self, prompt: str, max_tokens: int = 256, stopping_criteria: Any = None,
                          **kwargs: Any) -> dict[str, Any]:
        self.calls.append({"max_tokens": max_tokens, "guarded": bool(stopping_criteria), **kwargs})
        generated: list[int] = []
        finish = None
        for token in range(len(self.pieces)):
            if stopping_criteria is not None and stopping_criteria(PROMPT + generated, None):
                break
            generated.append(token)
            if len(generated) >= max_tokens:
                finish = "length"
                break
        evaluated = generated[:-1] if finish == "length" else generated  # the last token sampled is never evaluated
        if stopping_criteria is not None and stopping_criteria(PROMPT + evaluated, None):
            finish = "stop"
        text = self.detokenize(generated).decode()
        return {"choices": [{"text": text, "finish_reason": finish or "stop"}],
                "usage": {"prompt_tokens": len(PROMPT), "completion_tokens": len(generated)}}


def scripted_lm(pieces: list[str], repetition_guard: str = "6x3", max_tokens: int = 256,
                repeat_penalty: float = 1.0) -> tuple[dspy.LM, ScriptedLlama]:
    """A ``dspy.LM`` over a ``LlamaEngine`` whose model is a ``ScriptedLlama`` of ``pieces``."""
    engine = LlamaEngine("/models/tiny.gguf", repetition_guard=repetition_guard, repeat_penalty=repeat_penalty)
    engine._llama = ScriptedLlama(pieces)
    return dspy.LM("local/tiny", engine=engine, cache=False, num_retries=0, max_tokens=max_tokens,
                   temperature=0.0), engine._llama


def json_pieces(field: str, text: str) -> list[str]:
    """``{"field": "text"}`` as tokens: the opening, each word with its leading space, and the closing."""
    words = text.split(" ")
    return [f'{{"{field}": "', words[0], *[f" {w}" for w in words[1:]], '"}']
