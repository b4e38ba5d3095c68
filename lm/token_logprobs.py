"""Token log-probabilities from the in-process model, as the constrained decoder sees them.

llama-cpp-python reports log-probabilities only for a model loaded with ``logits_all=True`` (logits of every prompt
token: a slower prefill and ``n_ctx x n_vocab`` floats), and then over the raw vocabulary. Under a JSON schema the
decoder chooses among the few tokens the grammar allows ("Y" or "N" where a verdict starts), which the raw
top-k rarely contains for a small model. ``LogprobRecorder`` is a logits processor instead: at each generated token
it masks the logits with its own copy of the response grammar (advanced by the tokens actually chosen) and keeps
the top-k log-probabilities among the allowed tokens. Only requests that ask for log-probabilities pay for it.
"""

from __future__ import annotations

import ctypes
import json
from typing import Any

import numpy as np


class LogprobRecorder:
    """Records, per generated token, the top-``top`` allowed tokens and their log-probabilities.

    Args:
        llama: the loaded ``llama_cpp.Llama``.
        top: alternatives kept per token (at least the chosen one is always reported).
        schema: the response's JSON schema; its grammar masks the logits (None: the raw distribution).
    """

    keeps_logits = True  # it reads the logits and returns them as given (lm/lazy_grammar.py may call it itself)

    def __init__(self, llama: Any, top: int, schema: dict[str, Any] | None = None) -> None:
        self.llama = llama
        self.top = max(int(top), 1)
        self.steps: list[tuple[int, np.ndarray]] = []  # (position of the generated token, log-probabilities)
        self._grammar = _grammar_sampler(llama, schema) if schema else None

    def processors(self) -> Any:
        from llama_cpp import LogitsProcessorList

        return LogitsProcessorList([self])

    def __call__(self, input_ids: np.ndarray, logits: np.ndarray) -> np.ndarray:
        if self.steps and self._grammar is not None:
            import llama_cpp

            llama_cpp.llama_sampler_accept(self._grammar, int(input_ids[-1]))  # the token chosen last step
        scores = np.array(logits, dtype=np.float64)
        if self._grammar is not None:
            scores = self._mask(scores)
        finite = np.isfinite(scores)
        top = scores.max() if finite.any() else 0.0
        logprobs = scores - (top + np.log(np.exp(np.where(finite, scores - top, -np.inf)).sum()))
        self.steps.append((len(input_ids), logprobs))
        return logits

    def _mask(self, scores: np.ndarray) -> np.ndarray:
        import llama_cpp

        n = len(scores)
        data = (llama_cpp.llama_token_data * n)()
        view = np.ctypeslib.as_array(ctypes.cast(data, ctypes.POINTER(ctypes.c_uint8)), shape=(n * 12,))
        rows = view.view(np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)]))
        rows["id"], rows["logit"], rows["p"] = np.arange(n), scores, 0.0
        array = llama_cpp.llama_token_data_array(data=data, size=n, selected=-1, sorted=False)
        llama_cpp.llama_sampler_apply(self._grammar, ctypes.byref(array))
        masked = np.full(n, -np.inf)
        kept = rows[: array.size]
        masked[kept["id"]] = np.where(np.isfinite(kept["logit"]), scores[kept["id"]], -np.inf)
        return masked

    def token_logprobs(self) -> tuple[Any, ...]:
        """One ``dspy.lm15.TokenLogprob`` per generated token whose choice the model recorded (the final token,
        never fed back to the model, is left out)."""
        from dspy.lm15 import TokenLogprob, TopLogprob

        evaluated = self.llama.input_ids[: self.llama.n_tokens]
        out = []
        for position, logprobs in self.steps:
            if position >= len(evaluated):
                break
            chosen = int(evaluated[position])
            order = [int(i) for i in np.argsort(-logprobs)[: self.top] if np.isfinite(logprobs[i])]
            top = tuple(TopLogprob(self._text(i), float(logprobs[i]), token_id=i) for i in order)
            out.append(TokenLogprob(self._text(chosen), float(logprobs[chosen]), token_id=chosen, top=top))
        return tuple(out)

    def close(self) -> None:
        if self._grammar is not None:
            import llama_cpp

            llama_cpp.llama_sampler_free(self._grammar)
            self._grammar = None

    def _text(self, token: int) -> str:
        return self.llama.detokenize([token]).decode("utf-8", errors="replace") or "\ufffd"


def _grammar_sampler(llama: Any, schema: dict[str, Any]) -> Any:
    import llama_cpp
    from llama_cpp.llama_grammar import LlamaGrammar

    grammar = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
    return llama_cpp.llama_sampler_init_grammar(llama._model.vocab, grammar._grammar.encode("utf-8"),
                                                grammar._root.encode("utf-8"))


def with_logprobs(response: Any, recorder: LogprobRecorder) -> Any:
    """``response`` carrying the recorder's token log-probabilities."""
    from dataclasses import replace

    try:
        return replace(response, logprobs=recorder.token_logprobs() or None)
    finally:
        recorder.close()
