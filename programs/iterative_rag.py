"""IterativeRAG: a Tree-of-Clarifications-style search (DIVA's baseline 7, after Kim et al. 2023).

Readings found at one level become retrieval queries for the next; the tree stops at ``max_depth`` levels
or ``max_nodes`` readings (3 and 10, as DIVA configured it, without ToC's pruning). One consolidation call
writes the answer from every reading found.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import dspy

from disambig.data.text import normalize
from disambig.programs.knobs import Knob
from disambig.programs.context import unique
from disambig.programs.rac import RAC
from disambig.programs.result import Interpretation, make_prediction
from disambig.lm.usage import measured


class IterativeRAG(dspy.Module):
    """Breadth-first tree of clarifications over retrieval.

    Args:
        retriever: any retriever with ``search(query, k)``.
        k: passages per retrieval and passages given to the final consolidation.
        max_depth: levels of the tree (the root question is level 1).
        max_nodes: readings kept in the tree.
    """

    KNOBS = {"k": Knob(3, 8), "max_depth": Knob(1, 3), "max_nodes": Knob(3, 10)}

    def __init__(self, retriever: Any, k: int = 5, max_depth: int = 3, max_nodes: int = 10) -> None:
        super().__init__()
        self.retriever = retriever
        self.k, self.max_depth, self.max_nodes = k, max_depth, max_nodes
        self.rac = RAC()

    def forward(self, question: str) -> dspy.Prediction:
        with measured() as trace:
            root = self.retriever.search(question, self.k)
            trace.retrieval_calls += 1
            nodes, cited = self.grow(question, root, trace)
            context = unique([*cited, *root], limit=self.k)
            long_answer = self.rac.write(question, context, nodes)
            trace.notes["tree_nodes"] = len(nodes)
        return make_prediction(nodes, long_answer, trace, context)

    def grow(self, question: str, root: list[Any], trace: Any) -> tuple[list[Interpretation], list[Any]]:
        """Expand the tree breadth first; return the readings and the passages they cite."""
        seen = {normalize(question)}
        nodes: list[Interpretation] = []
        cited: list[Any] = []
        frontier: deque[tuple[str, list[Any] | None, int]] = deque([(question, root, 1)])
        while frontier and len(nodes) < self.max_nodes:
            query, passages, depth = frontier.popleft()
            if passages is None:
                passages = self.retriever.search(query, self.k)
                trace.retrieval_calls += 1
            by_id = {p.id: p for p in passages}
            for found in self.rac.interpretations(query, passages):
                if normalize(found.question) in seen or len(nodes) >= self.max_nodes:
                    continue
                seen.add(normalize(found.question))
                nodes.append(found)
                cited.extend(by_id[i] for i in found.passage_ids if i in by_id)
                if depth < self.max_depth:
                    frontier.append((found.question, None, depth + 1))
        return nodes, cited
