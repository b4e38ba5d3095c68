"""DFA stage F, the numeric parts: filter tools, corpus snapshots with rollback, and the filtering memory.

Seed: DFA (004) §5.2. "All filtering operations are performed on explicit snapshots, and discarded chunks are
preserved rather than permanently removed"; the system "can roll back to an earlier snapshot". The tools'
exact semantics, refusals, memory format and samples are ours (spec ``dfa.md`` §4.2–4.5).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

TOOLS = ("exact_match", "fuzzy_match")
TOOL_MANUAL = (
    "exact_match(keywords, mode any|all): keeps chunks containing the keywords (whole words, case-insensitive). "
    "Precise; misses spelling variants, synonyms and codes. fuzzy_match(keywords, mode, threshold 0-100): keeps "
    "chunks where a keyword approximately appears; a lower threshold keeps more (more recall, more noise). "
    "rollback(target_snapshot): continue from an earlier snapshot. stop: the current snapshot is complete."
)


def chunk_text(chunk: dict[str, Any]) -> str:
    return f"{chunk.get('title') or ''} {chunk['text']}".strip()


def exact_match(chunks: Sequence[dict], keywords: Sequence[str], mode: str = "any", case_sensitive: bool = False,
                whole_word: bool = True) -> list[dict]:
    """Chunks containing any (or all) keywords, as whole words unless ``whole_word`` is false; order kept."""
    flags = 0 if case_sensitive else re.I
    patterns = [re.compile(rf"(?<!\w){re.escape(k)}(?!\w)" if whole_word else re.escape(k), flags)
                for k in keywords if k.strip()]
    test = all if mode == "all" else any
    return [c for c in chunks if patterns and test(p.search(chunk_text(c)) for p in patterns)]


def partial_ratio(keyword: str, text: str) -> float:
    """0–100: how well ``keyword`` matches its best-aligned window of ``text`` (case-insensitive).

    The fuzzywuzzy ``partial_ratio`` construction on ``difflib``: each matching block of the two strings aligns a
    window of ``text`` as long as the keyword, and the best window's ``SequenceMatcher.ratio`` is the score.
    """
    short, long = keyword.lower().strip(), text.lower()
    if not short:
        return 0.0
    if len(short) >= len(long):
        return 100.0 * SequenceMatcher(None, short, long).ratio()
    best = 0.0
    for block in SequenceMatcher(None, short, long, autojunk=False).get_matching_blocks():
        start = max(0, min(block.b - block.a, len(long) - len(short)))
        best = max(best, SequenceMatcher(None, short, long[start:start + len(short)]).ratio())
        if best == 1.0:
            break
    return 100.0 * best


def fuzzy_match(chunks: Sequence[dict], keywords: Sequence[str], mode: str = "any",
                threshold: float = 85) -> list[dict]:
    """Chunks where any (or every) keyword's ``partial_ratio`` reaches ``threshold``; order kept."""
    words = [k for k in keywords if k.strip()]
    test = all if mode == "all" else any
    return [c for c in chunks if words and test(partial_ratio(k, chunk_text(c)) >= threshold for k in words)]


def tool_call_error(tool: str, params: dict[str, Any]) -> str:
    """Why a planned tool call cannot run ("" when it can)."""
    if tool not in TOOLS:
        return f"unknown tool {tool!r}; use {' or '.join(TOOLS)}"
    keywords = params.get("keywords") or []
    if not isinstance(keywords, list) or not 1 <= len([k for k in keywords if str(k).strip()]) <= 12:
        return f"keywords must be a list of 1 to 12 non-empty strings, got {keywords!r}"
    if params.get("mode", "any") not in ("any", "all"):
        return f"mode must be any or all, got {params.get('mode')!r}"
    threshold = params.get("threshold", 85)
    if tool == "fuzzy_match" and not (isinstance(threshold, int | float) and 0 <= threshold <= 100):
        return f"threshold must be 0-100, got {threshold!r}"
    return ""


