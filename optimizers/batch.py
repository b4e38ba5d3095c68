"""Answer a table of questions with a compiled program's MLflow pyfunc model: in this process (``local``) or as a
Spark UDF (``spark``, ``mlflow.pyfunc.spark_udf`` with ``env_manager="local"``) on ``local[N]`` or a cluster.

Both engines load the same models-from-code pyfunc (``serving/model.py`` + JSON state, never a pickled model) and
normalise its rows the same way, so their answers are equal. The program, knobs and retriever come from the
model's manifest; run settings reach it as ``DISAMBIG_*`` variables (set around the load in this process, shipped
as the UDF's ``extra_env`` to Spark executors): nothing is taken from the driver's memory. Rows that fail keep
their error; a re-run with the same output answers only the rows not yet answered (matched by ``id`` when the
input has one, else by question text), failed rows included.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from disambig.data.spark_session import spark_session
from disambig.errors import ConfigurationError
from disambig.optimizers.batch_io import object_column, read_questions, read_table, table_format, write_table
from disambig.optimizers.batch_journal import AnswerJournal
from disambig.settings import Settings

Engine = Literal["local", "spark"]
ENGINES = ("local", "spark")
MODEL_URI_SCHEMES = ("models:/", "runs:/")
ANSWER_COLUMNS = ("long_answer", "interpretations", "passage_ids", "conflicts", "conflict_note", "passages", "trace",
                  "extra", "error")
TRACE_FIELDS = ("lm_calls", "input_tokens", "output_tokens", "reused_prompt_tokens", "retrieval_calls", "seconds")
PRICE_FIELDS = ("cost_usd",)  # null when no call of the row had a known price (``disambig.lm.cost``)
# Rows asked at once: locally one on the in-process model (each is kept as soon as it is answered) and ``--threads``
# on a remote LM (answered at once, kept together), one Spark job per chunk.
CHUNK_ROWS = {"local": 1, "spark": 2000}
# The output table is rewritten once this many rows or seconds have passed since its last write (and at the end);
# rows answered in between are kept in the batch's journal (``disambig.optimizers.batch_journal``).
TABLE_EVERY_ROWS, TABLE_EVERY_SECONDS = 16, 10.0
SPARK_RESULT_TYPE = (
    "question string, long_answer string, "
    "interpretations array<struct<question: string, answer: string, passage_ids: array<string>, score: double>>, "
    "conflicts array<struct<question: string, answers: array<struct<answer: string, passage_ids: array<string>>>>>, "
    "conflict_note string, "
    "passages array<struct<id: string, title: string, text: string>>, "
    "trace struct<lm_calls: long, input_tokens: long, output_tokens: long, reused_prompt_tokens: long, "
    "retrieval_calls: long, seconds: double, cost_usd: double>, "
    "error string, extra string"
)
EXECUTOR_ENV_PREFIXES = ("DISAMBIG_", "HF_", "TOKENIZERS_", "OMP_", "MLFLOW_TRACKING_URI")
EXECUTOR_ENV_SUFFIXES = ("_API_KEY", "_API_BASE", "_BASE_URL")


@dataclass(frozen=True)
class BatchResult:
    """What one ``run_batch`` did: rows answered now (``failed`` of them with an error), rows skipped as already
    answered in the output, and the wall time of the answering."""

    output: Path
    answered: int
    failed: int
    skipped: int
    seconds: float

    @property
    def rows_per_second(self) -> float:
        return self.answered / self.seconds if self.seconds else 0.0


def run_batch(
    model: str,
    input_path: Path,
    output_path: Path,
    engine: Engine = "local",
    settings: Settings | None = None,
    master: str = "local[2]",
    partitions: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> BatchResult:
    """Answer every question of ``input_path`` not yet answered in ``output_path`` and write the merged table.

    Args:
        model: an MLflow model URI (``models:/NAME/VERSION``, ``runs:/ID/program``), an MLflow model folder, or a
            compiled state JSON (``artifacts/PROGRAM/DATASET/NAME.json``, its manifest beside it).
        input_path: JSONL, CSV or Parquet with a ``question`` column; other columns are kept in the output.
        output_path: JSONL, CSV or Parquet; input columns, then ``ANSWER_COLUMNS``.
        engine: ``local`` (this process) or ``spark`` (a Spark UDF over ``partitions`` partitions).
        settings: LM spec, cache directory, threads...; default ``load_settings()``.
        master: the Spark master (``local[N]`` or a cluster URL); ``spark`` only.
        partitions: Spark partitions (default: the master's parallelism); ``spark`` only.
        on_progress: called with (rows answered so far, rows to answer) after each chunk.

    Each answered row is on disk before the next is asked (in the journal beside the output until the table is next
    rewritten), so a killed run loses at most the row it was answering; the next run keeps what it finds.
    """
    from disambig.settings import load_settings

    check_engine(engine, partitions)
    table_format(output_path)  # an output that could not be written is refused before any row is asked
    settings = settings or load_settings()
    inputs = keep_answer_names_free(read_questions(input_path))
    journal = AnswerJournal(output_path)
    previous = fold_journal(read_table(output_path) if output_path.exists() else None, journal, output_path)
    todo = pending_rows(inputs, previous)
    skipped, done, failed, seconds = len(inputs) - len(todo), 0, 0, 0.0
    if len(todo):
        with model_location(model) as location, answerer(engine, location, settings, master, partitions) as answer:
            unwritten, written_at = 0, time.monotonic()
            rows = rows_at_once(engine, settings)
            for start in range(0, len(todo), rows):
                chunk = todo.iloc[start : start + rows]
                began = time.perf_counter()
                answers = answer(list(chunk["question"]))
                seconds += time.perf_counter() - began
                fresh = answered_rows(chunk, answers)
                journal.append(fresh.to_dict("records"))
                previous = merge_rows(previous, fresh)
                unwritten += len(chunk)
                last = start + len(chunk) >= len(todo)
                if last or unwritten >= TABLE_EVERY_ROWS or time.monotonic() - written_at >= TABLE_EVERY_SECONDS:
                    write_table(previous, output_path)
                    journal.clear()
                    unwritten, written_at = 0, time.monotonic()
                done += len(chunk)
                failed += sum(1 for a in answers if a["error"])
                if on_progress is not None:
                    on_progress(done, len(todo))
    return BatchResult(output_path, done, failed, skipped, seconds)


def rows_at_once(engine: Engine, settings: Settings) -> int:
    """Rows handed to the model at once: a Spark job's worth, or locally ``settings.threads`` for a remote LM (the
    pyfunc answers them on that many threads) and 1 for the in-process model, which answers one call at a time."""
    from disambig.lm import parse_spec

    if engine == "spark":
        return CHUNK_ROWS["spark"]
    try:
        local = parse_spec(settings.lm).is_local
    except ConfigurationError:  # a spec only a custom LM factory knows: its LM is not the in-process engine
        local = False
    return CHUNK_ROWS["local"] if local else settings.threads


def fold_journal(previous: Any, journal: AnswerJournal, output_path: Path) -> Any:
    """The output table with the rows a killed run left in ``journal`` merged in (and written, the journal
    emptied), so that the new run starts from one table."""
    kept = journal.table()
    if kept is None:
        return previous
    previous = merge_rows(previous, kept)
    write_table(previous, output_path)
    journal.clear()
    return previous


def check_engine(engine: str, partitions: int | None) -> None:
    if engine not in ENGINES:
        raise ConfigurationError(f"engine {engine!r} is unknown; choose one of {', '.join(ENGINES)}")
    if partitions is not None and partitions < 1:
        raise ConfigurationError(f"partitions={partitions} must be at least 1")


def row_key(row: dict[str, Any]) -> str:
    """A row's identity for resuming: its ``id`` when it has one, else its question text."""
    value = row.get("id")
    return str(value) if value is not None and value == value and str(value) != "" else f"q:{row['question']}"


