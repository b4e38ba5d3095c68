"""Route: per question, one look at the first-stage retrieval, then the action a learned policy picks for it.

Actions: answer with one of the candidate programs named at compile time, ask the user a clarifying question
with the readings a cheap step found (``clarify``), or give no answer with the reason (``abstain``). Without a
compiled policy every question takes the first candidate.

In cascade mode (``cascade_``, a ``CascadePolicy``) the first candidate always answers, and its answer with the
retrieval decides whether the second answers instead; the trace then counts both runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import dspy

from disambig.errors import ConfigurationError
from disambig.lm.usage import measured
from disambig.programs.result import make_prediction
from disambig.programs.route.answer_features import Answered
from disambig.programs.route.cascade import CascadeDecision, CascadePolicy
from disambig.programs.route.features import named, observe
from disambig.programs.route.policy import ABSTAIN, ANSWER, CLARIFY, Decision, RoutePolicy, answer_action

POLICY_KEY = "route_policy"  # where the policy sits in the saved state, beside the candidates' predictors
CASCADE_KEY = "route_cascade"  # where a cascade sits in the saved state (absent for a routing policy)
OPTIONAL_ACTIONS = (CLARIFY, ABSTAIN)
NO_SUPPORT = "nothing retrieved supports any reading of the question"


class Route(dspy.Module):
    """Answer each question with the action the policy picks for it.

    Args:
        retriever: the hybrid retriever (the features read its sparse and dense lists); candidates share it.
        candidates: registered programs the policy may answer with, in order; the first is the default.
        candidate_options: constructor arguments per candidate (``{"adf": {"style": "asqa"}}``).
        allow: optional actions besides answering: ``clarify``, ``abstain``.
    """

    def __init__(self, retriever: Any, candidates: Sequence[str] = ("vanilla-rag",),
                 candidate_options: dict[str, dict[str, Any]] | None = None, allow: Sequence[str] = ()) -> None:
        super().__init__()
        from disambig.programs.registry import PROGRAMS, build_program

        candidates, allow = list(candidates), list(allow)
        check_candidates(candidates, list(PROGRAMS))
        bad = [a for a in allow if a not in OPTIONAL_ACTIONS]
        if bad:
            raise ConfigurationError(f"route cannot allow {bad[0]!r}; optional actions: {', '.join(OPTIONAL_ACTIONS)}")
        options = dict(candidate_options or {})
        stray = sorted(set(options) - set(candidates))
        if stray:
            raise ConfigurationError(f"candidate_options names {stray[0]!r}, which is not a candidate "
                                     f"({', '.join(candidates)})")
        self.retriever = retriever
        self.candidates, self.allow = candidates, allow
        self.answerers = {name: build_program(name, retriever, **options.get(name, {})) for name in candidates}
        if CLARIFY in allow:
            from disambig.programs.interpret import PseudoInterpreter

            self.clarifier = PseudoInterpreter()
        self.policy_ = RoutePolicy(default=answer_action(candidates[0]))
        self.cascade_: CascadePolicy | None = None
        self.ask_user: Callable[[str, list[str]], str] | None = None  # set by `ask --interactive`

    @property
    def actions(self) -> list[str]:
        """Every action this program can take."""
        return [answer_action(c) for c in self.candidates] + self.allow

    def decide(self, question: str) -> Decision:
        """The policy's choice for ``question`` without running it (one search in each first-stage list).

        Raises:
            ConfigurationError: a cascade, whose choice needs its first candidate's answer (``escalation``).
        """
        if self.cascade_ is not None:
            c = self.cascade_
            raise ConfigurationError(f"this route is a cascade ({c.first} first, then {c.escalate}): its decision "
                                     f"reads {c.first}'s answer, so it cannot decide before {c.first} has answered; "
                                     f"give it that answer (a stored {c.first} run) or run the route")
        obs = observe(question, self.retriever)
        return self.policy_.decide(obs, named(obs), self.actions)

    def escalation(self, question: str, answer: Answered) -> CascadeDecision:
        """The cascade's choice for ``question`` once its first candidate gave ``answer`` (one search in each
        first-stage list, no LM call)."""
        if self.cascade_ is None:
            raise ConfigurationError("this route has no cascade; its decision needs no answer (use decide)")
        return self.cascade_.decide(answer, observe(question, self.retriever))

    def forward(self, question: str) -> dspy.Prediction:
        with measured() as trace:
            trace.retrieval_calls += 2
            if self.cascade_ is None:
                decision = self.decide(question)
                prediction, dropped = self.act(question, decision), None
            else:
                decision, prediction, dropped = self.run_cascade(question)
            inner = dict(getattr(prediction, "trace", {}) or {})
            trace.retrieval_calls += int(inner.get("retrieval_calls", 0))
            trace.notes = {**(inner.get("notes") or {}), "route": decision.to_dict()}
            if dropped is not None:
                kept = dict(dropped.get("trace") or {})
                trace.retrieval_calls += int(kept.get("retrieval_calls", 0))
                trace.notes["cascade_first"] = {"long_answer": dropped.get("long_answer", ""),
                                                "interpretations": list(dropped.get("interpretations") or []),
                                                "lm_calls": kept.get("lm_calls", 0),
                                                "input_tokens": kept.get("input_tokens", 0),
                                                "output_tokens": kept.get("output_tokens", 0)}
        return routed(prediction, decision, trace)

    def run_cascade(self, question: str) -> tuple[CascadeDecision, dspy.Prediction, dspy.Prediction | None]:
        """The first candidate's answer, then the escalation's when the cascade calls for it: the decision, the
        prediction returned, and the first candidate's when it was replaced (else None)."""
        first = self.answerers[self.cascade_.first](question=question)
        decision = self.escalation(question, Answered.from_prediction(question, first))
        if not decision.escalated:
            return decision, first, None
        return decision, self.answerers[self.cascade_.escalate](question=question), first

    def act(self, question: str, decision: Decision) -> dspy.Prediction:
        """Run the chosen action: the candidate's answer, the clarifying question, or the abstention."""
        if decision.action == CLARIFY:
            readings = self.clarifier(question=question)
            if self.ask_user is not None:
                return self.answer_reply(question, decision, list(readings.questions))
            return dspy.Prediction(interpretations=[], long_answer="", passages=[], trace={},
                                   clarify_question=clarifying_question(readings.questions),
                                   options=list(readings.questions), abstain_reason="")
        if decision.action == ABSTAIN:
            return dspy.Prediction(interpretations=[], long_answer="", passages=[], trace={}, clarify_question="",
                                   options=[], abstain_reason=NO_SUPPORT)
        return self.answerers[decision.program](question=question)

    def answer_reply(self, question: str, decision: Decision, readings: list[str]) -> dspy.Prediction:
        """Put the readings to the user and answer the one they choose (or their own words) with the candidate the
        policy rates highest."""
        reply = self.ask_user(clarifying_question(readings), readings).strip() or question
        answers = [a for a in sorted(decision.probabilities, key=decision.probabilities.get, reverse=True)
                   if a.startswith(ANSWER)] or [answer_action(self.candidates[0])]
        prediction = self.answerers[answers[0][len(ANSWER):]](question=reply)
        trace = dict(prediction.get("trace") or {})
        trace["notes"] = {**(trace.get("notes") or {}), "clarified_as": reply, "options": readings}
        prediction["trace"] = trace
        return prediction

    def dump_state(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        cascade = {CASCADE_KEY: self.cascade_.to_dict()} if self.cascade_ is not None else {}
        return super().dump_state(*args, **kwargs) | {POLICY_KEY: self.policy_.to_dict()} | cascade

    def load_state(self, state: dict[str, Any], *args: Any, **kwargs: Any) -> Route:
        state = dict(state)
        cascade = CascadePolicy.from_dict(state.pop(CASCADE_KEY)) if CASCADE_KEY in state else None
        missing = [c for c in ((cascade.first, cascade.escalate) if cascade else ()) if c not in self.candidates]
        if missing:
            raise ConfigurationError(f"the saved route cascade runs {', '.join(missing)}, which is not among this "
                                     f"program's candidates ({', '.join(self.candidates)}); build it with "
                                     f"candidates {cascade.first},{cascade.escalate}")
        policy = RoutePolicy.from_dict(state.pop(POLICY_KEY)) if POLICY_KEY in state else self.policy_
        unknown = sorted({policy.default, *(policy.policy.classes if policy.policy else ())} - set(self.actions))
        if unknown:
            raise ConfigurationError(f"the saved route policy takes {', '.join(unknown)}, which this program cannot "
                                     f"(candidates {', '.join(self.candidates)}, allowed "
                                     f"{', '.join(self.allow) or 'nothing else'})")
        super().load_state(state, *args, **kwargs)
        self.policy_, self.cascade_ = policy, cascade
        return self


def routed(prediction: dspy.Prediction, decision: Decision | CascadeDecision, trace: Any) -> dspy.Prediction:
    """The common prediction fields of ``prediction``, plus the route's own: the action and program taken, the
    clarifying question and its options, and the abstention reason (empty when they do not apply)."""
    from dataclasses import asdict

    out = make_prediction([], "", trace)
    for key in ("interpretations", "long_answer", "passages", "conflicts", "conflict_note"):
        out[key] = prediction.get(key, out[key])
    out["trace"] = asdict(trace)
    out["action"], out["program"] = decision.action, decision.program
    out["p_ambiguous"] = decision.p_ambiguous
    out["clarify_question"] = prediction.get("clarify_question", "")
    out["options"] = list(prediction.get("options", []))
    out["abstain_reason"] = prediction.get("abstain_reason", "")
    return out


def answers_questions(name: str) -> bool:
    """Whether registered program ``name`` can be a candidate: it answers a bare question (its ``forward`` needs
    nothing else) and is not ``route`` itself or a retrieval-only program."""
    import inspect

    from disambig.programs.registry import program_class

    if name in ("route", "amd"):
        return False
    params = list(inspect.signature(program_class(name).forward).parameters.values())[1:]
    names = [p.name for p in params]
    required = [p.name for p in params if p.default is inspect.Parameter.empty
                and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return required == ["question"] and "scope" not in names  # a count program counts over a chunk scope


def clarifying_question(readings: Sequence[str]) -> str:
    """The question put to the user: which of the readings they mean."""
    listed = "; ".join(f"({i}) {r}" for i, r in enumerate(readings, 1))
    return f"Which do you mean? {listed}"


def check_candidates(candidates: list[str], registered: list[str]) -> None:
    """Refuse an empty list, a repeated name, or a program that cannot answer a bare question (``route`` itself, an
    unregistered name, a count program that needs a chunk scope), naming the ones that can."""
    if not candidates:
        raise ConfigurationError("route needs at least one candidate program (--candidates a,b)")
    for name in candidates:
        if name not in registered or not answers_questions(name):
            valid = ", ".join(sorted(n for n in registered if answers_questions(n)))
            raise ConfigurationError(f"unknown route candidate {name!r}; candidates can be: {valid}")
    if len(set(candidates)) != len(candidates):
        raise ConfigurationError(f"route candidates repeat a program: {', '.join(candidates)}")
