"""IterativeRAG: a Tree-of-Clarifications-style search (DIVA's baseline 7, after Kim et al. 2023).

The root is the ambiguous question (level 1). Retrieval and extraction on a node give its child readings one level
down; a reading is expanded in turn only while its children stay within ``max_depth`` levels, and the tree keeps at
most ``max_nodes`` readings (3 and 10, as DIVA configured it, without ToC's pruning). A reading that restates a
question already expanded (the root included) is kept with its answer but not expanded again. One consolidation call
writes the answer from every reading kept. Retrieval is VanillaRAG's (``programs/rerank.py``), as in the paper.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import dspy

from disambig.data.text import normalize
from disambig.lm.usage import measured
from disambig.programs.conflicts import find_conflicts
from disambig.programs.context import unique
from disambig.programs.knobs import Knob
from disambig.programs.rac import RAC
from disambig.programs.rerank import Reranker
from disambig.programs.result import Interpretation, make_prediction


class IterativeRAG(dspy.Module):
    """Breadth-first tree of clarifications over retrieval.

    Args:
        retriever: any retriever with ``search(query, k)``.
        embedder: sentence encoder of the shared reranker (default: the retriever's own).
        k: passages per retrieval and passages given to the final consolidation.
        first_stage: candidates each retrieval reranks (0: the retriever's own top-``k``).
        max_depth: levels of the tree, the root question being level 1 (3: readings at levels 2 and 3).
        max_nodes: readings kept in the tree (the root is not a reading).
    """

    KNOBS = {"k": Knob(3, 8), "first_stage": Knob(20, 100, step=10), "max_depth": Knob(2, 4),
             "max_nodes": Knob(3, 10)}

    def __init__(self, retriever: Any, embedder: Any = None, k: int = 5, first_stage: int = 50, max_depth: int = 3,
                 max_nodes: int = 10) -> None:
        super().__init__()
        if max_depth < 1 or max_nodes < 0:
            raise ValueError(f"max_depth={max_depth} must be at least 1 and max_nodes={max_nodes} at least 0")
        self.retriever = retriever
        self.reranker = Reranker(retriever, embedder, first_stage)
        self.k, self.max_depth, self.max_nodes = k, max_depth, max_nodes
        self.rac = RAC()

    def forward(self, question: str) -> dspy.Prediction:
        with measured() as trace:
            root = self.reranker.search(question, self.k)
            trace.retrieval_calls += 1
            nodes, cited, claims = self.grow(question, root, trace)
            context = unique([*cited, *root], limit=self.k)
            long_answer = self.rac.write(question, context, nodes)
            trace.notes["tree_nodes"] = len(nodes)
        return make_prediction(nodes, long_answer, trace, context, find_conflicts(claims))

    def grow(self, question: str, root: list[Any],
             trace: Any) -> tuple[list[Interpretation], list[Any], list[Interpretation]]:
        """Expand the tree breadth first; return the readings kept, the passages they cite, and every claim of a kept
        reading (repeats from other passages included, for ``find_conflicts``)."""
        expanded = {normalize(question)}
        kept: set[tuple[str, str]] = set()
        nodes: list[Interpretation] = []
        cited: list[Any] = []
        claims: list[Interpretation] = []
        frontier: deque[tuple[str, list[Any] | None, int]] = deque([(question, root, 1)])
        while frontier and len(nodes) < self.max_nodes:
            query, passages, level = frontier.popleft()
            if passages is None:
                passages = self.reranker.search(query, self.k)
                trace.retrieval_calls += 1
            by_id = {p.id: p for p in passages}
            for found in self.rac.claims(query, passages):
                key = (normalize(found.question), normalize(found.answer))
                if key in kept:  # a repeat: no new node, but one more passage that says it
                    claims.append(found)
                    continue
                if len(nodes) >= self.max_nodes:
                    continue
                kept.add(key)
                claims.append(found)
                nodes.append(found)
                cited.extend(by_id[i] for i in found.passage_ids if i in by_id)
                if key[0] not in expanded and level + 1 < self.max_depth:
                    expanded.add(key[0])
                    frontier.append((found.question, None, level + 1))
        return nodes, cited, claims