def pending_rows(inputs: Any, previous: Any) -> Any:
    """Input rows without an answer (no output row, or one with an error) in ``previous``."""
    if previous is None or "error" not in previous.columns:
        return inputs
    answered = {row_key(r) for r in previous.to_dict("records") if not r.get("error")}
    keep = [row_key(r) not in answered for r in inputs.to_dict("records")]
    return inputs[keep]


def keep_answer_names_free(inputs: Any) -> Any:
    """An input column named like an answer column is kept as ``input_NAME``."""
    clashes = [c for c in ANSWER_COLUMNS if c in inputs.columns]
    return inputs.rename(columns={c: f"input_{c}" for c in clashes})


def answered_rows(chunk: Any, answers: list[dict[str, Any]]) -> Any:
    """The chunk's input rows with their answers' columns."""
    fresh = chunk.reset_index(drop=True)
    return fresh.assign(**{c: object_column([a[c] for a in answers], fresh.index) for c in ANSWER_COLUMNS})


def merge_rows(previous: Any, fresh: Any) -> Any:
    """The output table with ``fresh`` answered rows added, or replacing the earlier rows of the same questions."""
    import pandas as pd

    if previous is None:
        return fresh
    replaced = {row_key(r) for r in fresh.to_dict("records")}
    kept = previous[[row_key(r) not in replaced for r in previous.to_dict("records")]]
    return pd.concat([kept, fresh], ignore_index=True)


