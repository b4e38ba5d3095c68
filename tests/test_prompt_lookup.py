"""Prompt-lookup decoding on the real SmolLM2: greedy replies unchanged, drafts kept, none while log-probabilities
are recorded."""

from __future__ import annotations

import dspy
import pytest

from disambig.lm import make_lm
from disambig.lm.prompt_lookup import PromptLookup
from disambig.lm.usage import measured

PASSAGE = ("Miroslav Klose | Klose scored 16 goals, the most in the history of the men's World Cup, across the "
           "tournaments of 2002, 2006, 2010 and 2014 for Germany.")


class Quote(dspy.Signature):
    """Copy the passage's sentence about the goals, word for word."""

    passage: str = dspy.InputField()
    sentence: str = dspy.OutputField()


class Verdict(dspy.Signature):
    """Does the passage answer the question?"""

    passage: str = dspy.InputField()
    question: str = dspy.InputField()
    verdict: bool = dspy.OutputField()


@pytest.fixture(scope="module")
def engines():
    plain, drafting = make_lm("local:smollm2", max_tokens=64), make_lm("local:smollm2", max_tokens=64)
    drafting.engine.prompt_lookup = 4
    yield plain, drafting
    plain.engine.close()
    drafting.engine.close()


def _quote(lm) -> tuple[str, int]:
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter(), cache=False), measured() as trace:
        sentence = dspy.Predict(Quote)(passage=PASSAGE).sentence
    return sentence, trace.output_tokens


@pytest.mark.slow
def test_drafted_replies_equal_plain_greedy_ones_and_drafts_are_kept(engines):
    plain, drafting = engines
    expected, generated = _quote(plain)
    assert _quote(drafting) == (expected, generated)
    counts = drafting.engine.lookup_.counts
    assert (counts.calls, counts.generated) == (1, generated)
    assert counts.drafted > 0 and 0 < counts.steps < generated and counts.kept > 0  # reply tokens from kept drafts


@pytest.mark.slow
def test_draft_batches_are_not_counted_as_prefill(engines):
    plain, drafting = engines
    _quote(plain), _quote(drafting)  # a call before on each: the engines share a history whichever tests ran here
    with dspy.context(lm=plain, adapter=dspy.JSONAdapter(), cache=False), measured() as without:
        dspy.Predict(Quote)(passage=PASSAGE + " ")
    with dspy.context(lm=drafting, adapter=dspy.JSONAdapter(), cache=False), measured() as with_drafts:
        dspy.Predict(Quote)(passage=PASSAGE + " ")
    # the same prompt after the same history: the same prefix reused, whatever the reply's draft batches
    assert with_drafts.reused_prompt_tokens == without.reused_prompt_tokens > 0


@pytest.mark.slow
def test_calls_recording_log_probabilities_are_decoded_without_drafts(engines):
    _, drafting = engines
    assert drafting.engine.llama is not None and drafting.engine.lookup_ is not None  # the model is loaded
    lookup = drafting.engine.lookup_
    before = lookup.counts.steps
    with dspy.context(lm=drafting, adapter=dspy.JSONAdapter(), cache=False):
        drafting("Is Klose a footballer? Answer yes or no.", logprobs=True, top_logprobs=2, temperature=0.0)
    assert lookup.counts.steps == before
    assert drafting.engine.llama.draft_model is None  # drafting is off outside a call


@pytest.mark.parametrize("draft_tokens", [0, 17])
def test_a_lookup_drafts_1_to_16_tokens(draft_tokens):
    with pytest.raises(ValueError, match="within 1-16"):
        PromptLookup(object(), draft_tokens)


def test_the_setting_reaches_the_engine_and_is_recorded_when_on(tmp_path, monkeypatch):
    from disambig.lm.runtime import build_lm
    from disambig.settings import Settings, generation_overrides, load_settings

    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")  # nothing more is read before the first call
    assert build_lm(Settings(lm=f"local:{gguf}", cache_dir=str(tmp_path), prompt_lookup=3)).engine.prompt_lookup == 3
    assert generation_overrides(Settings(prompt_lookup=3)) == {"prompt_lookup": 3}
    assert generation_overrides(Settings(lm="openai/m", prompt_lookup=3)) == {}  # a remote LM never drafts
    for bad in ("-1", "17"):
        monkeypatch.setenv("DISAMBIG_PROMPT_LOOKUP", bad)
        with pytest.raises(ValueError, match="must be within 0-16"):
            load_settings()


def test_the_flag_is_exported_for_every_lm_the_run_builds(monkeypatch):
    from disambig.cli.options import export_lm_roles
    from disambig.settings import load_settings

    monkeypatch.setenv("DISAMBIG_PROMPT_LOOKUP", "0")  # restored after the test
    export_lm_roles(None, None, prompt_lookup=5)
    assert load_settings().prompt_lookup == 5
