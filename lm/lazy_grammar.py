"""Greedy decoding under a JSON grammar that asks the grammar about one token, not the whole vocabulary.

llama-cpp-python samples through a chain (penalties, grammar, greedy) whose grammar step checks every one of the
model's 151,936 tokens against the grammar at each step, about 30-70 ms a token on 2 cores, though greedy decoding
keeps only the best. ``LazyGrammar`` takes the best token of the raw logits first and asks the grammar about that
one token; only when the grammar refuses it (a model starting prose where JSON must go) are all tokens checked and
the best allowed one taken. llama.cpp's own ``common_sampler`` does the same (its ``grammar_first=false``).

The reply is the library's, token for token (the chain's greedy step takes the first token of highest logit among
those the grammar keeps, and when the raw best is allowed it is that token), but for one repair, on by default
(``repair_quotes``): a double quote the model writes as text inside a JSON string, which would end the string and
cut the answer there, is written escaped (``disambig.lm.json_quotes``). It applies only to calls the chain
would decode greedily with nothing else in it: temperature 0, no repetition, frequency or presence penalty, and no
logits processor but ones that only read the logits (``keeps_logits``, as ``disambig.lm.token_logprobs`` records
log-probabilities); those are called first with what the library would give them. Other calls go through the library
unchanged.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

TOKEN_ROW = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])  # llama_token_data


@dataclass
class GrammarCounts:
    """Tokens sampled lazily, of those how many the grammar refused (a full check followed), and how many quotes
    inside strings were written escaped (``disambig.lm.json_quotes``)."""

    tokens: int = 0
    refused: int = 0
    quotes_escaped: int = 0


class GreedyPick:
    """The greedy choice of one reply's tokens under its grammar, asking the grammar about the best token first.

    Args:
        llama: the loaded ``llama_cpp.Llama`` (its vocabulary compiles the grammar).
        grammar: the reply's ``llama_cpp.LlamaGrammar``.
        counts: where the tokens chosen and the refusals are counted.
        repair_quotes: write a double quote the model means as text inside a JSON string escaped
            (``disambig.lm.json_quotes``) instead of letting it end the string.
    """

    def __init__(self, llama: Any, grammar: Any, counts: GrammarCounts, repair_quotes: bool = True) -> None:
        from disambig.lm.json_quotes import InnerQuotes

        self.counts = counts
        self._llama = llama
        self._sampler = _grammar_sampler(llama, grammar)
        self._rows: np.ndarray | None = None  # a reusable candidate array over the whole vocabulary
        self._quotes = InnerQuotes() if repair_quotes else None
        self._queue: list[int] = []  # the rest of a rewrite's tokens, written before the model's next choice

    def __call__(self, logits: np.ndarray) -> int:
        """The first token of highest logit that the grammar allows; the grammar then moves past it."""
        import llama_cpp

        ours = bool(self._queue)
        token = self._queued(logits) if ours else None
        if token is None:
            best = int(np.argmax(logits))
            token, ours = self._rewritten(logits, best)
            if token is None:
                token = self._choose(logits, best)
        llama_cpp.llama_sampler_accept(self._sampler, token)
        if self._quotes is not None:
            self._quotes.accept(self._text(token), ours=ours)
        return token

    def _queued(self, logits: np.ndarray) -> int | None:
        token = self._queue.pop(0)
        if self._allows(token, float(logits[token])):
            self.counts.tokens += 1
            return token
        self._queue.clear()
        return None

    def _rewritten(self, logits: np.ndarray, best: int) -> tuple[int | None, bool]:
        """The first token of the rewrite of the model's best token, if ``InnerQuotes`` rewrites it."""
        if self._quotes is None:
            return None, False
        rewrite = self._quotes.rewrite(self._text(best))
        if rewrite is None:
            return None, False
        raw = rewrite.text.encode("utf-8", errors="surrogateescape")  # the token's own bytes, a backslash added
        tokens = self._llama.tokenize(raw, add_bos=False, special=False)
        if (not tokens or self._llama.detokenize(tokens) != raw  # e.g. a vocabulary that adds a leading space
                or not self._allows(tokens[0], float(logits[tokens[0]]))):
            return None, False
        self.counts.tokens += 1
        self.counts.quotes_escaped += rewrite.text != '"'
        self._quotes.take(rewrite)
        self._queue = list(tokens[1:])
        return tokens[0], True

    def _text(self, token: int) -> str:
        """The token's bytes as text; a byte of a character split across tokens stays as itself (surrogateescape)."""
        return self._llama.detokenize([token]).decode("utf-8", errors="surrogateescape")

    def _choose(self, logits: np.ndarray, best: int) -> int:
        self.counts.tokens += 1
        if self._allows(best, float(logits[best])):
            return best
        self.counts.refused += 1
        rows = self._all_rows(logits)
        _apply(self._sampler, rows)
        return int(rows["id"][int(np.argmax(rows["logit"]))])

    def _allows(self, token: int, logit: float) -> bool:
        one = np.array([(token, logit, 0.0)], dtype=TOKEN_ROW)
        _apply(self._sampler, one)
        return bool(np.isfinite(one["logit"][0]))

    def _all_rows(self, logits: np.ndarray) -> np.ndarray:
        if self._rows is None or len(self._rows) != len(logits):
            self._rows = np.zeros(len(logits), dtype=TOKEN_ROW)
            self._rows["id"] = np.arange(len(logits))
        self._rows["logit"], self._rows["p"] = logits, 0.0
        return self._rows

    def close(self) -> None:
        if self._sampler is not None:
            import llama_cpp

            llama_cpp.llama_sampler_free(self._sampler)
            self._sampler = None


