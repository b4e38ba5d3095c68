"""P(Yes) from token log-probabilities: the decision token's yes/no alternatives, hand-computed."""

from __future__ import annotations

import math

import pytest

from disambig.lm.yes_probability import LOGPROB_REQUEST, logprob_config, side, yes_probability


def entry(token: str, p: float, *alternatives: tuple[str, float]) -> dict:
    return {"token": token, "logprob": math.log(p),
            "top_logprobs": [{"token": t, "logprob": math.log(q)} for t, q in alternatives]}


@pytest.mark.parametrize(("token", "expected"), [
    ("Yes", "yes"), (" yes", "yes"), ("Y", "yes"), ('"Yes', "yes"), ("No", "no"), ("N", "no"), ("no.", "no"),
    ("verdict", None), ("None", None), ("Not", None), ("", None), ('": "', None),
])
def test_side(token, expected):
    assert side(token) == expected


def test_probability_is_yes_mass_over_yes_and_no_mass_at_the_first_yes_or_no_token():
    logprobs = {"content": [
        entry('{"', 0.99), entry("verdict", 0.99), entry('": "', 0.9),
        # chosen "N" 0.4; alternatives Y 0.3, No 0.1, Yes 0.1, Maybe 0.05 (ignored), N again (counted once)
        entry("N", 0.4, ("N", 0.4), ("Y", 0.3), ("No", 0.1), ("Yes", 0.1), ("Maybe", 0.05)),
        entry("o", 1.0), entry('"}', 1.0),
    ]}
    # yes = 0.3 + 0.1 = 0.4; no = 0.4 + 0.1 = 0.5 -> 0.4 / 0.9
    assert yes_probability(logprobs) == pytest.approx(0.4 / 0.9)


def test_a_later_token_spelling_no_does_not_count():
    logprobs = [entry("Yes", 0.8, ("No", 0.2)), entry("No", 0.9, ("Yes", 0.1))]
    assert yes_probability(logprobs) == pytest.approx(0.8)


def test_without_alternatives_the_chosen_side_is_certain():
    assert yes_probability([{"token": "Yes", "logprob": -0.1}]) == pytest.approx(1.0)


@pytest.mark.parametrize("logprobs", [None, {"content": None}, {"content": []}, [entry("Maybe", 1.0)]])
def test_nothing_to_read_is_none(logprobs):
    assert yes_probability(logprobs) is None


def test_log_probabilities_are_asked_for_only_from_an_lm_that_reports_them():
    class WithLogprobs:
        supported_params = {"temperature", "logprobs"}

    class Without:
        supported_params = {"temperature"}

    assert logprob_config(WithLogprobs()) == LOGPROB_REQUEST and logprob_config(Without()) == {}
    assert logprob_config(None) == {}


@pytest.mark.slow
def test_the_embedded_engine_reads_the_verdict_among_the_tokens_the_grammar_allows(local_lm):
    import dspy

    from disambig.lm.adapter import CompactJSONAdapter
    from disambig.signatures import VerifyRetrieval

    with dspy.context(lm=local_lm, adapter=CompactJSONAdapter()):
        result = dspy.Predict(VerifyRetrieval)(
            passages="[1] Cristiano Ronaldo | Ronaldo has the most international goals in men's football.",
            question="Who has the most international goals in men's football?", config=logprob_config(local_lm))
    decision = next(t for t in result.logprobs["content"] if side(t["token"]))
    assert {side(a["token"]) for a in decision["top_logprobs"]} == {"yes", "no"}  # only what the grammar allows
    assert 0.0 < yes_probability(result.logprobs) < 1.0
