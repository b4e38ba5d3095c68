"""Stored run folders (``disambig eval --out``: ``params.json`` and one ``results.jsonl`` row per question) read back,
costed and scored again with today's metrics, without an LM call."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any


def params(run: Path) -> dict[str, Any]:
    """The run's ``params.json``."""
    return json.loads((run / "params.json").read_text(encoding="utf-8"))


def raw_rows(run: Path, keep: set[str] | None = None) -> list[dict]:
    """The rows of the run's ``results.jsonl`` as written (traces and code stamps included), those in ``keep`` only
    when given."""
    from disambig.data.jsonl import read_jsonl

    return [row for _, row in read_jsonl(run / "results.jsonl") if keep is None or str(row.get("id")) in keep]


def rows_by_id(run: Path) -> dict[str, dict]:
    """The run's rows by question id; empty when the run has not started."""
    return {str(row["id"]): row for row in raw_rows(run)} if (run / "results.jsonl").exists() else {}


def run_label(run: Path) -> str:
    """The run folder's name without its dataset (``diva-calibrated-asqa`` -> ``diva-calibrated``)."""
    return run.name.removesuffix(f"-{Path(params(run)['dataset']).stem}")


def first_ids(run_params: Mapping[str, Any], n: int | None, skip: int = 0) -> set[str]:
    """Ids of the first ``n`` questions (all with None) of the split a run's ``params`` name, less its first
    ``skip``: ``n=150, skip=80`` are questions 81 to 150."""
    from disambig.data import load_dataset

    split = run_params.get("split", "dev")
    return {str(ex.id) for ex in load_dataset(run_params["dataset"], split=split, limit=n)[skip:]}


def answers_code(run_params: Mapping[str, Any], raw: list[dict]) -> str:
    """The code that made the answers: the rows' distinct stamps, else the commit ``params`` recorded when the
    folder was claimed (``code.commit``; ``commit`` in older folders)."""
    from disambig.evaluation.code_version import describe

    stamps = sorted({describe(r.get("code") or {}) for r in raw})
    if stamps != ["unknown code"]:
        return "; ".join(stamps)
    return run_params.get("commit") or (run_params.get("code") or {}).get("commit") or "?"


def row_costs(raw: list[dict]) -> dict[str, float]:
    """LM calls, tokens and latency per question from the rows' traces, so a partial run has costs too."""
    from disambig.evaluation.report import efficiency

    return efficiency([r.get("trace") or {} for r in raw],
                      failures_without_trace=sum(r.get("error") is not None and not r.get("trace") for r in raw))


@lru_cache(maxsize=8)
def questions(dataset: str) -> tuple[list[Any], str]:
    """Every question of ``dataset`` and its kind (``asqa``, ``ambignq``), loaded once per process."""
    from disambig.cli.score_cmd import load_questions

    return load_questions(dataset)


def score_rows(rows: Iterable[Mapping[str, Any]], dataset: str, *names: Iterable[str]) -> Any:
    """``disambig score``'s result for stored rows (a failed row scores as an empty answer) against ``dataset``:
    each group of metric ``names`` in turn (an empty group: the dataset's defaults); none given, the defaults."""
    from disambig.cli.score_cmd import build_metrics, flatten_result
    from disambig.evaluation.scoring import score_predictions

    examples, kind = questions(dataset)
    metrics: dict[str, Any] = {}
    for group in names or ((),):
        metrics |= build_metrics(list(group), kind, None, None)
    return score_predictions([flatten_result(dict(r)) for r in rows], examples, metrics)


def by_id(per_question: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """A scoring result's per-question scores keyed by question id."""
    return {str(q["id"]): q["scores"] for q in per_question}
