"""U_q, the shared proxy evidence of grounded evaluation (VerDICt §4.3, App. A; verdict.md §4.3).

An interpretation that cites no passage (a pseudo-interpretation, a DIVA reading) is judged against U_q: one
list per question, the top ``top`` passages a fixed retriever returns for the question itself, the same for
every system compared (VerDICt's release retrieves it for the question, without relaxation). Attaching it to
the examples as ``proxy_passages`` makes ``metrics.grounded`` use it instead of each prediction's own passages.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ProxySource:
    """Where U_q comes from: the top ``top`` passages of the ``retriever`` kind over ``corpus``."""

    top: int = 20
    retriever: str = "hybrid"
    corpus: str = "wiki-slice"

    def __post_init__(self) -> None:
        if not isinstance(self.top, int) or isinstance(self.top, bool) or self.top < 1:
            raise ValueError(f"proxy top={self.top!r} must be a positive number of passages (VerDICt uses 20)")

    @property
    def label(self) -> str:
        """``hybrid:wiki-slice@20``: what a judged score depends on (kept in score logs and outputs)."""
        return f"{self.retriever}:{self.corpus}@{self.top}"


class SharedProxy:
    """U_q for each question, retrieved once per question text and shared by every run scored through it.

    Args:
        source: the retriever kind, corpus and depth (recorded with the scores).
        retriever: an open retriever of ``source`` (``search``/``batch_search``/``size``); ``open_proxy`` builds one.
    """

    def __init__(self, source: ProxySource, retriever: Any) -> None:
        self.source = source
        self.retriever = retriever
        self._lists: dict[str, list[dict[str, str]]] = {}

    def passages(self, questions: Iterable[str]) -> list[list[dict[str, str]]]:
        """U_q of each question as ``{id, title, text}`` rows, best first (at most the corpus size)."""
        questions = [str(q) for q in questions]
        missing = list(dict.fromkeys(q for q in questions if q not in self._lists))
        if missing:
            k = min(self.source.top, self.retriever.size)
            for question, ranked in zip(missing, self.retriever.batch_search(missing, k), strict=True):
                self._lists[question] = [p.to_dict() for p in ranked]
        return [list(self._lists[q]) for q in questions]

    def attach(self, examples: list[Any]) -> list[Any]:
        """Copies of ``examples`` whose ``proxy_passages`` is their question's U_q (the inputs are not changed)."""
        lists = self.passages(str(ex.question) for ex in examples)
        return [ex.copy(proxy_passages=passages) for ex, passages in zip(examples, lists, strict=True)]

    def describe(self, examples: list[Any]) -> dict[str, Any]:
        """What to record beside scores: the source and a fingerprint of the passage ids of ``examples``' U_q."""
        return {"retriever": self.source.retriever, "corpus": self.source.corpus, "top": self.source.top,
                "label": self.source.label, "fingerprint": proxy_fingerprint(examples)}


def open_proxy(source: ProxySource, settings: Any = None) -> SharedProxy:
    """A ``SharedProxy`` over a newly opened retriever (this is where Lucene's JVM and FAISS load)."""
    from disambig.retrieval import build_retriever

    return SharedProxy(source, build_retriever(source.retriever, corpus=source.corpus, settings=settings))


def proxy_ids(example: Any) -> list[str]:
    """The passage ids (else texts) of the example's U_q; empty when it has none."""
    return [str(p.get("id") or p.get("text", "")) if isinstance(p, dict) else str(p)
            for p in getattr(example, "proxy_passages", None) or []]


def proxy_fingerprint(examples: Iterable[Any]) -> str:
    """A short digest of every example's id and U_q passage ids: equal fingerprints, equal evidence."""
    pairs = sorted((str(ex.id), proxy_ids(ex)) for ex in examples)
    return hashlib.sha256(json.dumps(pairs).encode()).hexdigest()[:12]

