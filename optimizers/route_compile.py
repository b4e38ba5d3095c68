"""``disambig compile route``: run the candidates on the train split, label each question with its best action,
fit the detector and the policy, measure on held-out questions, save JSON state + manifest. With ``cascade`` set
(``--cascade FIRST,ESCALATE``) it fits a cascade instead (``disambig.optimizers.cascade_compile``)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from disambig.errors import ConfigurationError
from disambig.optimizers.compile import CompileResult, package_versions
from disambig.optimizers.route_data import matrix, observe_all, read_outcomes, reusable, run_folder
from disambig.optimizers.route_labels import CORPUS_METRICS, Outcome, label_questions
from disambig.settings import Settings

logger = logging.getLogger(__name__)
DETECTOR_DATASET = "ambignq"  # the labels of ambiguity: singleAnswer vs multipleQAs
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class RouteJob:
    """Everything ``disambig compile route`` decides before it runs."""

    dataset: str
    candidates: tuple[str, ...]
    metric: str
    n_train: int = 60
    n_val: int = 50
    cost_weight: float = 0.0
    allow: tuple[str, ...] = ()
    abstain_value: float = 0.0
    runs: Path = Path("runs/route")
    name: str = "policy"
    detector_train: int | None = None  # AmbigNQ train questions the detector learns from (None: all)
    candidate_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    cascade: tuple[str, str] | None = None  # (first, escalate): fit a cascade; the candidates are these two
    cascade_thresholds: tuple[float, ...] = ()  # thresholds the cascade's CV chooses from (empty: 0.5 alone)


def run_route_compile(settings: Settings, job: RouteJob, out: Path, progress: Progress | None = None,
                      track: bool = True, register: bool = True) -> tuple[CompileResult, dict[str, str]]:
    """Compile a router for ``job``; see the module doc. Candidate runs already on disk are reused (resumed)."""
    from disambig.data import load_dataset
    from disambig.data.loaders import dataset_format, default_corpus
    from disambig.lm.runtime import build_lm, configure_dspy
    from disambig.programs.context import passage_framing
    from disambig.programs.registry import with_format_option
    from disambig.programs.route import Route
    from disambig.retrieval import build_retriever

    check_job(job)  # then the data (read, not answered), then the LM and the retriever: no work for a bad job
    corpus = default_corpus(job.dataset)
    train = load_dataset(job.dataset, split="train", limit=job.n_train)
    heldout = load_dataset(job.dataset, split="dev", limit=job.n_val)
    ambiguity = None if job.cascade else load_dataset(DETECTOR_DATASET, split="train", limit=job.detector_train)
    lm = build_lm(settings)
    retriever = build_retriever("hybrid", corpus=corpus, settings=settings)
    fmt = dataset_format(job.dataset)
    options = {c: with_format_option(c, fmt, job.candidate_options.get(c, {})) for c in job.candidates}
    configure_dspy(lm)
    with passage_framing(settings.passage_framing):  # after configure_dspy: a dspy.context holds the LM of its start
        outcomes = {split: {c: candidate_outcomes(settings, job, c, options[c], split, examples, retriever, corpus)
                            for c in job.candidates} for split, examples in (("train", train), ("dev", heldout))}
    route = Route(retriever, job.candidates, options, job.allow)
    detector = None
    if job.cascade is not None:
        from disambig.optimizers.cascade_compile import train_cascade

        route.cascade_, labels, fit_note, held = train_cascade(job, retriever, train, heldout, outcomes, progress)
    else:
        from disambig.optimizers.route_eval import compose_heldout

        detector = train_detector(retriever, ambiguity, progress)
        route.policy_, labels, fit_note = train_policy(job, retriever, detector, train, outcomes["train"], progress)
        held = compose_heldout(route, heldout, outcomes["dev"], job.metric, progress)
    from disambig.optimizers.session import ids_hash

    manifest = build_manifest(job, settings, corpus, options, detector, fit_note, labels, held)
    manifest["data"] = {"train": ids_hash(train), "heldout": ids_hash(heldout)}
    path = out / "route" / Path(job.dataset).stem / f"{job.name}.json"
    from disambig.optimizers.artifact import save_artifact

    save_artifact(route, path, manifest)
    result = CompileResult(path, manifest | {"state_file": path.name}, held["best_single"]["score"],
                           held["route"]["score"])
    tracked: dict[str, str] = {}
    if track:
        from disambig.optimizers.tracking import log_compile_run

        tracked = log_compile_run(result, register=register)
    return result, tracked


def check_job(job: RouteJob) -> None:
    """Refuse what ``job`` can be refused for before the LM, the retriever or a candidate's answer: the candidates,
    the cascade, the allowed actions, the candidates' options, the metric, the cost weight and the artifact name.

    Raises:
        ConfigurationError: one line naming the value and the fix.
    """
    from disambig.programs.registry import PROGRAMS, check_options
    from disambig.programs.route.program import OPTIONAL_ACTIONS, check_candidates

    check_candidates(list(job.candidates), list(PROGRAMS))
    if job.cascade is not None and (len(job.cascade) != 2 or tuple(job.candidates) != tuple(job.cascade)):
        raise ConfigurationError(f"a cascade names two candidates, the first and the escalation (--cascade "
                                 f"vanilla-rag,adf); got cascade {list(job.cascade)} with candidates "
                                 f"{list(job.candidates)}")
    if job.cascade is not None and job.allow:
        raise ConfigurationError(f"a cascade always answers; it cannot also allow {', '.join(job.allow)} (drop "
                                 "--allow or --cascade)")
    bad = [a for a in job.allow if a not in OPTIONAL_ACTIONS]
    if bad:
        raise ConfigurationError(f"route cannot allow {bad[0]!r}; optional actions: {', '.join(OPTIONAL_ACTIONS)}")
    if "clarify" in job.allow:
        raise ConfigurationError("compile route cannot label clarify yet (its worth needs a simulated user's "
                                 "choice); allow abstain only, or use clarify with an uncompiled route")
    stray = sorted(set(job.candidate_options) - set(job.candidates))
    if stray:
        raise ConfigurationError(f"--option {stray[0]}.KEY=VALUE: {stray[0]!r} is not a candidate "
                                 f"({', '.join(job.candidates)})")
    for program, options in job.candidate_options.items():
        check_options(program, options)
    check_metric(job.metric)
    if not 0 <= job.cost_weight < math.inf:
        raise ConfigurationError(f"cost weight {job.cost_weight} must be a finite number of at least 0 (metric "
                                 "points one LM call is worth)")
    if not job.name.strip() or Path(job.name).name != job.name or job.name in (".", ".."):
        raise ConfigurationError(f"--name {job.name!r} must be a file name without folders, e.g. policy")


def check_metric(metric: str) -> None:
    """Refuse a name that is no metric; one the candidates' stored runs lack is found once they are read."""
    from disambig.metrics import get_metric
    from disambig.metrics.dspy_metrics import is_judge_metric, is_reader_metric

    if metric not in CORPUS_METRICS and not is_judge_metric(metric) and not is_reader_metric(metric):
        get_metric(metric)


