"""Compile a registered program on a dataset's train split and prove the change on a held-out split."""

from __future__ import annotations

import json
import logging
import platform
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from disambig.lm.spec import parse_spec
from disambig.optimizers.artifact import save_artifact
from disambig.optimizers.recipes import DEMO_RECIPES, Budget, compile_kwargs, make_optimizer
from disambig.settings import PASSAGE_FRAMINGS

logger = logging.getLogger(__name__)
VERSIONED = ("disambig", "dspy", "mlflow", "llama_cpp_python", "sentence-transformers", "faiss-cpu", "pyserini")


@dataclass
class CompileJob:
    """Everything ``disambig compile`` decides before it runs."""

    program_name: str
    dataset: str
    metric_name: str
    optimizer: str
    budget: Budget = field(default_factory=Budget)
    lm_spec: str = "local"
    retriever: str = ""
    name: str = ""
    knobs: dict[str, Any] = field(default_factory=dict)
    knob_trials: list[dict[str, Any]] = field(default_factory=list)
    passage_framing: str = PASSAGE_FRAMINGS[0]  # how passages were shown while demos were bootstrapped and scored
    teacher_lm_spec: str = ""  # the LM that wrote the bootstrapped demos, when not the program's (--teacher-lm)

    @property
    def artifact_name(self) -> str:
        return self.name or (f"{self.optimizer}-teacher" if self.teacher_lm_spec else self.optimizer)


@dataclass
class CompileResult:
    state_path: Path
    manifest: dict[str, Any]
    before: float
    after: float

    @property
    def outcome(self) -> str:
        """``improved``, ``no-gain`` or ``no-demos`` (``compile_outcome``); a result without one counts as improved."""
        return str(self.manifest.get("outcome", "improved"))


def score(program: Any, examples: list, metric: Callable, threads: int = 1) -> float:
    """Mean metric over ``examples`` with ``dspy.Evaluate`` (a failed question scores 0), in [0, 1]."""
    import dspy

    evaluate = dspy.Evaluate(devset=examples, metric=metric, num_threads=threads, display_progress=True,
                             display_table=False, failure_score=0.0, max_errors=len(examples) + 1)
    return float(evaluate(program).score) / 100.0


def compile_program(
    job: CompileJob,
    program: Any,
    trainset: list,
    valset: list,
    metric: Callable,
    out_root: Path,
    data_hashes: dict[str, str],
    lms: dict[str, Any] | None = None,
    uncompiled: Any = None,
) -> CompileResult:
    """Score the uncompiled program on ``valset``, compile ``program`` on ``trainset``, score again, save JSON state +
    manifest with the outcome (``compile_outcome``).

    ``uncompiled`` is the program as it is without compiling, when it differs from ``program`` (whose knobs were
    tuned on the train split): the score before is its score, so tuned knobs count as learned.
    """
    optimizer = make_optimizer(job.optimizer, metric, job.budget, **(lms or {}))
    before = score(uncompiled or program, valset, metric, job.budget.threads)
    logger.info("uncompiled %s: %.4f on %d held-out questions", job.metric_name, before, len(valset))
    compiled = optimizer.compile(program, trainset=trainset, **compile_kwargs(job.optimizer, job.budget, valset))
    after = score(compiled, valset, metric, job.budget.threads)
    logger.info("compiled %s: %.4f", job.metric_name, after)
    demos = len(Counter(demo_rows(compiled)) - Counter(demo_rows(program)))
    manifest = {
        "name": job.artifact_name,
        "program": job.program_name,
        "dataset": job.dataset,
        "metric": job.metric_name,
        "optimizer": job.optimizer,
        "budget": job.budget.__dict__,
        "scores": {"before": before, "after": after, "heldout_size": len(valset), "train_size": len(trainset)},
        "outcome": compile_outcome(job.optimizer, demos, bool(job.knob_trials), before, after),
        "new_demos": demos,
        "data": data_hashes,
        "lm": job.lm_spec,
        "lm_model": parse_spec(job.lm_spec).model_name,
        "teacher_lm": job.teacher_lm_spec,
        "teacher_lm_model": parse_spec(job.teacher_lm_spec).model_name if job.teacher_lm_spec else "",
        "retriever": job.retriever,
        "passage_framing": job.passage_framing,
        "knobs": job.knobs,
        "knob_trials": job.knob_trials,
        "versions": package_versions(),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    path = out_root / job.program_name / Path(job.dataset).stem / f"{job.artifact_name}.json"
    save_artifact(compiled, path, manifest)
    return CompileResult(path, manifest | {"state_file": path.name}, before, after)


def compile_outcome(optimizer: str, new_demos: int, knobs_tuned: bool, before: float, after: float) -> str:
    """What a compile learned: ``no-demos`` when a recipe that only adds demos (``DEMO_RECIPES``) added none and no
    knob was tuned (nothing changed, whatever the scores say), else ``improved`` when the held-out score rose, else
    ``no-gain``."""
    if optimizer in DEMO_RECIPES and not new_demos and not knobs_tuned:
        return "no-demos"
    return "improved" if after > before else "no-gain"


def demo_rows(program: Any) -> list[str]:
    """As JSON text: every demo of the program's predictors that fills one of its outputs (the adapter shows no other)
    and every example of a demo pool (``knn-fewshot``)."""
    rows = []
    for _, parameter in program.named_parameters():
        outputs = set(parameter.signature.output_fields) if hasattr(parameter, "signature") else set()
        demos = [d for d in getattr(parameter, "demos", None) or [] if outputs & set(dict(d.items()))]
        for demo in [*demos, *(getattr(parameter, "examples", None) or [])]:
            rows.append(json.dumps(dict(demo.items()), sort_keys=True, default=str))
    return rows


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for dist in VERSIONED:
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return versions
