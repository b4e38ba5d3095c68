"""One evaluation run end to end: load, answer, score, report, plot and track."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from disambig.data.atomic import write_json
from disambig.errors import ConfigurationError
from disambig.evaluation.code_version import code_stamp
from disambig.evaluation.plot import plot_tradeoff
from disambig.evaluation.records import QuestionResult, ResultLog
from disambig.evaluation.report import build_report, read_report, write_report
from disambig.evaluation.runner import run_questions

logger = logging.getLogger(__name__)

RESULTS_FILE = "results.jsonl"
PARAMS_FILE = "params.json"
PLOT_FILE = "tradeoff.png"


@dataclass(frozen=True)
class EvalConfig:
    """What identifies a run; a run folder holds exactly one config, so a re-run resumes it."""

    program: str
    dataset: str
    split: str = "dev"
    limit: int | None = None
    skip: int = 0  # the first questions of the limit left out (--skip): the run holds questions skip+1..limit
    lm: str = "local"
    judge_lm: str = ""
    retriever: str = ""
    metrics: tuple[str, ...] = ()
    artifact: str = ""
    cache: bool = False  # DSPy's LM response cache was on (timings of cached calls are not LM time)
    options: dict[str, Any] = field(default_factory=dict)  # the program's constructor arguments (--option)
    proxy: str = ""  # the shared U_q of the judge metrics (ProxySource.label); "": each answer's own passages
    generation: dict[str, Any] = field(default_factory=dict)  # repetition guard/penalty set apart from the defaults

    def default_out(self, root: Path = Path("runs")) -> Path:
        block = f"{self.skip + 1}-{self.limit or 'all'}" if self.skip else f"{self.limit or 'all'}"
        name = f"{self.program}-{Path(self.dataset).stem}-{self.split}-{block}"
        return root / (f"{name}-{Path(self.artifact).stem}" if self.artifact else name)


@dataclass
class EvalOutcome:
    """Where a run's outputs went and its report."""

    out_dir: Path
    report: dict[str, Any]
    results: list[QuestionResult] = field(default_factory=list)
    mlflow_run_id: str | None = None


def run_eval(
    config: EvalConfig,
    program: Callable[..., Any],
    examples: list[Any],
    metrics: dict[str, Callable[..., float]],
    out_dir: Path,
    threads: int = 1,
    on_result: Callable[[QuestionResult], None] | None = None,
    track: bool = True,
    tracking_uri: str | None = None,
    allow_mixed_code: bool = False,
) -> EvalOutcome:
    """Answer and score ``examples`` into ``out_dir`` (resuming a run already there), then report and track.

    Resuming a folder whose answers came from other code is refused unless ``allow_mixed_code``.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    params = claim_run_dir(out_dir, config)
    results = run_questions(program, examples, metrics, ResultLog(out_dir / RESULTS_FILE), threads, on_result,
                            allow_mixed_code=allow_mixed_code)
    report = build_report(results, params) | {"code": distinct_codes(results)}
    report_path = write_report(report, out_dir)
    plot_path = plot_tradeoff(sibling_reports(out_dir, report), primary_metric(report), out_dir / PLOT_FILE)
    run_id = None
    if track:
        from disambig.evaluation.tracking import log_eval_run

        run_id = log_eval_run(report, [report_path, plot_path, out_dir / RESULTS_FILE], tracking_uri)
    return EvalOutcome(out_dir=out_dir, report=report, results=results, mlflow_run_id=run_id)


def lm_model(spec: str) -> str:
    """The model a spec names today (``local`` -> the default GGUF's file name), so a table can say which it was."""
    from disambig.lm.spec import parse_spec

    try:
        return parse_spec(spec).model_name if spec else ""
    except ConfigurationError:  # a spec only a custom LM factory knows (DISAMBIG_LM_FACTORY): keep it as given
        return spec


def claim_run_dir(out_dir: Path, config: EvalConfig) -> dict[str, Any]:
    """Write the run's params, or check that a resumed folder was started with the same ones."""
    params = asdict(config) | {"metrics": list(config.metrics), "code": code_stamp(), "lm_model": lm_model(config.lm)}
    path = out_dir / PARAMS_FILE
    if path.exists():
        previous = stored_params(path)
        defaults = asdict(EvalConfig(program="", dataset=""))  # a field newer than the folder's params: its default
        differing = sorted(k for k in asdict(config)
                           if k != "metrics" and previous.get(k, defaults[k]) != params[k]
                           and not (k == "limit" and grows(previous.get(k), config.limit)))
        if previous.get("lm_model", params["lm_model"]) != params["lm_model"]:  # `local` named another model then
            differing.append(f"model ({previous['lm_model']} then, {params['lm_model']} now)")
        if differing:
            raise ConfigurationError(
                f"{str(out_dir)!r} holds a run with different {', '.join(differing)}; "
                "pass another --out or delete the folder to start over"
            )
    write_json(path, params, ensure_ascii=True)
    return params


def grows(before: int | None, now: int | None) -> bool:
    """Whether a resumed run's ``--limit`` extends the stored one (more questions, or all): the run then goes on
    to the new questions; a smaller limit would drop answered ones from the report and is refused."""
    return before is not None and (now is None or now >= before)


def stored_params(path: Path) -> dict[str, Any]:
    """The params of the run already in ``path``'s folder; a damaged file is a ``ConfigurationError`` naming it."""
    fix = "delete the folder to start over or pass another --out"
    try:
        params = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"{str(path)!r} is not the JSON a run writes ({type(exc).__name__}); {fix}") from None
    if not isinstance(params, dict):
        raise ConfigurationError(f"{str(path)!r} holds {type(params).__name__}, not a run's params; {fix}")
    return params


def distinct_codes(results: list[QuestionResult]) -> list[dict[str, Any]]:
    """Each code stamp found among the results once, with how many rows it produced."""
    counts: dict[str, list[Any]] = {}
    for r in results:
        key = json.dumps(r.code, sort_keys=True)
        counts.setdefault(key, [r.code, 0])[1] += 1
    return [stamp | {"rows": n} for stamp, n in counts.values()]


def sibling_reports(out_dir: Path, current: dict[str, Any]) -> list[dict[str, Any]]:
    """This run's report plus every other finished run's report beside it (for the trade-off plot); a sibling's
    report that cannot be read is left out of the plot with a warning, not this run's failure."""
    others = []
    for path in sorted(out_dir.parent.glob("*/report.json")):
        if path.parent == out_dir:
            continue
        try:
            others.append(read_report(path))
        except ConfigurationError as exc:
            logger.warning("left out of the trade-off plot: %s", exc)
    return [*others, current]


def primary_metric(report: dict[str, Any]) -> str:
    """The metric the plot shows: DR if measured, else the first metric."""
    names = list(report["metrics"])
    return "dr" if "dr" in names else (names[0] if names else "none")