def run_tool(chunks: Sequence[dict], tool: str, params: dict[str, Any]) -> list[dict]:
    """Apply a validated tool call (see ``tool_call_error``) to ``chunks``."""
    keywords = [str(k) for k in params["keywords"]]
    if tool == "exact_match":
        return exact_match(chunks, keywords, params.get("mode", "any"))
    return fuzzy_match(chunks, keywords, params.get("mode", "any"), params.get("threshold", 85))


@dataclass(frozen=True)
class Snapshot:
    """C(i): the chunk ids still kept after a tool call on snapshot ``parent`` (C(0) is the whole scope)."""

    index: int
    parent: int | None
    chunk_ids: tuple[str, ...]
    tool: str | None = None
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MemoryEntry:
    """One line of the filtering history."""

    step: int
    action: str  # filter | rollback | stop | refused | no-op
    source: int
    target: int
    params: dict[str, Any] = field(default_factory=dict)
    kept: int = 0
    discarded: int = 0
    verdict: str = ""
    kept_summary: str = ""
    discarded_summary: str = ""
    note: str = ""

    def line(self) -> str:
        what = f"step {self.step}: {self.action} C{self.source}->C{self.target}"
        if self.params:
            what += f" {self.params}"
        if self.action == "filter":
            what += f" kept {self.kept}, discarded {self.discarded}"
        extras = [x for x in (self.verdict, self.kept_summary and f"kept: {self.kept_summary}",
                              self.discarded_summary and f"discarded: {self.discarded_summary}", self.note) if x]
        return what + (" | " + " | ".join(extras) if extras else "")


