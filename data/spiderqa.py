"""SpiderQA: count questions over Spider databases rendered as text (DFA paper, A.5.1; spec ``dfa.md`` §1.4).

Each database becomes a text document, one sentence per row written by a per-table template, and is chunked
one row per chunk (``rows_per_chunk`` packs more). Scalar COUNT questions are kept with their gold count (the
gold SQL run on a copy of the database whose text values are trimmed, so ``'Aberdeen '`` matches
``"Aberdeen"``) and their gold evidence chunks (the rows the count counts: the SQL with its projection
replaced by every top-level table's ``rowid``). Paraphrases (same database and SQL) become one question.

Templates: the deterministic one (``"Pets record: pet id is 2001; pet type is cat; ..."``) unless a
``write_template`` callable is given (the CLI passes an LLM, as the paper does), whose template is used only if
it passes ``template_error``; a rejected one falls back and the manifest says why.

The built folder: ``questions.jsonl`` (one row per question in the "aggregation" format, see
``AGGREGATION_FIELDS``), ``corpus.jsonl`` (``{id, title, text, db_id, table}``), ``manifest.json`` (counts,
drops and their reasons, template sources) and ``README.md``. With ``ext=True`` set-returning questions are
also turned into "how many" questions (AGGBench style, spec §1.4.8) in ``questions-ext.jsonl``, kept apart.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sqlite3
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from disambig.data import spiderqa_sql as sq
from disambig.data.atomic import write_json, write_text
from disambig.data.benchmark_folder import check_replaceable
from disambig.errors import ConfigurationError
from disambig.paths import expanded

FORMAT_VERSION = 1
AGGREGATION_FIELDS = ("id", "question", "gold_count", "gold_chunk_ids", "scope", "corpus")
TEXT_TRIM = " \n\t\r"
EXT_RANGE = (2, 29)  # AGGBench's answer sizes (paper §6.2)

# Manual verification, keyed by ``spiderqa_sql.sql_key`` so it also applies to held-back paraphrases.
EXCLUDE: dict[str, str] = {
    "b68e27d70a5e2d79": "Spider gold-SQL quirk: Horsepower is TEXT, so ORDER BY Horsepower DESC picks the string "
                        "'null' rather than the most powerful car; the count does not answer the question",
}


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    primary_key: bool
    placeholder: str


@dataclass(frozen=True)
class TableSchema:
    """What a template writer sees of one table: columns, foreign keys and a few rows."""

    db_id: str
    name: str
    columns: tuple[Column, ...]
    foreign_keys: tuple[str, ...]
    sample_rows: tuple[tuple[Any, ...], ...]

    @property
    def natural(self) -> str:
        return natural(self.name)


@dataclass
class BuildReport:
    """What the builder kept and dropped, and why (also written as ``manifest.json``)."""

    out: str
    questions: int = 0
    questions_ext: int = 0
    chunks: int = 0
    databases: list[str] = field(default_factory=list)
    source_questions: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    dropped_examples: dict[str, list[str]] = field(default_factory=dict)
    dropped_ext: dict[str, int] = field(default_factory=dict)
    templates: dict[str, dict[str, str]] = field(default_factory=dict)
    gold_count_stats: dict[str, float] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)

    def drop(self, reason: str, example: str, ext: bool = False) -> None:
        target = self.dropped_ext if ext else self.dropped
        target[reason] = target.get(reason, 0) + 1
        if not ext:
            self.dropped_examples.setdefault(reason, [])
            if len(self.dropped_examples[reason]) < 3:
                self.dropped_examples[reason].append(example)


class Dropped(Exception):  # noqa: N818 - a reason, not an error
    """A question cannot be kept; the message is the reason recorded in the manifest."""


def natural(identifier: str) -> str:
    """``Has_Pet`` -> ``has pet``, ``StuID`` -> ``stu id``, ``Official_ratings_(millions)`` -> ``official ratings
    (millions)``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|_", " ", identifier)
    return " ".join(spaced.lower().split())


