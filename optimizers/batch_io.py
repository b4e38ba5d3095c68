"""Question and answer tables on disk for ``disambig batch``: JSONL, CSV or Parquet, chosen by the file suffix.

Answer columns holding lists or objects (interpretations, cited passage ids, conflicts, passages, trace) are nested in
JSONL and Parquet and JSON-encoded strings in CSV; reading a CSV decodes them back.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from disambig.data.atomic import write_bytes, write_text
from disambig.errors import ConfigurationError

SUFFIXES = (".jsonl", ".csv", ".parquet")
NESTED_COLUMNS = ("interpretations", "passage_ids", "conflicts", "passages", "trace")


def table_format(path: Path) -> str:
    """``jsonl``, ``csv`` or ``parquet`` from the suffix (``.json`` reads as JSONL)."""
    suffix = ".jsonl" if path.suffix.lower() == ".json" else path.suffix.lower()
    if suffix not in SUFFIXES:
        raise ConfigurationError(f"{str(path)!r} has suffix {path.suffix!r}; use one of {', '.join(SUFFIXES)}")
    return suffix[1:]


def read_table(path: Path) -> Any:
    """The file as a pandas DataFrame, every column kept; an ``error`` column holds None where there is none."""
    return _with_plain_errors(_read(path))


def table_of(rows: list[dict[str, Any]]) -> Any:
    """Rows read back from JSON lines (``row_line``) as the DataFrame ``read_table`` gives for the same rows."""
    import pandas as pd

    return _with_plain_errors(pd.DataFrame(rows))


def row_line(row: dict[str, Any]) -> str:
    """One table row as a line of JSON (numpy values as plain ones), as a JSONL table stores it."""
    return json.dumps(_plain(row), ensure_ascii=False, default=str)


def _with_plain_errors(frame: Any) -> Any:
    if "error" in frame.columns:
        frame["error"] = object_column([e if isinstance(e, str) and e else None for e in frame["error"]], frame.index)
    return frame


def object_column(values: list[Any], index: Any = None) -> Any:
    """``values`` as a pandas object column (pandas 3 would turn None among strings into NaN)."""
    import pandas as pd

    return pd.Series(values, index=index, dtype=object)


def _read(path: Path) -> Any:
    import pandas as pd

    if not path.is_file():
        raise ConfigurationError(f"file {str(path)!r} does not exist")
    kind = table_format(path)
    if kind == "parquet":
        frame = pd.read_parquet(path)
        for column in set(NESTED_COLUMNS) & set(frame.columns):
            frame[column] = [_plain(v) for v in frame[column]]
        return frame
    if kind == "csv":
        from disambig.data.jsonl import check_text

        check_text(path)
        try:
            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
            reason = str(exc).strip().splitlines()[-1]
            raise ConfigurationError(f"{str(path)!r} is not a CSV table ({reason}); give a header line naming the "
                                     "columns, then one row per line") from None
        for column in sorted(set(NESTED_COLUMNS) & set(frame.columns)):
            frame[column] = [_nested(v, path, column, row) for row, v in enumerate(frame[column], 1)]
        return frame
    from disambig.data.jsonl import read_jsonl

    return pd.DataFrame([row for _, row in read_jsonl(path)])


def read_questions(path: Path) -> Any:
    """The question table: it must have a ``question`` column; rows with an empty question are refused."""
    frame = read_table(path)
    if "question" not in frame.columns:
        raise ConfigurationError(f"{str(path)!r} has no 'question' column (columns: {list(frame.columns)}); "
                                 "name the column of questions 'question'")
    empty = [i for i, q in enumerate(frame["question"]) if not isinstance(q, str) or not q.strip()]
    if empty:
        raise ConfigurationError(f"{str(path)!r} rows {empty[:5]} have no question text; fill or drop them")
    return frame.reset_index(drop=True)


def write_table(frame: Any, path: Path) -> Path:
    """Write ``frame`` in the format of ``path``'s suffix, atomically (a reader never sees half a file)."""
    kind = table_format(path)
    if kind == "parquet":
        data = io.BytesIO()
        frame.to_parquet(data, index=False)
        return write_bytes(path, data.getvalue())
    if kind == "csv":
        encoded = frame.copy()
        for column in set(NESTED_COLUMNS) & set(encoded.columns):
            encoded[column] = [json.dumps(v, ensure_ascii=False) for v in encoded[column]]
        return write_text(path, encoded.to_csv(index=False))
    return write_text(path, "".join(f"{row_line(row)}\n" for row in frame.to_dict("records")))


def _nested(text: str, path: Path, column: str, row: int) -> Any:
    """A CSV cell of a nested column (``NESTED_COLUMNS``: lists and objects stored as JSON text), read back."""
    try:
        return json.loads(text) if text else None
    except json.JSONDecodeError:
        raise ConfigurationError(f"{str(path)!r} row {row}: column {column!r} is not the JSON a batch table "
                                 "stores there; fix the cell or leave it empty") from None


def _plain(value: Any) -> Any:
    """Arrays and numpy scalars (as Parquet reads them back) as lists and numbers; NaN (pandas' missing) as None."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist"):
        return _plain(value.tolist())
    return None if isinstance(value, float) and value != value else value