class FilterState:
    """Snapshots over a fixed chunk list, the current one, and the memory of every step.

    Discarded chunks stay addressable: every snapshot is kept, and ``discarded(i)`` is C(parent) - C(i).
    """

    def __init__(self, chunks: Sequence[dict]) -> None:
        self.chunks = {c["id"]: c for c in chunks}
        self.snapshots = [Snapshot(0, None, tuple(c["id"] for c in chunks))]
        self.current = 0
        self.memory: list[MemoryEntry] = []
        self.verdicts: dict[int, str] = {}

    def view(self, index: int | None = None) -> list[dict]:
        return [self.chunks[i] for i in self.snapshots[self.current if index is None else index].chunk_ids]

    def discarded(self, index: int) -> list[dict]:
        snapshot = self.snapshots[index]
        if snapshot.parent is None:
            return []
        kept = set(snapshot.chunk_ids)
        return [self.chunks[i] for i in self.snapshots[snapshot.parent].chunk_ids if i not in kept]

    def apply(self, tool: str, params: dict[str, Any]) -> Snapshot | str:
        """Run a tool on the current snapshot: the new (now current) snapshot, or why nothing was run.

        Refused: an invalid call, or one already made on this snapshot (the memory records both). A call that
        keeps every chunk is a no-op: no snapshot is made.
        """
        step = len(self.memory) + 1
        error = tool_call_error(tool, params) or self._repeat_error(tool, params)
        if error:
            self.memory.append(MemoryEntry(step, "refused", self.current, self.current, params, note=error))
            return error
        kept = run_tool(self.view(), tool, params)
        if len(kept) == len(self.snapshots[self.current].chunk_ids):
            self.memory.append(MemoryEntry(step, "no-op", self.current, self.current, {"tool": tool, **params},
                                           kept=len(kept), note="the filter kept every chunk"))
            return "no-op: the filter kept every chunk"
        snapshot = Snapshot(len(self.snapshots), self.current, tuple(c["id"] for c in kept), tool, dict(params))
        self.snapshots.append(snapshot)
        self.current = snapshot.index
        return snapshot

    def _repeat_error(self, tool: str, params: dict[str, Any]) -> str:
        for s in self.snapshots[1:]:
            if s.parent == self.current and s.tool == tool and s.params == params:
                return f"repeated call: C{s.index} already holds {tool} {params} on C{self.current}"
        return ""

    def record(self, snapshot: Snapshot, verdict: str = "", kept_summary: str = "",
               discarded_summary: str = "") -> None:
        """Add a filter step's memory entry (with the evaluation, when there is one)."""
        self.verdicts[snapshot.index] = verdict
        self.memory.append(MemoryEntry(
            len(self.memory) + 1, "filter", snapshot.parent or 0, snapshot.index, {"tool": snapshot.tool,
                                                                                  **snapshot.params},
            kept=len(snapshot.chunk_ids), discarded=len(self.discarded(snapshot.index)), verdict=verdict,
            kept_summary=kept_summary, discarded_summary=discarded_summary))

    def rollback(self, target: int, note: str = "") -> str:
        """Make snapshot ``target`` current again; "" on success, else why not (recorded as refused)."""
        step = len(self.memory) + 1
        if not isinstance(target, int) or not 0 <= target < len(self.snapshots):
            error = f"no snapshot C{target}; snapshots are C0..C{len(self.snapshots) - 1}"
            self.memory.append(MemoryEntry(step, "refused", self.current, self.current, note=error))
            return error
        self.memory.append(MemoryEntry(step, "rollback", self.current, target, note=note))
        self.current = target
        return ""

    def final(self) -> Snapshot:
        """The current snapshot, or its nearest ancestor that was not judged over-filtered."""
        snapshot = self.snapshots[self.current]
        while self.verdicts.get(snapshot.index) == "over_filtered" and snapshot.parent is not None:
            snapshot = self.snapshots[snapshot.parent]
        return snapshot

    def snapshots_text(self) -> str:
        lines = []
        for s in self.snapshots:
            verdict = f", {self.verdicts[s.index]}" if self.verdicts.get(s.index) else ""
            lines.append(f"C{s.index}: parent C{s.parent}, {s.tool or 'whole scope'} {s.params or ''}, "
                         f"{len(s.chunk_ids)} chunks{verdict}")
        return "\n".join(lines)

    def memory_text(self, window: int = 8) -> str:
        """The newest ``window`` entries verbatim, older ones collapsed to one line."""
        if not self.memory:
            return "(no steps yet)"
        older, recent = self.memory[:-window], self.memory[-window:]
        lines = [f"steps 1-{len(older)}: {', '.join(e.action for e in older)}"] if older else []
        return "\n".join(lines + [e.line() for e in recent])

    def observation(self, n_show: int = 6) -> str:
        view = self.view()
        previews = "\n".join(f"[{c['id']}] {chunk_text(c)[:200]}" for c in view[:n_show])
        return (f"current snapshot C{self.current}: {len(view)} of {len(self.snapshots[0].chunk_ids)} chunks\n"
                f"{previews or '(empty)'}")


def overlap_rank(query: str, chunks: Sequence[dict]) -> list[dict]:
    """Chunks by decreasing share of the query's words they contain (ties keep corpus order)."""
    words = {w for w in re.findall(r"\w+", query.lower()) if len(w) > 2}
    if not words:
        return list(chunks)

    def score(chunk: dict) -> float:
        return len(words & set(re.findall(r"\w+", chunk_text(chunk).lower()))) / len(words)

    return sorted(chunks, key=score, reverse=True)


def samples(query: str, kept: Sequence[dict], discarded: Sequence[dict], n: int = 6,
            seed: int = 0) -> tuple[list[dict], list[dict]]:
    """What the evaluator sees: kept = half least query-like (likely false positives) + half random; discarded =
    the ``n`` most query-like (likely false negatives: the paper's "observation of discarded evidence")."""
    ranked = overlap_rank(query, kept)
    worst = ranked[::-1][: n // 2]
    rest = [c for c in kept if c not in worst]
    shown = worst + random.Random(seed).sample(rest, min(n - len(worst), len(rest)))
    return shown, overlap_rank(query, discarded)[:n]


def chunk_lines(chunks: Sequence[dict], limit: int = 300) -> str:
    return "\n".join(f"[{c['id']}] {chunk_text(c)[:limit]}" for c in chunks) or "(none)"
