"""DSPy optimizers with budgets that finish on 2 CPU cores with the embedded LM.

Each recipe takes the metric, a ``Budget`` and the LMs, and returns a DSPy teleprompter. Budgets are
small by default (a 135M model at ~120 prompt tokens/s makes every metric call cost seconds) and every
number is a flag of ``disambig compile``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from disambig.errors import ConfigurationError


@dataclass(frozen=True)
class Budget:
    """How much work a recipe may do.

    Attributes:
        demos: few-shot demos per predictor (bootstrapped + labeled).
        candidates: candidate programs / instructions to try.
        trials: optimisation trials (MIPROv2) or steps (SIMBA).
        metric_calls: total metric calls (GEPA).
        batch: minibatch size (MIPROv2, SIMBA).
        threads: evaluation threads.
        seed: random seed.
    """

    demos: int = 2
    candidates: int = 3
    trials: int = 4
    metric_calls: int = 40
    batch: int = 8
    threads: int = 1
    seed: int = 0


def labeled_fewshot(metric: Callable, budget: Budget, **_: Any) -> Any:
    import dspy

    return dspy.LabeledFewShot(k=budget.demos)


def teacher_settings(teacher_lm: Any) -> dict[str, Any] | None:
    """DSPy's ``teacher_settings``: the LM that answers the training questions whose passing traces become demos
    (``--teacher-lm``); None lets the program's own LM write them."""
    return None if teacher_lm is None else {"lm": teacher_lm}


def bootstrap(metric: Callable, budget: Budget, teacher_lm: Any = None, **_: Any) -> Any:
    import dspy

    return dspy.BootstrapFewShot(metric=metric, max_bootstrapped_demos=budget.demos, max_labeled_demos=budget.demos,
                                 max_rounds=1, teacher_settings=teacher_settings(teacher_lm))


def bootstrap_random_search(metric: Callable, budget: Budget, teacher_lm: Any = None, **_: Any) -> Any:
    import dspy

    return dspy.BootstrapFewShotWithRandomSearch(
        metric=metric, max_bootstrapped_demos=budget.demos, max_labeled_demos=budget.demos,
        num_candidate_programs=budget.candidates, num_threads=budget.threads,
        teacher_settings=teacher_settings(teacher_lm),
    )


def mipro(metric: Callable, budget: Budget, lm: Any = None, teacher_lm: Any = None, **_: Any) -> Any:
    import dspy

    return dspy.MIPROv2(
        metric=metric, prompt_model=lm, task_model=lm, teacher_settings=teacher_settings(teacher_lm), auto=None,
        num_candidates=budget.candidates, max_bootstrapped_demos=budget.demos, max_labeled_demos=budget.demos,
        num_threads=budget.threads, seed=budget.seed, verbose=False,
    )


def gepa(metric: Callable, budget: Budget, reflection_lm: Any = None, **_: Any) -> Any:
    import dspy

    from disambig.optimizers.feedback import with_feedback

    if reflection_lm is None:
        raise ConfigurationError("GEPA needs a reflection LM; pass --reflection-lm (the program LM is used by default)")
    return dspy.GEPA(
        metric=with_feedback(metric), max_metric_calls=budget.metric_calls, reflection_lm=reflection_lm,
        reflection_minibatch_size=min(3, budget.batch), num_threads=budget.threads, seed=budget.seed,
        track_stats=False, use_merge=False,
    )


class KNNFewShot:
    """DIVA's per-query demos (A.4): DSPy's ``KNN`` picks each question's ``k`` nearest training examples.

    Unlike ``dspy.KNNFewShot`` (whose compiled program keeps its training set outside the saved state and runs
    BootstrapFewShot on every call), ``compile`` returns a ``KNNDemos`` wrapper whose state is the demo pool, so the
    artifact is plain JSON like the other recipes'. The training examples carry the gold demo fields
    (``optimizers/gold.py``); the embedder is the program's retriever's (all-MiniLM-L6-v2).
    """

    def __init__(self, k: int = 2) -> None:
        self.k = k

    def compile(self, student: Any, *, trainset: list, **_: Any) -> Any:
        from disambig.programs.knn_demos import KNNDemos

        if not trainset:
            raise ConfigurationError("knn-fewshot needs training examples to choose demos from; raise --train")
        return KNNDemos(student.deepcopy(), trainset, k=max(1, self.k))


