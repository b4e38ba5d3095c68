"""What a request to the served model asks: one record per question, and the inputs a program takes from it.

MLflow's scoring server hands ``predict`` a DataFrame (``dataframe_records``, ``dataframe_split``, CSV), a list or a
dict of numpy arrays (``inputs``, ``instances``; a single value arrives as a 0-d array), or, called from Python,
plain strings, lists and dicts. ``request_records`` turns each into records and ``check_questions`` refuses a
request whose questions are not text (both raise ``ValueError``: the whole request is refused); ``record_inputs``
checks one record, so that a bad row fails alone and the others are answered.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

INPUT_FIELDS = ("question", "scope", "corpus")  # what a request row may carry; the last two only for count programs


def request_records(model_input: Any) -> list[dict[str, Any]]:
    """One record per question; a request that is not a question table at all raises ``ValueError``."""
    if hasattr(model_input, "columns"):
        if "question" not in model_input.columns:
            raise ValueError(f"input needs a 'question' column, got columns {list(model_input.columns)}")
        return model_input.to_dict("records")
    if _is_single(model_input):
        return [{"question": model_input}]
    if isinstance(model_input, dict):
        if "question" not in model_input:
            raise ValueError(f"input needs a 'question' field, got fields {sorted(model_input)}")
        return _columns_as_records({k: v for k, v in model_input.items() if k in INPUT_FIELDS})
    return [dict(item) if isinstance(item, dict) else {"question": item} for item in model_input]


def check_questions(records: list[dict[str, Any]]) -> None:
    """Refuse the request when a row's question is a value but not text (``[123]``, ``true``): no question is a
    number, and answering its digits as one would hide the client's mistake. Empty cells are left to
    ``record_inputs`` (that row's error)."""
    for number, record in enumerate(records):
        value = _plain(record.get("question"))
        if _is_single(value) and not isinstance(value, str) and not _is_empty(value):
            raise ValueError(f"row {number}: question must be text, got {type(value).__name__} {value!r}; send each "
                             "question as a JSON string")


def record_inputs(program: Any, record: dict[str, Any]) -> tuple[dict[str, str], str]:
    """The keyword inputs ``program`` is called with for ``record`` (empty cells left out), and why the record
    cannot be asked ("" when it can)."""
    inputs, invalid = {}, []
    for key in INPUT_FIELDS:
        value = _plain(record.get(key))
        if not _is_single(value):
            invalid.append(key)
        elif not _is_empty(value):
            inputs[key] = str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
    if invalid:
        return inputs, f"ValueError: {', '.join(invalid)} must be a single value per row"
    if "question" not in inputs:
        return inputs, "ValueError: the row has no question"
    return inputs, _unused(program, inputs) or _missing_scope(inputs)


def _columns_as_records(columns: dict[str, Any]) -> list[dict[str, Any]]:
    """A dict of columns as records; a single value (one scope, one corpus) applies to every question."""
    lengths = {k: len(v) for k, v in columns.items() if not _is_single(v)}
    if not lengths:
        return [columns]
    if len(set(lengths.values())) > 1:
        raise ValueError(f"input columns differ in length: {lengths}")
    rows = next(iter(lengths.values()))
    return [{k: v if k not in lengths else v[i] for k, v in columns.items()} for i in range(rows)]


def _unused(program: Any, inputs: dict[str, str]) -> str:
    """An error for inputs ``program`` does not take ("" when it takes them all)."""
    taken = inspect.signature(program.forward).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in taken.values()):
        return ""
    unused = sorted(k for k in inputs if k not in taken)
    if not unused:
        return ""
    return (f"ConfigurationError: {type(program).__name__} takes only a question; {' and '.join(unused)} "
            f"{'is an input' if len(unused) == 1 else 'are inputs'} of the count programs (dfa and its baselines)")


def _missing_scope(inputs: dict[str, str]) -> str:
    """A corpus whose chunks belong to scopes needs the row's scope: without it the count would run over them all."""
    if "corpus" not in inputs or "scope" in inputs:
        return ""
    from disambig.data.spiderqa import scope_ids, scopes_shown

    try:
        scopes = scope_ids(inputs["corpus"])
    except Exception as exc:  # noqa: BLE001 - an unreadable corpus is this row's error, not the request's
        return f"{type(exc).__name__}: {exc}"
    if not scopes:
        return ""
    return f"ConfigurationError: the row has a corpus but no scope; give one of: {scopes_shown(scopes)}"


def _plain(value: Any) -> Any:
    """A numpy scalar or 0-d array as the Python value it holds."""
    return value.item() if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0) \
        else value


def _is_single(value: Any) -> bool:
    return isinstance(value, str | bytes) or (not isinstance(value, dict) and np.ndim(value) == 0)


def _is_empty(value: Any) -> bool:
    """A missing cell: None, NaN, pandas' NA or a string of only whitespace (``value`` is a single value), as
    ``disambig batch`` reads a question table."""
    import pandas as pd

    return (isinstance(value, str) and not value.strip()) or bool(pd.isna(value))
