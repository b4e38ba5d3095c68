"""Gold demo fields for count questions (SpiderQA): a small batch-judging demo built from the annotations.

A SpiderQA row annotates which chunks evidence each counted item (``gold_items``), so the one step whose output
the data determines is batch judging (``JudgeBatch``, used by ``dfa`` per batch and by ``map-count`` per chunk):
given numbered chunks, list the qualifying entities with their chunk numbers. The demo numbers the evidence
chunks of up to ``MAX_ITEMS`` counted items among as many chunks of the same scope that evidence nothing, each
cut to ``MAX_CHARS`` (the negatives spread over the scope), and names each item by what its counted chunk states
(``airline is 1; no is 10; source is APG``). Only ``chunks`` and ``entities`` are added, and only for the programs
that judge batches (``JUDGING_PROGRAMS``): ``llm-only-count`` and ``naive-rag-count`` also output ``entities`` (as
names) and would otherwise be shown these rows as half-filled demos. The judge's other inputs (entity type,
conditions, connective) come from the rewrite step, which the data does not annotate, so they stay unset.
"""

from __future__ import annotations

from typing import Any

from disambig.data.spiderqa import load_scope
from disambig.programs.dfa.filter import chunk_text
from disambig.signatures.dfa import JudgedEntity

MAX_ITEMS = 3
MAX_CHARS = 240
"""Every demo token is paid again in every judge call."""
NAME_FIELDS = 3
"""An item's name: the first fields its counted chunk states."""
JUDGING_PROGRAMS = ("dfa", "map-count")
"""The programs whose judging step (``JudgeBatch``) these demos are for."""


def count_fields(example: Any) -> dict[str, Any]:
    """``chunks`` and ``entities`` of a judging demo for one count question, or nothing without annotations."""
    items = [list(i) for i in getattr(example, "gold_items", None) or [] if i]
    corpus, scope = getattr(example, "corpus", None), getattr(example, "scope", None)
    if not items or not corpus:
        return {}
    chunks = {c["id"]: c for c in load_scope(corpus, scope)}
    items = [[cid for cid in item if cid in chunks] for item in items]
    items = [item for item in items if item][:MAX_ITEMS]
    if not items:
        return {}
    evidence = list(dict.fromkeys(cid for item in items for cid in item))
    every_gold = {cid for item in getattr(example, "gold_items", None) or [] for cid in item}
    shown = interleave(evidence, spread([cid for cid in chunks if cid not in every_gold], len(items)))
    lines = [f"[{n}] {chunk_text(chunks[cid])[:MAX_CHARS]}" for n, cid in enumerate(shown, 1)]
    entities, names = [], set()
    for item in items:
        numbers = [shown.index(cid) + 1 for cid in item]
        name = item_name(chunks[item[0]]["text"])
        name = name if name not in names else f"{name} (chunk {numbers[0]})"
        names.add(name)
        entities.append(JudgedEntity(name=name, chunks=numbers,
                                     justification=f"chunk(s) {', '.join(map(str, numbers))} state it"))
    return {"chunks": "\n".join(lines), "entities": entities}


def spread(ids: list[str], n: int) -> list[str]:
    """``n`` of ``ids`` evenly spaced (not just the first ones, which are all one table)."""
    if n <= 0 or not ids:
        return []
    step = max(len(ids) // n, 1)
    return ids[::step][:n]


def interleave(first: list[str], second: list[str]) -> list[str]:
    """``a1, b1, a2, b2, ...`` then the rest of the longer list: counted chunks are not all at the top."""
    out = []
    for n in range(max(len(first), len(second))):
        out += first[n:n + 1] + second[n:n + 1]
    return out


def item_name(text: str) -> str:
    """The first ``NAME_FIELDS`` fields a rendered row states (``Flights record: airline is 1; no is 10; ...`` ->
    ``airline is 1; no is 10; source is APG``), so the name is words the chunk contains."""
    body = text.split(":", 1)[1] if "record:" in text.split(";", 1)[0] else text
    return "; ".join(part.strip().rstrip(".") for part in body.split(";")[:NAME_FIELDS]).strip()