def answer_row(raw: dict[str, Any]) -> dict[str, Any]:
    """One pyfunc row (``serving.model.ANSWER_FIELDS``, from Python or from Spark's JSON) as the output's columns."""
    interpretations = [
        {"question": i.get("question") or "", "answer": i.get("answer") or "",
         "passage_ids": [str(p) for p in i.get("passage_ids") or []], "score": i.get("score")}
        for i in raw.get("interpretations") or []
    ]
    cited = list(dict.fromkeys(p for i in interpretations for p in i["passage_ids"]))
    trace = raw.get("trace") or {}
    return {
        "long_answer": raw.get("long_answer") or "",
        "interpretations": interpretations,
        "passage_ids": cited,
        "conflicts": [{"question": c.get("question") or "", "answers": [
            {"answer": a.get("answer") or "", "passage_ids": [str(p) for p in a.get("passage_ids") or []]}
            for a in c.get("answers") or []]} for c in raw.get("conflicts") or []],
        "conflict_note": raw.get("conflict_note") or "",
        "passages": [{k: str(p.get(k) or "") for k in ("id", "title", "text")} for p in raw.get("passages") or []],
        "trace": {k: trace.get(k, 0) for k in TRACE_FIELDS} | {k: trace.get(k) for k in PRICE_FIELDS},
        "extra": raw.get("extra") or "{}",
        "error": raw.get("error") or None,
    }


@contextmanager
def model_location(model: str) -> Iterator[str]:
    """Where MLflow finds ``model``: a URI or model folder as given; a compiled state saved as a pyfunc model
    (the same code + JSON state ``disambig compile`` logs) in a temporary folder."""
    if model.startswith(MODEL_URI_SCHEMES) or (Path(model) / "MLmodel").is_file():
        yield model
        return
    state = Path(model)
    if not state.is_file():
        raise ConfigurationError(f"model {model!r} is neither a models:/ or runs:/ URI, an MLflow model folder, "
                                 "nor a compiled state JSON; pass one of those")
    with tempfile.TemporaryDirectory(prefix="disambig-model-") as folder:
        yield save_pyfunc(state, Path(folder) / "model")


def save_pyfunc(state: Path, path: Path) -> str:
    """Save the compiled ``state`` (and its manifest) as a models-from-code pyfunc model at ``path``."""
    import mlflow

    from disambig.optimizers.artifact import MANIFEST, read_manifest
    from disambig.optimizers.tracking import SERVING_CODE

    read_manifest(state)  # a clear error now rather than on every executor
    mlflow.pyfunc.save_model(path=str(path), python_model=str(SERVING_CODE), pip_requirements=["disambig"],
                             artifacts={"state": str(state), "manifest": str(state.parent / MANIFEST)})
    return str(path)


def settings_env(settings: Settings) -> dict[str, str]:
    """``settings`` as the ``DISAMBIG_*`` variables ``load_settings`` reads back (empty fields left out)."""
    from disambig.settings import ENV_PREFIX

    def text(value: Any) -> str:
        return ("1" if value else "0") if isinstance(value, bool) else str(value)

    return {ENV_PREFIX + k.upper(): text(v) for k, v in asdict(settings).items() if v != ""}


def executor_env(settings: Settings) -> dict[str, str]:
    """The variables the model needs on an executor: the run's settings, the process's other ``DISAMBIG_*`` ones
    (LM factory, data root...), offline switches, and LiteLLM provider keys and endpoints for a remote LM."""
    passed = {k: v for k, v in os.environ.items()
              if k.startswith(EXECUTOR_ENV_PREFIXES) or k.endswith(EXECUTOR_ENV_SUFFIXES)}
    return passed | settings_env(settings)