def knn_fewshot(metric: Callable, budget: Budget, **_: Any) -> Any:
    return KNNFewShot(k=budget.demos)


class KeepDemos:
    """No prompt optimisation: the program keeps its own instructions and demos. With ``--tune-knobs`` the compiled
    artifact differs from the uncompiled program only in its tuned numbers (DIVA's calibrated verifier thresholds)."""

    def compile(self, student: Any, **_: Any) -> Any:
        return student.deepcopy()


def keep_demos(metric: Callable, budget: Budget, **_: Any) -> Any:
    return KeepDemos()


def simba(metric: Callable, budget: Budget, **_: Any) -> Any:
    import dspy

    return dspy.SIMBA(metric=metric, bsize=budget.batch, num_candidates=budget.candidates, max_steps=budget.trials,
                      max_demos=budget.demos, num_threads=budget.threads)


RECIPES: dict[str, Callable[..., Any]] = {
    "none": keep_demos,
    "labeled-fewshot": labeled_fewshot,
    "knn-fewshot": knn_fewshot,
    "bootstrap": bootstrap,
    "bootstrap-rs": bootstrap_random_search,
    "mipro": mipro,
    "gepa": gepa,
    "simba": simba,
}

TEACHER_RECIPES = ("bootstrap", "bootstrap-rs", "mipro")
"""Recipes whose demos are traces of the program on training questions, so another LM (a teacher) can write them."""

DEMO_RECIPES = ("none", "labeled-fewshot", "knn-fewshot", "bootstrap", "bootstrap-rs")
"""Recipes that change a program only by its demos: one that adds none (and tunes no knob) learned nothing."""

COMPILE_KWARGS: dict[str, Callable[[Budget, list], dict[str, Any]]] = {
    "mipro": lambda b, val: {"valset": val, "num_trials": b.trials, "minibatch": len(val) > b.batch,
                             "minibatch_size": b.batch},
    "gepa": lambda b, val: {"valset": val},
}


def _knn_wrapper(program: Any) -> Any:
    from disambig.programs.knn_demos import KNNDemos

    return KNNDemos(program)


LOADED_AS: dict[str, Callable[[Any], Any]] = {"knn-fewshot": _knn_wrapper}
"""Recipes whose compiled program wraps the registered one: how to rebuild the wrapper before loading its state."""


def for_loading(optimizer: str, program: Any) -> Any:
    """``program`` as recipe ``optimizer`` saved it (wrapped for ``knn-fewshot``, else unchanged)."""
    wrap = LOADED_AS.get(optimizer)
    return wrap(program) if wrap else program


def teacher_spec(teacher: str | None, lm: str) -> str:
    """The ``--teacher-lm`` spec a compile uses, checked before anything loads: "" when none is given or when it names
    the model the program runs on (no second copy is loaded and no teacher is recorded).

    Raises:
        ConfigurationError: the spec is malformed or names an unknown model or a missing file.
    """
    from disambig.lm.spec import parse_spec, same_model

    if not teacher:
        return ""
    parse_spec(teacher)  # a typo fails here, before anything loads
    return "" if same_model(teacher, lm) else teacher


def check_teacher(name: str, teacher: str | None) -> None:
    """Refuse a teacher LM for a recipe that bootstraps no demo (before anything is loaded)."""
    if teacher and name not in TEACHER_RECIPES:
        raise ConfigurationError(f"--teacher-lm writes bootstrapped demos; optimizer {name!r} bootstraps none (use "
                                 f"{', '.join(TEACHER_RECIPES)})")


def make_optimizer(name: str, metric: Callable, budget: Budget, **lms: Any) -> Any:
    """The teleprompter for recipe ``name``; ``lms`` may hold ``lm``, ``reflection_lm`` and ``teacher_lm``."""
    recipe = RECIPES.get(name)
    if recipe is None:
        raise ConfigurationError(f"unknown optimizer {name!r}; choose one of: {', '.join(RECIPES)}")
    check_teacher(name, "teacher" if lms.get("teacher_lm") is not None else None)
    return recipe(metric, budget, **lms)


def compile_kwargs(name: str, budget: Budget, valset: list) -> dict[str, Any]:
    """Extra ``compile()`` arguments a recipe takes (a validation set, trial counts)."""
    extra = COMPILE_KWARGS.get(name)
    return extra(budget, valset) if extra else {}
