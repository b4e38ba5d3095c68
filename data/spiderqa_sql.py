"""Just enough SQL reading to build SpiderQA: find a query's top-level clauses and rewrite its projection.

Spider's gold SQL is simple (one top-level SELECT, joins, sub-queries in WHERE), so a masked scan suffices:
string literals and everything inside parentheses are blanked out, and the top-level keywords are found in
what is left. No SQL is executed here.

Seed: DFA (004) A.5.1 — "we execute both the original SQL query and a slightly modified version on the target
database to obtain the final answer and supporting evidence"; the modification is ours (spec §1.4.3): the
projection becomes the counted value plus the ``rowid`` of every top-level table, one row per counted join row.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

CLAUSES = r"\b(where|group\s+by|having|order\s+by|limit)\b"
SET_OPERATORS = r"\b(union|intersect|except)\b"
AGGREGATES = r"\b(count|sum|avg|min|max|group_concat|total)\s*\("
JOIN = r"\b(?:natural\s+)?(?:(?:left|right|full)\s+(?:outer\s+)?|inner\s+|cross\s+)?join\b"


@dataclass(frozen=True)
class TableRef:
    """A table of the top-level FROM clause and the name the query refers to it by."""

    table: str
    alias: str


@dataclass(frozen=True)
class Query:
    """A query split at its top level: projection text, FROM-onward text and the FROM clause's tables."""

    sql: str
    projection: str
    rest: str
    tables: tuple[TableRef, ...]
    masked_projection: str
    masked_rest: str


def normalise(sql: str) -> str:
    """Lower-cased, whitespace-collapsed SQL with double-quoted literals single-quoted and no final ``;``."""
    text = " ".join(sql.replace('"', "'").split()).rstrip(";").strip().lower()
    return re.sub(r"\s*([(),=<>])\s*", r"\1", text)


def sql_key(db_id: str, sql: str) -> str:
    """A stable key for one question's SQL on one database (paraphrases share it)."""
    return hashlib.sha1(f"{db_id}\n{normalise(sql)}".encode()).hexdigest()[:16]


def mask(sql: str) -> str:
    """``sql`` with literals and the inside of parentheses replaced by ``_`` (same length, same positions)."""
    out, depth, quote = [], 0, ""
    for ch in sql:
        if quote:
            out.append("_")
            if ch == quote:
                quote = ""
            continue
        if ch in "'\"`":
            quote = ch
            out.append("_")
        elif ch == "(":
            out.append("(" if depth == 0 else "_")
            depth += 1
        elif ch == ")":
            depth = max(depth - 1, 0)
            out.append(")" if depth == 0 else "_")
        else:
            out.append("_" if depth else ch)
    return "".join(out)


def parse(sql: str) -> Query | None:
    """The top-level parts of a single SELECT; None for set operations or a FROM clause with a sub-query."""
    text = sql.strip().rstrip(";").strip()
    masked = mask(text)
    start = re.match(r"\s*select\b", masked, re.I)
    from_ = re.search(r"\bfrom\b", masked, re.I)
    if not start or not from_ or re.search(SET_OPERATORS, masked, re.I):
        return None
    tables = from_tables(text[from_.end():], masked[from_.end():])
    if tables is None:
        return None
    return Query(text, text[start.end():from_.start()].strip(), text[from_.start():], tables,
                 masked[start.end():from_.start()].strip(), masked[from_.start():])


def from_tables(text: str, masked: str) -> tuple[TableRef, ...] | None:
    """The tables of a FROM clause (``text`` starts after FROM); None when one of them is a sub-query."""
    end = re.search(CLAUSES, masked, re.I)
    clause, masked_clause = (text[:end.start()], masked[:end.start()]) if end else (text, masked)
    cuts = [0] + [m for match in re.finditer(rf"{JOIN}|,", masked_clause, re.I) for m in (match.start(), match.end())]
    cuts.append(len(clause))
    refs = []
    for a, b in zip(cuts[::2], cuts[1::2], strict=True):
        piece, masked_piece = clause[a:b], masked_clause[a:b]
        on = re.search(r"\b(on|using)\b", masked_piece, re.I)
        piece = piece[:on.start()] if on else piece
        words = [w.strip('`"[]') for w in piece.split() if w.lower() != "as"]
        if not words or piece.strip().startswith("("):
            return None
        refs.append(TableRef(words[0], words[1] if len(words) > 1 else words[0]))
    return tuple(refs)


def scalar_count(query: Query) -> tuple[bool, str] | None:
    """``(distinct, argument)`` when the projection is one ``count(...)`` and there is no top-level GROUP BY."""
    if re.search(r"\bgroup\s+by\b", query.masked_rest, re.I):
        return None
    if not re.fullmatch(r"count\s*\([^()]*\)", query.masked_projection, re.I):
        return None
    inner = query.projection[query.projection.index("(") + 1:query.projection.rindex(")")].strip()
    distinct = re.match(r"distinct\b", inner, re.I)
    return (True, inner[distinct.end():].strip()) if distinct else (False, inner)


def set_returning(query: Query) -> list[str] | None:
    """The projected expressions of a plain enumeration query (no aggregate, GROUP BY, LIMIT or ``*``)."""
    if re.search(r"\b(group\s+by|limit)\b", query.masked_rest, re.I):
        return None
    if re.search(AGGREGATES, query.masked_projection, re.I) or "*" in query.masked_projection:
        return None
    projection = re.sub(r"^distinct\b", "", query.projection, flags=re.I).strip()
    masked = mask(projection)
    cuts = [0] + [m.start() for m in re.finditer(",", masked)] + [len(projection)]
    return [projection[a:b].strip(", ") for a, b in zip(cuts, cuts[1:], strict=False)]


def evidence_sql(query: Query, selected: list[str]) -> str:
    """``SELECT <selected>, <alias>.rowid, ... <FROM onward>``: one result row per counted join row."""
    rowids = [f"{ref.alias}.rowid" for ref in query.tables]
    return f"SELECT {', '.join([*selected, *rowids])} {query.rest}"


def question_class(sql: str) -> str:
    """``scalar count``, ``superlative``, ``grouped or other aggregate``, ``set operation`` or ``enumeration``."""
    masked = mask(sql.strip().rstrip(";"))
    if re.match(r"\s*select\s+count\s*\([^()]*\)\s+from\b", masked, re.I) and not re.search(
            r"\bgroup\s+by\b", masked, re.I) and not re.search(SET_OPERATORS, masked, re.I):
        return "scalar count"
    if re.search(r"\border\s+by\b.*\blimit\b", masked, re.I | re.S):
        return "superlative"
    if re.search(AGGREGATES, masked, re.I) or re.search(r"\bgroup\s+by\b", masked, re.I):
        return "grouped or other aggregate"
    if re.search(SET_OPERATORS, masked, re.I):
        return "set operation"
    return "enumeration"