def open_trimmed(path: Path) -> sqlite3.Connection:
    """An in-memory copy of the database whose text values have leading/trailing whitespace removed."""
    source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con = sqlite3.connect(":memory:")
    source.backup(con)
    source.close()
    con.text_factory = lambda b: b.decode("utf-8", errors="replace")
    for table in table_names(con):
        for column in [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]:
            try:
                con.execute(f'UPDATE "{table}" SET "{column}" = trim("{column}", ?) WHERE typeof("{column}") = '
                            "'text'", (TEXT_TRIM,))
            except sqlite3.IntegrityError:  # trimming would make two keys equal: leave that column as it is
                continue
    return con


def table_names(con: sqlite3.Connection) -> list[str]:
    return [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
                                      "'sqlite_%' ORDER BY rowid")]


def table_schemas(con: sqlite3.Connection, db_id: str, samples: int = 3) -> list[TableSchema]:
    schemas = []
    for table in table_names(con):
        info = list(con.execute(f'PRAGMA table_info("{table}")'))
        used: set[str] = set()
        columns = []
        for position, row in enumerate(info):
            key = re.sub(r"\W+", "_", row[1]).strip("_") or f"column{position}"
            while key in used:
                key += "_"
            used.add(key)
            columns.append(Column(row[1], row[2] or "", bool(row[5]), key))
        fks = tuple(f"{r[3]} -> {r[2]}.{r[4]}" for r in con.execute(f'PRAGMA foreign_key_list("{table}")'))
        rows = tuple(con.execute(f'SELECT * FROM "{table}" LIMIT {samples}'))
        schemas.append(TableSchema(db_id, table, tuple(columns), fks, rows))
    return schemas


def default_template(schema: TableSchema) -> str:
    """``"Pets record: pet id is {PetID}; pet type is {PetType}."``: every column once, in schema order."""
    clauses = "; ".join(f"{natural(c.name)} is {{{c.placeholder}}}" for c in schema.columns)
    return f"{schema.natural[:1].upper()}{schema.natural[1:]} record: {clauses}."


def template_error(template: str, schema: TableSchema) -> str:
    """Why ``template`` cannot render ``schema``'s rows ("" if it can): each placeholder once, nothing else."""
    if not isinstance(template, str) or not template.strip():
        return "empty template"
    found = re.findall(r"\{([^{}]*)\}", template)
    wanted = Counter(c.placeholder for c in schema.columns)
    if Counter(found) != wanted:
        missing = sorted(set(wanted) - set(found))
        extra = sorted(set(found) - set(wanted))
        twice = sorted(k for k, n in Counter(found).items() if n > 1)
        return f"placeholders differ from the columns (missing {missing}, unknown {extra}, repeated {twice})"
    if "{" in re.sub(r"\{[^{}]*\}", "", template) or "}" in re.sub(r"\{[^{}]*\}", "", template):
        return "unbalanced braces"
    return ""


def render(template: str, schema: TableSchema, row: tuple[Any, ...]) -> str:
    """One row as text: each placeholder replaced by the value as stored (NULL as ``unknown``)."""
    values = {c.placeholder: "unknown" if v is None else str(v) for c, v in zip(schema.columns, row, strict=True)}
    return re.sub(r"\{([^{}]*)\}", lambda m: values[m.group(1)], template)


def choose_templates(
    schemas: list[TableSchema], write_template: Callable[[TableSchema], str] | None, report: BuildReport
) -> dict[str, str]:
    """Per table: the written template when it validates, else the deterministic one (recorded in ``report``)."""
    chosen = {}
    for schema in schemas:
        template, source = default_template(schema), "deterministic"
        if write_template is not None:
            try:
                candidate = write_template(schema)
                error = template_error(candidate, schema)
            except Exception as exc:  # noqa: BLE001 - any failure of the writer falls back to the default template
                candidate, error = "", f"writer failed: {type(exc).__name__}: {exc}"
            if error:
                source = f"deterministic (LLM template rejected: {error})"
            else:
                template, source = candidate, "llm"
        chosen[schema.name] = template
        report.templates[f"{schema.db_id}.{schema.name}"] = {"source": source, "template": template}
    return chosen


