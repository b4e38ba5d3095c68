"""Stop a generation that starts looping: a stopping criterion for llama-cpp-python.

After each sampled token ``Llama.create_completion`` calls its ``stopping_criteria`` with the token ids evaluated so
far (the prompt, then the generated tokens) and stops once one returns True. ``create_chat_completion`` takes no
criteria of its own: its chat handler passes the chat format's to ``create_completion``, to which ``stopping_on``
adds the guard for one call. ``RepetitionGuard`` detokenizes only the
generated part and stops as soon as the reply's last text loops under its ``LoopRule``
(``disambig.lm.reply_cut.find_loop``); the engine then cuts the reply with ``cut_loop``. Under greedy decoding the
result is the unguarded reply's prefix, cut as ``bench/repetition.py`` cuts stored answers.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from disambig.lm.repetition import LoopRule
from disambig.lm.reply_cut import find_loop


class RepetitionGuard:
    """A llama-cpp-python stopping criterion for one call; once it has fired it keeps answering True.

    Args:
        llama: the ``llama_cpp.Llama`` generating (its ``detokenize`` turns token ids into bytes).
        rule: when the reply's last text loops.

    ``fired_`` says whether it stopped the generation.
    """

    def __init__(self, llama: Any, rule: LoopRule) -> None:
        self.llama = llama
        self.rule = rule
        self.fired_ = False
        self._prompt_tokens: int | None = None

    def __call__(self, input_ids: Sequence[int], logits: Any = None) -> bool:
        if self.fired_:
            return True
        if self._prompt_tokens is None:  # first call: right after the first token was sampled, none evaluated yet
            self._prompt_tokens = len(input_ids)
        generated = [int(t) for t in input_ids[self._prompt_tokens:]]
        text = self.llama.detokenize(generated).decode("utf-8", errors="ignore")
        self.fired_ = find_loop(text, self.rule) is not None
        return self.fired_



@contextmanager
def stopping_on(llama: Any, criterion: Any) -> Iterator[None]:
    """Inside the block, ``llama.create_completion`` (which ``create_chat_completion``'s chat handler calls) also
    stops when ``criterion`` says so, besides the chat format's own criteria. The caller must hold the engine's lock.
    An object without ``create_completion`` (a stand-in that answers chat completions itself) is left as it is.
    """
    before = vars(llama).get("create_completion") if hasattr(llama, "__dict__") else None  # a hook of the instance
    if not add_stopping_criterion(llama, criterion):
        yield
        return
    try:
        yield
    finally:
        if before is None:
            del llama.create_completion  # the instance attribute: the class's method shows through again
        else:
            llama.create_completion = before  # the hook the instance had (the call batcher's, the server's)


def add_stopping_criterion(llama: Any, criterion: Any) -> bool:
    """From now on ``llama.create_completion`` also stops when ``criterion`` says so (until ``del
    llama.create_completion``); False, and nothing changed, for an object without ``create_completion``."""
    original = getattr(llama, "create_completion", None)
    if original is None:
        return False
    from llama_cpp import StoppingCriteriaList

    def create_completion(*args: Any, stopping_criteria: Any = None, **kwargs: Any) -> Any:
        combined = StoppingCriteriaList([*(stopping_criteria or []), criterion])
        return original(*args, stopping_criteria=combined, **kwargs)

    llama.create_completion = create_completion
    return True
