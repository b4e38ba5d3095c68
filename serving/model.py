"""MLflow models-from-code entry: a pyfunc that loads a compiled program from its JSON state.

``disambig compile`` logs this file as the model's code and the state + manifest as its artifacts, so
nothing is pickled. The program, its knobs and its retriever (kind and corpus) come from the manifest logged with
the state; run settings (LM spec, judge LM, cache directory of the indexes, threads...) from the ``DISAMBIG_*``
variables of the process (default: the embedded model), which ``disambig batch`` sets for Spark executors. The LM
and the loaded program are kept per process (``disambig.serving.cache``), so a Spark worker that loads
the model for every task builds them once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mlflow
from mlflow.exceptions import MlflowException
from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE
from mlflow.pyfunc import PythonModel

from disambig.serving.input import check_questions, record_inputs, request_records

ANSWER_FIELDS = ("question", "long_answer", "interpretations", "conflicts", "conflict_note", "passages", "trace",
                 "error", "extra")


class BadRequest(MlflowException, ValueError):
    """A request that is not a table of questions; MLflow's scoring server answers it with HTTP 400 and this
    message (any other exception would reach the client as "unexpected error", its reason hidden)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, error_code=INVALID_PARAMETER_VALUE)


class CompiledProgram(PythonModel):
    """``predict`` takes questions (a list, or a DataFrame with a ``question`` column) and returns one answer per
    question: ``ANSWER_FIELDS``, where ``error`` is "" for an answered question and the exception otherwise (a failed
    question never stops the others), ``conflicts`` the readings the passages answer differently (``[{question,
    answers: [{answer, passage_ids}]}]``, empty when none or when the program finds none), ``conflict_note`` the
    sentence about them that ends the long answer ("" when none), and ``extra`` is the JSON of any other prediction
    field (a count, ...).

    A count program (``dfa``, its baselines) counts over chunks, so its rows also carry ``corpus`` (a chunk file on
    the server, e.g. a built SpiderQA folder's ``corpus.jsonl``) and ``scope`` (a database id in it): DataFrame
    columns, lists of dicts, or a dict of columns (``disambig.serving.input``).

    On a remote LM the records of one call are answered on up to ``DISAMBIG_THREADS`` threads at once (results in
    record order); the in-process model answers them one after another. Passages are framed as
    ``DISAMBIG_PASSAGE_FRAMING`` says (``disambig serve --passage-framing``; default screened)."""

    def load_context(self, context: Any) -> None:
        from disambig.lm.parallel import question_workers
        from disambig.lm.runtime import default_adapter
        from disambig.serving.cache import shared_lm, shared_program
        from disambig.settings import load_settings

        settings = load_settings()
        self.program = shared_program(Path(context.artifacts["state"]), settings)
        self.lm = shared_lm(settings)
        self.adapter = default_adapter()
        self.workers = question_workers(self.lm, settings.threads)
        self.framing = settings.passage_framing

    def predict(self, context, model_input, params=None):  # noqa: ANN001, ANN201 - MLflow infers schemas from hints
        import dspy

        from disambig.lm.parallel import ordered_map
        from disambig.programs.context import DEFAULT_FRAMING, passage_framing

        try:
            records = request_records(model_input)
            check_questions(records)
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        with dspy.context(lm=self.lm, adapter=self.adapter), passage_framing(getattr(self, "framing", DEFAULT_FRAMING)):
            return ordered_map(lambda record: _answer(self.program, record), records, getattr(self, "workers", 1))


def _answer(program: Any, record: dict[str, Any]) -> dict[str, Any]:
    """One record's answer; an exception (or a record that cannot be asked) becomes the row's ``error``, with what
    the attempt cost."""
    from dataclasses import asdict

    from disambig.lm.usage import measured

    inputs, error = record_inputs(program, record)
    question = inputs.get("question", "")
    prediction = None
    with measured() as attempt:
        try:
            prediction = None if error else program(**inputs)
        except Exception as exc:  # noqa: BLE001 - one bad question must not stop the batch; the error is kept
            error = f"{type(exc).__name__}: {exc}"
    if error:
        return {"question": question, "long_answer": "", "interpretations": [], "conflicts": [], "conflict_note": "",
                "passages": [], "trace": asdict(attempt), "error": error, "extra": "{}"}
    values = {k: prediction[k] for k in prediction.keys()} if hasattr(prediction, "keys") else {}
    extra = {k: v for k, v in values.items() if k not in ANSWER_FIELDS}
    return {"question": question, "long_answer": str(values.get("long_answer") or ""),
            "interpretations": list(values.get("interpretations") or []),
            "conflicts": list(values.get("conflicts") or []), "conflict_note": str(values.get("conflict_note") or ""),
            "passages": list(values.get("passages") or []), "trace": dict(values.get("trace") or {}),
            "error": "", "extra": json.dumps(extra, default=str, ensure_ascii=False)}


mlflow.models.set_model(CompiledProgram())