@contextmanager
def environment(variables: dict[str, str]) -> Iterator[None]:
    """``variables`` set in this process for the block, the previous values restored after."""
    saved = {k: os.environ.get(k) for k in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextmanager
def answerer(engine: Engine, location: str, settings: Settings, master: str,
             partitions: int | None) -> Iterator[Callable[[list[str]], list[dict[str, Any]]]]:
    """A function from questions to answer rows, through the pyfunc model in this process or on Spark."""
    if engine == "local":
        yield local_answerer(location, settings)
        return
    with spark_session(master, "disambig-batch") as spark:
        yield spark_answerer(spark, location, settings, partitions)


def local_answerer(location: str, settings: Settings) -> Callable[[list[str]], list[dict[str, Any]]]:
    import mlflow
    import pandas as pd

    with environment(executor_env(settings)):
        model = mlflow.pyfunc.load_model(location)
    return lambda questions: [answer_row(r) for r in model.predict(pd.DataFrame({"question": questions}))]


def spark_answerer(spark: Any, location: str, settings: Settings,
                   partitions: int | None) -> Callable[[list[str]], list[dict[str, Any]]]:
    """Questions → rows through ``mlflow.pyfunc.spark_udf`` (``env_manager="local"``: executors use the installed
    package, nothing is downloaded); the struct result is collected as JSON and read back in question order."""
    import mlflow.pyfunc
    from pyspark.sql.functions import col, struct, to_json

    udf = mlflow.pyfunc.spark_udf(spark, location, result_type=SPARK_RESULT_TYPE, env_manager="local",
                                  extra_env=executor_env(settings))

    def answer(questions: list[str]) -> list[dict[str, Any]]:
        n = partitions or spark.sparkContext.defaultParallelism
        frame = spark.createDataFrame(list(enumerate(questions)), "row long, question string")
        frame = frame.repartition(max(1, min(n, len(questions))))
        rows = frame.select("row", to_json(udf(struct(col("question")))).alias("answer")).collect()
        by_row = {r["row"]: answer_row(json.loads(r["answer"])) for r in rows}
        return [by_row[i] for i in range(len(questions))]

    return answer


class BatchAnswerError(RuntimeError):
    """A question the batch path could not answer; the message is the error its row kept."""


class StoredAnswers:
    """A program stand-in for the evaluation harness: ``(question=...)`` returns the prediction the batch path
    computed for that question, or raises its error, so the existing scoring and report code run unchanged."""

    def __init__(self, rows: dict[str, dict[str, Any]]) -> None:
        self.rows = rows

    def __call__(self, question: str) -> Any:
        row = self.rows.get(question)
        if row is None:
            raise BatchAnswerError(f"question {question!r} was not answered by the batch")
        if row["error"]:
            raise BatchAnswerError(row["error"])
        return prediction_of(row)


def prediction_of(row: dict[str, Any]) -> Any:
    """An answer row as the ``dspy.Prediction`` the program returned (its extra fields, a count..., included)."""
    import dspy

    note = row.get("conflict_note")  # absent from (or NaN in) rows answered before the field existed
    conflicts = row.get("conflicts")
    return dspy.Prediction(long_answer=row["long_answer"], interpretations=row["interpretations"],
                           conflicts=conflicts if isinstance(conflicts, list) else [],
                           conflict_note=note if isinstance(note, str) else "", passages=row["passages"],
                           trace=row["trace"], **json.loads(row["extra"]))


def answer_examples(
    model: str,
    examples: list[Any],
    results_path: Path,
    engine: Engine = "spark",
    settings: Settings | None = None,
    master: str = "local[2]",
    partitions: int | None = None,
) -> StoredAnswers:
    """Answer the examples not yet in the evaluation's ``results_path`` through the batch path, for
    ``run_questions`` to score. Only question-only inputs travel through the pyfunc model."""
    from disambig.evaluation.records import ResultLog
    from disambig.settings import load_settings

    check_engine(engine, partitions)
    extra_inputs = sorted({k for ex in examples for k in ex.inputs().keys()} - {"question"})
    if extra_inputs:
        raise ConfigurationError(f"the batch path passes only the question to the model, but these examples also "
                                 f"take {extra_inputs}; evaluate them with --engine local")
    done = {r.id for r in ResultLog(results_path).load() if not r.failed}
    questions = list(dict.fromkeys(ex.question for ex in examples if ex.id not in done))
    if not questions:
        return StoredAnswers({})
    with model_location(model) as location, answerer(engine, location, settings or load_settings(), master,
                                                     partitions) as answer:
        return StoredAnswers(dict(zip(questions, answer(questions), strict=True)))


@contextmanager
def program_state(name: str, program: Any, retriever: str = "") -> Iterator[str]:
    """An uncompiled ``program`` saved as a compiled state (its seed demos, no optimizer) in a temporary folder,
    so the batch path can serve it like any artifact; ``retriever`` is its ``kind:corpus``."""
    from disambig.optimizers.artifact import save_artifact

    with tempfile.TemporaryDirectory(prefix="disambig-state-") as folder:
        manifest = {"program": name, "retriever": retriever, "optimizer": "none"}
        yield str(save_artifact(program, Path(folder) / f"{name}.json", manifest))
