"""Gold demo fields for count questions (SpiderQA): a small batch-judging demo built from the annotations.

A SpiderQA row annotates which chunks evidence each counted item (``gold_items``), so the one step whose output
the data determines is batch judging (``JudgeBatch``, used by ``dfa`` per batch and by ``map-count`` per chunk):
given numbered chunks, list the qualifying entities with their chunk numbers. The demo numbers the evidence
chunks of up to ``MAX_ITEMS`` counted items among as many chunks of the same scope that evidence nothing, each
cut to ``MAX_CHARS``, and names each item by the table and row it counts (``teacher 3``). Only ``chunks`` and
``entities`` are added: the judge's other inputs (entity type, conditions, connective) come from the rewrite
step, which the data does not annotate, so they stay unset and no other step gets a demo from these fields.
"""

from __future__ import annotations

from typing import Any

from disambig.data.spiderqa import load_scope
from disambig.programs.dfa_filter import chunk_text
from disambig.signatures.dfa import JudgedEntity

MAX_ITEMS = 3
MAX_CHARS = 240
"""Every demo token is paid again in every judge call."""


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
    others = [cid for cid in chunks if cid not in every_gold][:len(items)]
    shown = interleave(evidence, others)
    lines = [f"[{n}] {chunk_text(chunks[cid])[:MAX_CHARS]}" for n, cid in enumerate(shown, 1)]
    entities = []
    for item in items:
        numbers = [shown.index(cid) + 1 for cid in item]
        entities.append(JudgedEntity(name=row_name(item[0]), chunks=numbers,
                                     justification=f"chunk(s) {', '.join(map(str, numbers))} state it"))
    return {"chunks": "\n".join(lines), "entities": entities}


def interleave(first: list[str], second: list[str]) -> list[str]:
    """``a1, b1, a2, b2, ...`` then the rest of the longer list: counted chunks are not all at the top."""
    out = []
    for n in range(max(len(first), len(second))):
        out += first[n:n + 1] + second[n:n + 1]
    return out


def row_name(chunk_id: str) -> str:
    """``spider/DB/TABLE/ROWID`` -> ``TABLE ROWID`` (underscores as spaces)."""
    parts = chunk_id.split("/")
    return f"{parts[-2].replace('_', ' ')} {parts[-1]}" if len(parts) >= 2 else chunk_id
