"""DFA stage A, cross-batch entity de-duplication: canonical names, candidate pairs, union–find.

Seed: DFA (004) §5.3 ("aligns extracted entities across batches to remove duplicates"); the method is ours
(spec ``dfa.md`` §5.3 step 6): equal canonical names merge; the remaining pairs from different batches are the
candidate pairs (CP); pairs at or above ``auto`` similarity merge, pairs in ``[judge, auto)`` go to a judge,
the rest stay apart; merges are transitive (union–find), so A~B and B~C put A, B and C in one entity.
Names whose numbers differ ("Flight 28", "Flight 29") never merge automatically: numbers identify rows.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher

ARTICLES = {"a", "an", "the"}


@dataclass(frozen=True)
class Found:
    """An entity one batch reported, with its supporting chunk ids."""

    name: str
    chunk_ids: tuple[str, ...]
    batch: int


@dataclass
class Entity:
    """A de-duplicated entity: its names as reported and the union of their chunks."""

    names: list[str]
    chunk_ids: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.names[0]


@dataclass(frozen=True)
class Dedup:
    """The merged entities, the number of candidate pairs (CP) and the pairs sent to the judge."""

    entities: list[Entity]
    candidate_pairs: int
    judged_pairs: int


def canonical(name: str) -> str:
    """NFKC, case-folded, punctuation and articles removed, spaces collapsed."""
    text = unicodedata.normalize("NFKC", name).casefold()
    words = re.sub(r"[^\w\s]", " ", text).split()
    return " ".join(w for w in words if w not in ARTICLES)


def similarity(a: str, b: str) -> float:
    """0–100: ``SequenceMatcher`` ratio of the sorted canonical tokens (a token-set comparison)."""
    x, y = " ".join(sorted(canonical(a).split())), " ".join(sorted(canonical(b).split()))
    return 100.0 * SequenceMatcher(None, x, y).ratio()


def numbers(name: str) -> list[str]:
    return re.findall(r"\d+", name)


class UnionFind:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, i: int, j: int) -> None:
        a, b = self.find(i), self.find(j)
        if a != b:
            self.parent[max(a, b)] = min(a, b)


def deduplicate(found: Sequence[Found], auto: float = 95, judge: float = 80,
                same: Callable[[list[tuple[str, str]]], list[bool]] | None = None,
                max_judged: int = 40) -> Dedup:
    """Merge the entities of all batches.

    Args:
        found: every batch's entities.
        auto: similarity (0–100) at or above which two names merge without asking.
        judge: similarity from which a pair below ``auto`` goes to ``same`` (when given).
        same: ``f(pairs) -> [bool]``, the same-entity judge; None keeps borderline pairs apart.
        max_judged: at most this many borderline pairs are judged (the most similar first).
    """
    uf = UnionFind(len(found))
    first_by_key: dict[str, int] = {}
    for i, entity in enumerate(found):
        key = canonical(entity.name)
        if key in first_by_key:
            uf.union(first_by_key[key], i)
        else:
            first_by_key[key] = i
    reps = sorted(first_by_key.values())
    batches = {r: {found[j].batch for j in range(len(found)) if uf.find(j) == uf.find(r)} for r in reps}
    digits = {r: numbers(found[r].name) for r in reps}
    candidate_pairs, borderline = 0, []
    for a_pos, a in enumerate(reps):
        for b in reps[a_pos + 1:]:
            if len(batches[a]) == 1 and batches[a] == batches[b]:
                continue  # both only in one batch: that batch's judge already compared them
            candidate_pairs += 1
            if digits[a] != digits[b] or uf.find(a) == uf.find(b):
                continue
            score = similarity(found[a].name, found[b].name)
            if score >= auto:
                uf.union(a, b)
            elif score >= judge:
                borderline.append((score, a, b))
    borderline.sort(key=lambda t: -t[0])
    judged = borderline[:max_judged] if same is not None else []
    if judged:
        verdicts = same([(found[a].name, found[b].name) for _, a, b in judged])
        for (_, a, b), verdict in zip(judged, verdicts, strict=False):
            if verdict:
                uf.union(a, b)
    groups: dict[int, Entity] = {}
    for i, entity in enumerate(found):
        group = groups.setdefault(uf.find(i), Entity([]))
        if entity.name not in group.names:
            group.names.append(entity.name)
        group.chunk_ids.extend(c for c in entity.chunk_ids if c not in group.chunk_ids)
    return Dedup(list(groups.values()), candidate_pairs, len(judged))