class LazyGrammar:
    """Replaces ``llama.sample`` for greedy grammar-constrained calls made inside ``active()``.

    Args:
        llama: the loaded ``llama_cpp.Llama``; its ``sample`` is wrapped for its lifetime.
    """

    def __init__(self, llama: Any, repair_quotes: bool = True) -> None:
        self.llama = llama
        self.repair_quotes = repair_quotes
        self.counts = GrammarCounts()
        self._library_sample = llama.sample
        self._active = False
        self._source: Any = None  # the LlamaGrammar of the current call
        self._pick: GreedyPick | None = None
        llama.sample = self._sample

    @contextmanager
    def active(self) -> Iterator[None]:
        """Sample lazily during this block (one call); the grammar state is dropped at its end."""
        self._active = True
        try:
            yield
        finally:
            self._active = False
            self._free()

    def _sample(self, *args: Any, **kwargs: Any) -> int:
        grammar = kwargs.get("grammar")
        if args or not self._active or grammar is None or not plain_greedy(kwargs):
            return self._library_sample(*args, **kwargs)
        if self._pick is None or grammar is not self._source:
            self._free()
            self._source, self._pick = grammar, GreedyPick(self.llama, grammar, self.counts, self.repair_quotes)
        idx = kwargs.get("idx")
        logits = logits_at(self.llama._ctx.ctx, self.llama.n_vocab(), -1 if idx is None else idx - self.llama.n_tokens)
        logits.setflags(write=False)  # a reader that wrote into them would change the pick
        for reader in kwargs.get("logits_processor") or ():  # readers only (plain_greedy), as the library calls them
            reader(self.llama._input_ids, logits)
        return self._pick(logits)

    def _free(self) -> None:
        if self._pick is not None:
            self._pick.close()
        self._source = self._pick = None


def plain_greedy(kwargs: dict[str, Any]) -> bool:
    """Whether the library's chain for these arguments is the grammar and a greedy pick, nothing that moves logits."""
    readers = kwargs.get("logits_processor") or ()
    return (kwargs.get("temp") == 0.0 and all(getattr(reader, "keeps_logits", False) for reader in readers)
            and kwargs.get("repeat_penalty", 1.0) == 1.0 and kwargs.get("frequency_penalty", 0.0) == 0.0
            and kwargs.get("presence_penalty", 0.0) == 0.0)


def logits_at(ctx: Any, n_vocab: int, index: int) -> np.ndarray:
    """The logits a llama.cpp context holds for batch position ``index`` (negative: from the end), as a view."""
    import llama_cpp

    return np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, index), shape=(n_vocab,))


def _apply(sampler: Any, rows: np.ndarray) -> None:
    """Let the grammar sampler set the logit of every token it refuses in ``rows`` (in place) to -inf."""
    import llama_cpp

    data = rows.ctypes.data_as(ctypes.POINTER(llama_cpp.llama_token_data))
    array = llama_cpp.llama_token_data_array(data=data, size=len(rows), selected=-1, sorted=False)
    llama_cpp.llama_sampler_apply(sampler, ctypes.byref(array))


def _grammar_sampler(llama: Any, grammar: Any) -> Any:
    import llama_cpp

    return llama_cpp.llama_sampler_init_grammar(llama._model.vocab, grammar._grammar.encode("utf-8"),
                                                grammar._root.encode("utf-8"))