def candidate_outcomes(settings: Settings, job: RouteJob, program: str, options: dict[str, Any], split: str,
                       examples: list[Any], retriever: Any, corpus: str) -> dict[str, Outcome]:
    """Candidate ``program``'s stored outcome for each of ``examples``, answering (and storing) the missing ones
    first in its run folder."""
    folder = run_folder(job.runs, job.dataset, split, program)
    wanted = {str(ex.id) for ex in examples}
    stored = read_outcomes(folder) if (folder / "results.jsonl").is_file() else {}
    if not wanted <= set(stored):
        answer_missing(settings, job, program, options, split, examples, retriever, corpus, folder)
        stored = read_outcomes(folder)
    return {i: stored[i] for i in sorted(wanted)}


def answer_missing(settings: Settings, job: RouteJob, program: str, options: dict[str, Any], split: str,
                   examples: list[Any], retriever: Any, corpus: str, folder: Path) -> None:
    """``disambig eval``'s run of ``program`` on ``examples`` into ``folder`` (resuming what it holds)."""
    from disambig.data.loaders import dataset_format
    from disambig.evaluation.session import EvalConfig, run_eval
    from disambig.metrics import default_metrics, get_metric
    from disambig.programs import PROGRAMS, build_program
    from disambig.settings import generation_overrides

    retrieves = PROGRAMS[program].needs_retriever  # scored and recorded as `disambig eval` does for this program
    names = [*default_metrics(dataset_format(job.dataset)), *(["mrecall@5"] if retrieves else [])]
    config = EvalConfig(program=program, dataset=job.dataset, split=split, limit=len(examples), lm=settings.lm,
                        retriever=f"hybrid:{corpus}" if retrieves else "", metrics=tuple(names), options=options,
                        generation=generation_overrides(settings))
    logger.info("answering %s on %s/%s into %s", program, job.dataset, split, folder)
    program_ = build_program(program, retriever if retrieves else None, **options)
    run_eval(config, program_, examples, {n: get_metric(n) for n in names}, folder, track=False,
             allow_mixed_code=reusable(folder))


