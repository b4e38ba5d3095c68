"""MLflow models-from-code entry: a pyfunc that loads a compiled program from its JSON state.

``disambig compile`` logs this file as the model's code and the state + manifest as its artifacts, so
nothing is pickled. The program, its knobs and its retriever (kind and corpus) come from the manifest logged with
the state; run settings (LM spec, judge LM, cache directory of the indexes, threads...) from the ``DISAMBIG_*``
variables of the process (default: the embedded model), which ``disambig batch`` sets for Spark executors. The LM
and the loaded program are kept per process (``disambig.optimizers.serving_cache``), so a Spark worker that loads
the model for every task builds them once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mlflow
from mlflow.pyfunc import PythonModel

ANSWER_FIELDS = ("question", "long_answer", "interpretations", "passages", "trace", "error", "extra")
INPUT_FIELDS = ("question", "scope", "corpus")  # what a request row may carry; the last two only for count programs


class CompiledProgram(PythonModel):
    """``predict`` takes questions (a list, or a DataFrame with a ``question`` column) and returns one answer per
    question: ``ANSWER_FIELDS``, where ``error`` is "" for an answered question and the exception otherwise (a failed
    question never stops the others), and ``extra`` is the JSON of any other prediction field (a count, ...).

    A count program (``dfa``, its baselines) counts over chunks, so its rows also carry ``corpus`` (a chunk file on
    the server, e.g. a built SpiderQA folder's ``corpus.jsonl``) and ``scope`` (a database id in it): DataFrame
    columns, lists of dicts, or a dict of columns."""

    def load_context(self, context: Any) -> None:
        from disambig.lm.runtime import default_adapter
        from disambig.optimizers.serving_cache import shared_lm, shared_program
        from disambig.settings import load_settings

        settings = load_settings()
        self.program = shared_program(Path(context.artifacts["state"]), settings)
        self.lm = shared_lm(settings)
        self.adapter = default_adapter()

    def predict(self, context, model_input, params=None):  # noqa: ANN001, ANN201 - MLflow infers schemas from hints
        import dspy

        with dspy.context(lm=self.lm, adapter=self.adapter):
            return [_answer(self.program, row) for row in _rows(model_input)]


def _answer(program: Any, row: dict[str, str]) -> dict[str, Any]:
    """One row's answer; an exception becomes the row's ``error``, with what the attempt cost."""
    from dataclasses import asdict

    from disambig.lm.usage import measured

    question = row["question"]
    prediction, error = None, _unused_inputs(program, row)
    with measured() as attempt:
        try:
            prediction = None if error else program(**row)
        except Exception as exc:  # noqa: BLE001 - one bad question must not stop the batch; the error is kept
            error = f"{type(exc).__name__}: {exc}"
    if error:
        return {"question": question, "long_answer": "", "interpretations": [], "passages": [],
                "trace": asdict(attempt), "error": error, "extra": "{}"}
    values = {k: prediction[k] for k in prediction.keys()} if hasattr(prediction, "keys") else {}
    extra = {k: v for k, v in values.items() if k not in ANSWER_FIELDS}
    return {"question": question, "long_answer": str(values.get("long_answer") or ""),
            "interpretations": list(values.get("interpretations") or []),
            "passages": list(values.get("passages") or []), "trace": dict(values.get("trace") or {}),
            "error": "", "extra": json.dumps(extra, default=str, ensure_ascii=False)}


def _unused_inputs(program: Any, row: dict[str, str]) -> str:
    """An error for inputs beyond the question that ``program`` does not take ("" when it takes them all)."""
    import inspect

    taken = inspect.signature(program.forward).parameters
    unused = sorted(k for k in row if k not in taken)
    if not unused or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in taken.values()):
        return ""
    return (f"ConfigurationError: {type(program).__name__} takes only a question; {', '.join(unused)} are inputs of "
            "the count programs (dfa, llm-only-count, naive-rag-count, map-count)")


def _rows(model_input: Any) -> list[dict[str, str]]:
    """The request as rows of ``INPUT_FIELDS`` (empty cells left out); other columns are ignored."""
    if hasattr(model_input, "columns"):
        if "question" not in model_input.columns:
            raise ValueError(f"input needs a 'question' column, got columns {list(model_input.columns)}")
        return [_row(record) for record in model_input.to_dict("records")]
    if isinstance(model_input, str):
        return [{"question": model_input}]
    if isinstance(model_input, dict) and "question" in model_input:
        if isinstance(model_input["question"], str):
            return [_row(model_input)]
        columns = {k: list(v) for k, v in model_input.items() if k in INPUT_FIELDS}
        return [_row(dict(zip(columns, values, strict=True))) for values in zip(*columns.values(), strict=True)]
    return [_row(item) if isinstance(item, dict) else {"question": str(item)} for item in model_input]


def _row(record: dict[str, Any]) -> dict[str, str]:
    row = {k: str(v) for k in INPUT_FIELDS if (v := record.get(k)) is not None and v == v and str(v) != ""}
    if "question" not in row:
        raise ValueError(f"every input row needs a question, got {record!r}")
    return row


mlflow.models.set_model(CompiledProgram())
