"""MLflow models-from-code entry: a pyfunc that loads a compiled program from its JSON state.

``disambig compile`` logs this file as the model's code and the state + manifest as its artifacts, so
nothing is pickled. Serving reads the LM from ``DISAMBIG_LM`` (default: the embedded model).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mlflow
from mlflow.pyfunc import PythonModel


class CompiledProgram(PythonModel):
    """``predict`` takes questions (a list, or a DataFrame with a ``question`` column) and returns answers."""

    def load_context(self, context: Any) -> None:
        from disambig.optimizers.loading import load
        from disambig.lm.runtime import build_lm, default_adapter
        from disambig.settings import load_settings

        settings = load_settings()
        self.program = load(Path(context.artifacts["state"]), settings=settings)
        self.lm = build_lm(settings)
        self.adapter = default_adapter()

    def predict(self, context, model_input, params=None):  # noqa: ANN001, ANN201 - MLflow infers schemas from hints
        import dspy

        questions = _questions(model_input)
        with dspy.context(lm=self.lm, adapter=self.adapter):
            predictions = [self.program(question=q) for q in questions]
        return [
            {"question": q, "long_answer": p.long_answer, "interpretations": p.interpretations, "trace": p.trace}
            for q, p in zip(questions, predictions, strict=True)
        ]


def _questions(model_input: Any) -> list[str]:
    if hasattr(model_input, "columns"):
        if "question" not in model_input.columns:
            raise ValueError(f"input needs a 'question' column, got columns {list(model_input.columns)}")
        return [str(q) for q in model_input["question"]]
    if isinstance(model_input, str):
        return [model_input]
    if isinstance(model_input, dict) and "question" in model_input:
        value = model_input["question"]
        return [value] if isinstance(value, str) else [str(q) for q in value]
    return [str(q) for q in model_input]


mlflow.models.set_model(CompiledProgram())