def train_detector(retriever: Any, examples: list[Any], progress: Progress | None) -> Any:
    """The ambiguity detector, fitted on ``examples`` (AmbigNQ's train split): on the retrieval features, or on those
    and the question embedding when that cross-validates better on the train split."""
    from disambig.optimizers.route_fit import fit_detector
    from disambig.programs.adf.gate import is_ambiguous
    from disambig.programs.route.features import FEATURES, embedding_names

    obs = observe_all([ex.question for ex in examples], retriever, _step(progress, "detector features"))
    labels = [is_ambiguous(ex) for ex in examples]
    choices = {"retrieval features": list(FEATURES),
               "embedding + retrieval features": [*embedding_names(len(obs[0].embedding)), *FEATURES]}
    fits = {label: fit_detector(matrix(obs, names), labels, names) for label, names in choices.items()}
    chosen = max(fits, key=lambda label: fits[label].cv_scores[fits[label].C])  # by train CV AUC alone
    fitted = fits[chosen]
    logger.info("detector: %s, C=%s, cross-validated AUC %s", chosen, fitted.C, fitted.cv_scores)
    return fitted


def train_policy(job: RouteJob, retriever: Any, detector: Any, train: list[Any],
                 outcomes: dict[str, dict[str, Outcome]], progress: Progress | None) -> tuple[Any, dict, dict]:
    """The ``RoutePolicy`` fitted on the train questions' best actions, the labels, and what the fit chose."""
    from disambig.optimizers.route_fit import fit_policy
    from disambig.programs.route.features import FEATURES
    from disambig.programs.route.policy import P_AMBIGUOUS, RoutePolicy, answer_action

    by_action = {answer_action(c): rows for c, rows in outcomes.items()}
    labels, utilities = label_questions(by_action, job.metric, job.cost_weight,
                                        job.abstain_value if "abstain" in job.allow else None)
    ids = [str(ex.id) for ex in train]
    obs = observe_all([ex.question for ex in train], retriever, _step(progress, "train features"))
    names = [*FEATURES, P_AMBIGUOUS]
    det_names = detector.model.features
    p_amb = detector.model.predict_proba(matrix(obs, det_names))[:, 1]
    default = answer_action(job.candidates[0])
    y = [labels[i] for i in ids]
    if len(set(y)) < 2:
        note = {"policy": f"every train question's best action is {y[0]}; no policy fitted"}
        return RoutePolicy(y[0], detector.model, None), labels, note
    fitted = fit_policy(matrix(obs, names, p_amb), y, [utilities[i] for i in ids], names)
    note = {"policy_C": fitted.C, "policy_constant": fitted.constant, "policy_cv_utility": fitted.cv_utility,
            "detector_C": detector.C, "detector_cv_auc": detector.cv_scores}
    if fitted.model is None:
        return RoutePolicy(fitted.constant, detector.model, None), labels, note
    return RoutePolicy(default, detector.model, fitted.model), labels, note


def build_manifest(job: RouteJob, settings: Settings, corpus: str, options: dict[str, dict[str, Any]],
                   detector: Any, fit_note: dict, labels: dict[str, str], held: dict[str, Any]) -> dict[str, Any]:
    """The artifact's manifest: what was compiled, from which runs, and what it measured on held-out questions."""
    from disambig.lm.spec import parse_spec

    mix = {a: list(labels.values()).count(a) for a in sorted(set(labels.values()))}
    return {
        "program": "route", "dataset": job.dataset, "metric": job.metric,
        "optimizer": "route-cascade" if job.cascade else "route-policy",
        "budget": {"train": job.n_train, "val": job.n_val, "cost_weight": job.cost_weight,
                   "detector_train": job.detector_train},
        "scores": {"before": held["best_single"]["score"], "after": held["route"]["score"],
                   "heldout_size": held["questions"], "train_size": len(labels),
                   "heldout": {k: v for k, v in held.items() if k != "decisions"}},
        "knobs": {"candidates": list(job.candidates), "candidate_options": options, "allow": list(job.allow)},
        "candidate_runs": {f"{s}/{c}": str(run_folder(job.runs, job.dataset, s, c)) for s in ("train", "dev")
                           for c in job.candidates},
        "train_labels": mix, "fit": fit_note, "detector_features": len(detector.model.features) if detector else 0,
        "job": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(job).items()},
        "lm": settings.lm, "lm_model": parse_spec(settings.lm).model_name, "retriever": f"hybrid:{corpus}",
        "passage_framing": settings.passage_framing,
        "versions": package_versions(), "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _step(progress: Progress | None, label: str) -> Callable[[int, int], None] | None:
    return None if progress is None else (lambda done, total: progress(label, done, total))
