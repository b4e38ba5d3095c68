"""Few-shot demos chosen per question by nearest neighbour, saved as plain JSON.

Seed: DIVA (002), A.4: "we dynamically select k-shot examples through nearest neighbor search" (after Kim et al.
2023). DSPy's ``KNNFewShot`` does this by replacing the program's ``forward`` on the instance and keeping its
training set in the optimizer, so ``save()`` writes empty demos and the neighbours are lost. ``KNNDemos`` wraps a
program instead: its state is the demo pool (plain JSON, beside the program's own predictors), DSPy's ``KNN``
picks the ``k`` pool examples nearest the question, and each call runs a copy of the program whose predictors show
those examples. The embedder is not state: it is the program's retriever's own (all-MiniLM-L6-v2), re-attached
when the artifact is loaded.

A predictor keeps its own demos (the seed demo) when none of the chosen examples has any of its output fields,
as a verifier has no gold label and the typing step has no gold types.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import dspy
from dspy.predict.parameter import Parameter

from disambig.programs.rerank import embedder_of


class DemoPool(Parameter):
    """The examples demos are chosen from (each reduced to the fields some predictor reads or writes) and ``k``,
    the demos given per question."""

    def __init__(self, examples: Sequence[Any] = (), fields: Sequence[str] | None = None, k: int = 2,
                 input_keys: Sequence[str] = ("question",)) -> None:
        keep = set(fields) if fields is not None else None
        self.k = k
        self.input_keys = list(input_keys)
        self.examples = [_reduced(ex, keep, self.input_keys) for ex in examples]

    def reset(self) -> None:
        """Compiled state, not learned per run: nothing to reset."""

    def dump_state(self, json_mode: bool = True) -> dict[str, Any]:
        from dspy.predict.predict import serialize_object

        return {"k": self.k, "input_keys": self.input_keys,
                "examples": [{k: serialize_object(v) for k, v in ex.items()} for ex in self.examples]}

    def load_state(self, state: dict[str, Any]) -> DemoPool:
        self.k = int(state.get("k", self.k))
        self.input_keys = list(state.get("input_keys", ["question"]))
        self.examples = [dspy.Example(**row).with_inputs(*self.input_keys) for row in state.get("examples", [])]
        return self


class KNNDemos(dspy.Module):
    """``program`` with each question's ``k`` nearest pool examples as every predictor's demos.

    Args:
        program: the program to run (its predictors' fields decide what the pool keeps).
        examples: the demo pool (training examples with gold fields).
        k: demos per question.
        embedder: sentence encoder with ``encode(texts)``; by default the program's retriever's, else
            all-MiniLM-L6-v2.
    """

    def __init__(self, program: Any, examples: Sequence[Any] = (), k: int = 2, embedder: Any = None) -> None:
        super().__init__()
        if k < 1:
            raise ValueError(f"k={k} must be at least 1 demo per question")
        fields = {f for _, p in program.named_predictors() for f in p.signature.fields}
        self.program = program
        self.pool = DemoPool(examples, fields, k)
        self.embedder = embedder
        self._index: tuple[tuple[int, int], Any] | None = None

    def forward(self, **inputs: Any) -> Any:
        return with_demos(self.program, self.nearest(inputs))(**inputs)

    def nearest(self, inputs: dict[str, Any]) -> list[Any]:
        """The ``k`` pool examples nearest ``inputs`` (its input fields, embedded as DSPy's ``KNN`` does)."""
        examples = self.pool.examples
        if len(examples) <= self.pool.k:
            return list(examples)
        query = {key: inputs[key] for key in self.pool.input_keys if key in inputs}
        return self.index()(**query)

    def index(self) -> Any:
        """DSPy's ``KNN`` over the pool, built once per pool (a loaded state gets a new one)."""
        from dspy.predict.knn import KNN

        key = (id(self.pool.examples), self.pool.k)
        if self._index is None or self._index[0] != key:
            encoder = self.embedder or embedder_of(getattr(self.program, "retriever", None))
            self.embedder = encoder
            self._index = (key, KNN(self.pool.k, self.pool.examples, dspy.Embedder(encoder.encode)))
        return self._index[1]


def with_demos(module: Any, demos: list[Any]) -> Any:
    """A copy of ``module`` whose predictors show ``demos`` (those with one of their outputs); nothing is shared that
    a call changes, so concurrent questions do not see each other's demos. Retrievers and encoders stay shared."""
    out = copy.copy(module)
    for name, value in vars(module).items():
        if isinstance(value, dspy.Predict):
            predictor = copy.copy(value)
            chosen = [d for d in demos if any(f in d for f in value.signature.output_fields)]
            predictor.demos = chosen or list(value.demos)
            setattr(out, name, predictor)
        elif isinstance(value, dspy.Module):
            setattr(out, name, with_demos(value, demos))
    return out


def _reduced(example: Any, keep: set[str] | None, input_keys: list[str]) -> Any:
    row = {k: v for k, v in example.items() if keep is None or k in keep}
    return dspy.Example(**row).with_inputs(*[k for k in input_keys if k in row])