def render_database(
    con: sqlite3.Connection, schemas: list[TableSchema], templates: dict[str, str], rows_per_chunk: int = 1
) -> tuple[list[dict[str, Any]], dict[tuple[str, int], str]]:
    """Chunks of one database (tables in schema order) and the chunk id of every ``(table, rowid)``."""
    chunks, where = [], {}
    for schema in schemas:
        rows = list(con.execute(f'SELECT rowid, * FROM "{schema.name}" ORDER BY rowid'))
        for start in range(0, len(rows), rows_per_chunk):
            group = rows[start:start + rows_per_chunk]
            chunk_id = f"spider/{schema.db_id}/{schema.name}/{group[0][0]}"
            text = " ".join(render(templates[schema.name], schema, tuple(r[1:])) for r in group)
            chunks.append({"id": chunk_id, "title": f"{schema.db_id} — {schema.natural}", "text": text,
                           "db_id": schema.db_id, "table": schema.name})
            where.update({(schema.name.lower(), int(r[0])): chunk_id for r in group})
    return chunks, where


def chunk_count(con: sqlite3.Connection, schemas: list[TableSchema], rows_per_chunk: int = 1) -> int:
    """How many chunks ``render_database`` makes of these tables, from their row counts alone."""
    return sum(-(-con.execute(f'SELECT count(*) FROM "{s.name}"').fetchone()[0] // rows_per_chunk) for s in schemas)


def count_gold(
    con: sqlite3.Connection, raw: sqlite3.Connection, db_id: str, sql: str, where: dict[tuple[str, int], str]
) -> dict[str, Any]:
    """Gold count, evidence chunks and per-item evidence of one scalar COUNT question.

    Raises:
        Dropped: the question cannot be kept (the message says why).
    """
    query = sq.parse(sql)
    if query is None:
        raise Dropped("count over a FROM sub-query or set operation: no table rows to point at as evidence")
    counted = sq.scalar_count(query)
    if counted is None:
        raise Dropped("not a scalar COUNT question")
    distinct, argument = counted
    y = _scalar(con, sql)
    if y == 0:
        raise Dropped("gold count 0 (no evidence; NACE undefined)")
    selected = [] if argument == "*" else [argument]
    try:
        rows = list(con.execute(sq.evidence_sql(query, selected)))
    except sqlite3.Error as exc:
        raise Dropped(f"evidence SQL fails: {exc}") from None
    n_values = len(selected)
    items: dict[Any, list[str]] = {}
    for number, row in enumerate(rows):
        if n_values and row[0] is None:
            continue
        key = row[0] if distinct else number
        ids = [where.get((ref.table.lower(), int(rowid))) for ref, rowid in zip(query.tables, row[n_values:],
                                                                                  strict=True)]
        if None in ids:
            raise Dropped("evidence row not found among the rendered rows")
        items.setdefault(key, [])
        items[key].extend(i for i in ids if i not in items[key])
    if len(items) != y:
        raise Dropped(f"evidence does not match the count ({len(items)} counted items, gold {y})")
    chunk_ids = list(dict.fromkeys(i for ids in items.values() for i in ids))
    kind = "count-distinct" if distinct else "count-star" if argument == "*" else "count-column"
    return {"gold_count": y, "raw_sql_count": _scalar(raw, sql, strict=False), "gold_chunk_ids": chunk_ids,
            "gold_items": list(items.values()), "evidence_sql": sq.evidence_sql(query, selected), "query_type": kind,
            "tables": [ref.table for ref in query.tables]}


def enumeration_gold(
    con: sqlite3.Connection, sql: str, where: dict[tuple[str, int], str], bounds: tuple[int, int] = EXT_RANGE
) -> dict[str, Any]:
    """The extension's gold: |distinct result rows| of a set-returning query and the rows behind each.

    Raises:
        Dropped: not a plain enumeration query, an answer size outside ``bounds``, or evidence that does not match.
    """
    query = sq.parse(sql)
    selected = sq.set_returning(query) if query is not None else None
    if not selected:
        raise Dropped("not a plain set-returning question")
    try:
        answer = {tuple(r) for r in con.execute(sql)}
        rows = list(con.execute(sq.evidence_sql(query, selected)))
    except sqlite3.Error as exc:
        raise Dropped(f"SQL fails: {exc}") from None
    if not bounds[0] <= len(answer) <= bounds[1]:
        raise Dropped(f"answer size outside {bounds[0]}-{bounds[1]}")
    items: dict[tuple, list[str]] = {}
    for row in rows:
        ids = [where.get((ref.table.lower(), int(r))) for ref, r in zip(query.tables, row[len(selected):], strict=True)]
        if None in ids:
            raise Dropped("evidence row not found among the rendered rows")
        bucket = items.setdefault(tuple(row[:len(selected)]), [])
        bucket.extend(i for i in ids if i not in bucket)
    if set(items) != answer:
        raise Dropped("evidence rows do not give the answer set")
    return {"gold_count": len(answer), "gold_chunk_ids": list(dict.fromkeys(i for v in items.values() for i in v)),
            "gold_items": list(items.values()), "evidence_sql": sq.evidence_sql(query, selected),
            "query_type": "enumeration", "tables": [ref.table for ref in query.tables]}


def _scalar(con: sqlite3.Connection, sql: str, strict: bool = True) -> int | None:
    try:
        rows = list(con.execute(sql))
    except sqlite3.Error as exc:
        if not strict:
            return None
        raise Dropped(f"gold SQL fails: {exc}") from None
    if len(rows) != 1 or len(rows[0]) != 1 or not isinstance(rows[0][0], int):
        if not strict:
            return None
        raise Dropped("gold SQL does not return one integer")
    return int(rows[0][0])


def build_spiderqa(
    questions: Path,
    databases: Path,
    out: Path,
    write_template: Callable[[TableSchema], str] | None = None,
    rows_per_chunk: int = 1,
    ext: bool = False,
    max_rows_per_question: float | None = None,
    max_chunks: int | None = None,
) -> BuildReport:
    """Build the benchmark folder ``out`` from a Spider question file and its database folder.

    Args:
        questions: Spider-format JSON (a list of ``{db_id, question, query}``) or JSONL.
        databases: folder with ``<db_id>.sqlite`` (or ``<db_id>/<db_id>.sqlite``) files.
        out: folder to write (created): new, empty, or a SpiderQA folder, whose files are replaced.
        write_template: ``f(TableSchema) -> template`` (an LLM); None uses the deterministic templates.
        rows_per_chunk: rows packed into one chunk (consecutive rows of one table).
        ext: also write the AGGBench-style extension (``questions-ext.jsonl``).
        max_rows_per_question: drop databases whose rows / kept questions exceed this (paper: "moderate cases").
        max_chunks: drop databases rendered as more chunks than this (OURS: a cost cap; a question's scope is its
            database, and a per-chunk reader pays one LM call per chunk).
    """
    if rows_per_chunk < 1:
        raise ValueError(f"rows_per_chunk={rows_per_chunk} must be at least 1")
    if max_chunks is not None and max_chunks < 1:
        raise ValueError(f"max_chunks={max_chunks} must be at least 1")
    if max_rows_per_question is not None and not 0 < max_rows_per_question < math.inf:
        raise ValueError(f"max_rows_per_question={max_rows_per_question} must be a positive number (rows per kept "
                         "question)")
    check_replaceable(out, "aggregation", "disambig data spiderqa")
    source = read_questions(questions)
    check_databases(databases, sorted({row["db_id"] for row in source}))
    report = BuildReport(out=str(out), source_questions=len(source),
                         options={"rows_per_chunk": rows_per_chunk, "ext": ext, "templates": "llm" if write_template
                                  else "deterministic", "max_rows_per_question": max_rows_per_question,
                                  "max_chunks": max_chunks,
                                  "questions_file": str(questions), "databases": str(databases)})
    by_db: dict[str, list[tuple[int, dict]]] = {}
    for index, row in enumerate(source):
        by_db.setdefault(row["db_id"], []).append((index, row))
    kept, kept_ext, corpus = [], [], []
    for db_id in sorted(by_db):
        path = database_file(databases, db_id)
        if path is None:
            for _, row in by_db[db_id]:
                report.drop("database file missing", row["question"])
            continue
        con, raw = open_trimmed(path), sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        schemas = table_schemas(con, db_id)
        capped = max_chunks is not None and chunk_count(con, schemas, rows_per_chunk) > max_chunks
        templates = choose_templates(schemas, None if capped else write_template, report)  # no LM call on a drop
        chunks, where = render_database(con, schemas, templates, rows_per_chunk)
        questions_here = _select(db_id, by_db[db_id], con, raw, where, report)
        extension = _select_ext(db_id, by_db[db_id], con, where, report) if ext else []
        rows_total = sum(1 for _ in chunks) * rows_per_chunk
        if questions_here and max_rows_per_question and rows_total / len(questions_here) > max_rows_per_question:
            for q in questions_here:
                report.drop("database too large for its number of questions (max_rows_per_question)", q["question"])
            questions_here = []
        if capped:
            reason = f"database larger than {max_chunks} chunks (max_chunks)"
            for q in questions_here:
                report.drop(reason, q["question"])
            for q in extension:
                report.drop(reason, q["question"], ext=True)
            questions_here, extension = [], []
        if questions_here or extension:
            corpus.extend(chunks)
            report.databases.append(db_id)
        kept.extend(questions_here)
        kept_ext.extend(extension)
        con.close()
        raw.close()
    write_benchmark(out, kept, kept_ext if ext else None, corpus, report)
    return report


def _select(db_id: str, rows: list[tuple[int, dict]], con: sqlite3.Connection, raw: sqlite3.Connection,
            where: dict, report: BuildReport) -> list[dict[str, Any]]:
    kept: dict[str, dict[str, Any]] = {}
    for index, row in rows:
        key = sq.sql_key(db_id, row["query"])
        label = f"{db_id}: {row['question']}"
        if key in kept:
            kept[key]["paraphrases"].append(row["question"])
            report.drop("paraphrase of a kept question (same database and SQL)", label)
            continue
        kind = sq.question_class(row["query"])
        if kind != "scalar count":
            report.drop(f"not a scalar COUNT question ({kind})", label)
            continue
        if key in EXCLUDE:
            report.drop(f"verification list: {EXCLUDE[key]}", label)
            continue
        try:
            gold = count_gold(con, raw, db_id, row["query"], where)
        except Dropped as reason:
            report.drop(str(reason), label)
            continue
        kept[key] = {"id": f"spiderqa/{db_id}/{key}", "dataset": "spiderqa", "variant": "strict", "db_id": db_id,
                     "scope": db_id, "corpus": "corpus.jsonl", "question": row["question"], "paraphrases": [],
                     "gold_sql": row["query"], "source_index": index, **gold}
    return list(kept.values())


def _select_ext(db_id: str, rows: list[tuple[int, dict]], con: sqlite3.Connection, where: dict,
                report: BuildReport) -> list[dict[str, Any]]:
    kept: dict[str, dict[str, Any]] = {}
    for index, row in rows:
        key = sq.sql_key(db_id, row["query"])
        if key in kept:
            kept[key]["paraphrases"].append(row["question"])
            continue
        try:
            gold = enumeration_gold(con, row["query"], where)
        except Dropped as reason:
            report.drop(str(reason), row["question"], ext=True)
            continue
        question = f"How many distinct answers are there to the question: {row['question'].strip()}"
        kept[key] = {"id": f"spiderqa-ext/{db_id}/{key}", "dataset": "spiderqa-ext", "variant": "ext",
                     "db_id": db_id, "scope": db_id, "corpus": "corpus.jsonl", "question": question,
                     "source_question": row["question"], "paraphrases": [], "gold_sql": row["query"],
                     "source_index": index, **gold}
    return list(kept.values())


def read_questions(path: Path) -> list[dict[str, Any]]:
    """Spider-format rows from a JSON list or JSONL file; every row needs ``db_id``, ``question``, ``query``."""
    if not path.is_file():
        raise ConfigurationError(f"question file {str(path)!r} does not exist")
    try:
        text = path.read_text(encoding="utf-8")
        listed = text.lstrip().startswith("[")
        rows = json.loads(text) if listed else [json.loads(line) for line in text.splitlines() if line.strip()]
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        reason = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else f"not JSON ({exc.msg})"
        raise ConfigurationError(f"question file {str(path)!r} is {reason}; give Spider's dev.json (a JSON list of "
                                 "{db_id, question, query}) or one such object a line") from None
    if not rows:
        raise ConfigurationError(f"question file {str(path)!r} holds no question")
    for number, row in enumerate(rows, 1):
        if not isinstance(row, dict):
            raise ConfigurationError(f"{path}: question {number} is a JSON {type(row).__name__}, not an object of "
                                     "db_id, question and query")
        missing = [k for k in ("db_id", "question", "query") if k not in row]
        if missing:
            raise ConfigurationError(f"{path}: question {number} lacks {', '.join(missing)}; Spider rows need "
                                     "db_id, question and query")
        wrong = [k for k in ("db_id", "question", "query") if not isinstance(row[k], str)]
        if wrong:
            raise ConfigurationError(f"{path}: question {number}'s {', '.join(wrong)} must be text")
    return rows


def check_databases(folder: Path, db_ids: list[str]) -> None:
    """Refuse a database folder holding none of the databases the questions name (the build would drop every
    question and write an empty benchmark)."""
    if not any(database_file(folder, db_id) for db_id in db_ids):
        raise ConfigurationError(f"--databases {str(folder)!r} holds none of the {len(db_ids)} database(s) the "
                                 f"questions name (looked for {db_ids[0]}.sqlite and {db_ids[0]}/{db_ids[0]}.sqlite); "
                                 "give the database folder of the Spider release")


def database_file(folder: Path, db_id: str) -> Path | None:
    for candidate in (folder / f"{db_id}.sqlite", folder / db_id / f"{db_id}.sqlite"):
        if candidate.is_file():
            return candidate
    return None


def write_benchmark(out: Path, questions: list[dict], extension: list[dict] | None, corpus: list[dict],
                    report: BuildReport) -> None:
    out.mkdir(parents=True, exist_ok=True)
    report.questions, report.chunks = len(questions), len(corpus)
    report.questions_ext = len(extension or [])
    counts = sorted(q["gold_count"] for q in questions)
    if counts:
        report.gold_count_stats = {"min": counts[0], "median": counts[len(counts) // 2], "max": counts[-1],
                                   "gold_chunks": sum(len(q["gold_chunk_ids"]) for q in questions)}
    _write_jsonl(out / "questions.jsonl", questions)
    _write_jsonl(out / "corpus.jsonl", corpus)
    if extension is not None:
        _write_jsonl(out / "questions-ext.jsonl", extension)
    manifest = {"format": "aggregation", "format_version": FORMAT_VERSION, **asdict(report),
                "corpus_sha1": hashlib.sha1((out / "corpus.jsonl").read_bytes()).hexdigest()}
    write_json(out / "manifest.json", manifest, indent=1)
    write_text(out / "README.md", readme(report))


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    write_text(path, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))


def readme(report: BuildReport) -> str:
    drops = "\n".join(f"| {reason} | {n} |" for reason, n in sorted(report.dropped.items(), key=lambda x: -x[1]))
    return f"""# SpiderQA (built by `disambig data spiderqa`)

Count questions over Spider databases rendered as text, after the DFA paper's SpiderQA (A.5.1). Spider is
CC BY-SA 4.0 (Yu et al. 2018); this folder is derived from it and shares its licence.

* `questions.jsonl` — {report.questions} questions in the "aggregation" format: `id`, `question`, `gold_count`
  (the gold SQL's value on a copy of the database with trimmed text values), `gold_chunk_ids` (the rows the
  count counts), `gold_items` (per counted item, its chunks), `scope` (the database whose chunks the question
  is asked over), `corpus` (the chunk file, relative to this folder), `paraphrases`, `gold_sql`,
  `evidence_sql`, `raw_sql_count` (the SQL on the untrimmed file), `query_type`, `source_index`.
* `corpus.jsonl` — {report.chunks} chunks `{{id, title, text, db_id, table}}`, id `spider/DB/TABLE/ROWID`,
  {report.options.get('rows_per_chunk')} row(s) per chunk, rendered with {report.options.get('templates')} templates
  (see `manifest.json`, `templates`).
* `questions-ext.jsonl` (only with `--ext`) — {report.questions_ext} set-returning questions turned into
  "how many distinct answers" questions (AGGBench style, a deviation from the paper): report them apart.
* `manifest.json` — options, counts, every drop reason with examples, the template of every table.

Databases: {', '.join(report.databases)}.

Questions read: {report.source_questions}. Dropped, by reason:

| reason | questions |
| --- | --- |
{drops}

Evaluate a program on it: `disambig eval dfa --dataset {report.out}`.
"""


def aggregation_example(row: dict[str, Any], base: Path, where: str, dataset: str) -> Any:
    """One "aggregation" row as a ``dspy.Example`` (inputs ``question``, ``scope``, ``corpus``).

    ``corpus`` becomes an absolute path (a relative one is read from ``base``, the question file's folder).
    """
    import dspy

    missing = [k for k in AGGREGATION_FIELDS if k not in row]
    if missing:
        raise ConfigurationError(f"{where}: missing field(s) {', '.join(missing)} of the aggregation format")
    corpus = expanded(row["corpus"])
    fields = {k: v for k, v in row.items() if k not in ("id", "question", "corpus", "dataset")}
    return dspy.Example(
        id=str(row["id"]), question=row["question"], corpus=str(corpus if corpus.is_absolute() else base / corpus),
        dataset=row.get("dataset") or dataset, interpretations=[], long_answers=[], evidence=[], **fields,
    ).with_inputs("question", "scope", "corpus")


def load_scope(corpus: str | Path, scope: str | None = None) -> list[dict[str, Any]]:
    """The chunks of an aggregation corpus (JSONL ``{id, title, text, db_id?}``), only ``scope``'s when given."""
    chunks = _read_corpus(str(expanded(corpus).resolve()))
    if not scope:
        return list(chunks)
    picked = [c for c in chunks if c.get("db_id") == scope]
    if not picked:
        raise ConfigurationError(f"scope {scope!r} has no chunks in {corpus}; scopes are the chunks' db_id values")
    return picked


def scope_ids(corpus: str | Path) -> list[str]:
    """The scopes of an aggregation corpus (its chunks' ``db_id`` values), sorted."""
    return sorted({str(c["db_id"]) for c in _read_corpus(str(expanded(corpus).resolve())) if c["db_id"]})


def scopes_shown(scopes: list[str], first: int = 20) -> str:
    """``scopes`` for an error message: the first ``first`` of them, then how many there are."""
    return ", ".join(scopes[:first]) + (f", ... ({len(scopes)} in all)" if len(scopes) > first else "")


@lru_cache(maxsize=4)
def _read_corpus(path: str) -> tuple[dict[str, Any], ...]:
    file = Path(path)
    if not file.is_file():
        raise ConfigurationError(f"corpus file {path!r} does not exist")
    rows = [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines() if line.strip()]
    return tuple({"id": str(r["id"]), "title": str(r.get("title") or ""), "text": str(r["text"]),
                  "db_id": r.get("db_id")} for r in rows)
