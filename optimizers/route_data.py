"""What a route compile learns from: the candidates' stored answers per question, and each question's features.

Candidate runs are ordinary ``disambig eval`` folders (``RUNS/DATASET-SPLIT/PROGRAM``): resumable, code-stamped,
and reused as they are when the code that answers (programs, signatures, LM, retrieval, data) has not changed
since their rows were written.
"""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from disambig.errors import ConfigurationError
from disambig.optimizers.route_labels import Outcome

logger = logging.getLogger(__name__)
ANSWERING_CODE = ("programs", "signatures", "lm", "retrieval", "data", "metrics", "pyproject.toml")
ROUTE_CODE = "programs/route"  # the router itself answers nothing a candidate run stores


def run_folder(runs: Path, dataset: str, split: str, program: str) -> Path:
    """Where candidate ``program``'s answers to ``dataset``'s ``split`` are kept."""
    return runs / f"{Path(dataset).stem}-{split}" / program


def read_outcomes(folder: Path) -> dict[str, Outcome]:
    """``{question id: Outcome}`` from a run folder's ``results.jsonl`` (a failed question keeps its stored empty-
    answer scores and the calls it made)."""
    from disambig.data.jsonl import read_jsonl

    path = folder / "results.jsonl"
    if not path.is_file():
        raise ConfigurationError(f"no answers at {str(path)!r}; run the candidate first (disambig eval ... --out "
                                 f"{folder})")
    return {str(row["id"]): Outcome(dict(row.get("scores") or {}), float((row.get("trace") or {}).get("lm_calls", 0)))
            for _, row in read_jsonl(path)}


def read_rows(folder: Path) -> dict[str, dict[str, Any]]:
    """``{question id: row}`` of a run folder's ``results.jsonl``, rows as stored (question, prediction, trace)."""
    from disambig.data.jsonl import read_jsonl

    path = folder / "results.jsonl"
    if not path.is_file():
        raise ConfigurationError(f"no answers at {str(path)!r}; run the candidate first (disambig eval ... --out "
                                 f"{folder})")
    return {str(row["id"]): row for _, row in read_jsonl(path)}


def stored_commits(folder: Path) -> set[str]:
    """The commits whose code wrote the rows of a run folder ("" for a row from uncommitted code)."""
    from disambig.data.jsonl import read_jsonl

    path = folder / "results.jsonl"
    if not path.is_file():
        return set()
    return {"" if (row.get("code") or {}).get("dirty") else str((row.get("code") or {}).get("commit", ""))
            for _, row in read_jsonl(path)}


def answering_code_unchanged(commit: str) -> bool:
    """Whether the code that answers questions is the same at ``commit`` as in this checkout (committed and
    working tree), the router's own folder aside."""
    if not commit:
        return False
    from disambig.evaluation.code_version import CHECKOUT

    paths = [*ANSWERING_CODE, f":(exclude){ROUTE_CODE}"]
    try:
        done = subprocess.run(["git", "diff", "--quiet", commit, "--", *paths], cwd=CHECKOUT, timeout=30,
                              capture_output=True)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def reusable(folder: Path) -> bool:
    """Whether every stored row of ``folder`` came from committed code that answers as this checkout does."""
    commits = stored_commits(folder)
    return bool(commits) and all(answering_code_unchanged(c) for c in commits)


def observe_all(questions: Sequence[str], retriever: Any, progress: Callable[[int, int], None] | None = None
                ) -> list[Any]:
    """Each question's ``Observation`` (one sparse and one dense search each; no LM call)."""
    from disambig.programs.route.features import observe

    out = []
    for n, question in enumerate(questions, 1):
        out.append(observe(question, retriever))
        if progress is not None:
            progress(n, len(questions))
    return out


def matrix(observations: Sequence[Any], names: Sequence[str], p_ambiguous: Sequence[float] | None = None
           ) -> np.ndarray:
    """The ``(questions, features)`` matrix of ``names`` (``p_ambiguous`` standing for the detector's output)."""
    from disambig.programs.route.policy import policy_inputs

    ps = p_ambiguous if p_ambiguous is not None else [None] * len(observations)
    return np.vstack([policy_inputs(obs, names, p) for obs, p in zip(observations, ps, strict=True)])
