"""The repetition guard and the cut to the last whole sentence, on scripted token streams (no model).

The looping answer used throughout (``LOOPING``) is "Minnehaha Academy is a school. It is a minnehaha academy, a
minnehaha academy, ..." The 6-word run "a minnehaha academy a minnehaha academy" starts at every "a" of the loop;
its third occurrence is complete once the fourth "academy," is written, and its second occurrence starts at the
loop's second "a". Cut there and back to the last sentence end, the answer is "Minnehaha Academy is a school."
"""

from __future__ import annotations

import dspy
import pytest
from llama_fakes import PROMPT, ScriptedLlama, json_pieces, scripted_lm

from disambig.lm.adapter import CompactJSONAdapter
from disambig.lm.guard import RepetitionGuard
from disambig.lm.repetition import LoopRule, guarded, last_sentence, loop_cut
from disambig.lm.usage import measured

LOOPING = "Minnehaha Academy is a school. It is" + " a minnehaha academy," * 8
GUARDED = "Minnehaha Academy is a school."


@pytest.fixture(autouse=True)
def _no_llama_counters(monkeypatch):
    from disambig.lm.llama_engine import EvalCounters

    monkeypatch.setattr("disambig.lm.llama_engine.reset_counters", lambda llama: None)
    monkeypatch.setattr("disambig.lm.llama_engine.read_counters", lambda llama: EvalCounters(3, 1.0, 1, 1.0))


class Write(dspy.Signature):
    """Answer the question in full sentences."""

    question: str = dspy.InputField()
    long_answer: str = dspy.OutputField()


def answer(lm: dspy.LM) -> str:
    with dspy.context(lm=lm, adapter=CompactJSONAdapter()):
        return dspy.Predict(Write)(question="Where did he study?").long_answer


def test_loop_cut_on_hand_made_text():
    # words x y z x y x y: the 2-word run "x y" occurs at words 0, 3 and 5; its second occurrence starts at char 6
    assert loop_cut("x y z x y x y", ngram=2, repeats=3) == 6
    assert loop_cut("x y z x y", ngram=2, repeats=3) is None  # only twice
    assert loop_cut(LOOPING) == len("Minnehaha Academy is a school. It is a minnehaha academy, ")
    assert guarded(LOOPING) == GUARDED
    assert last_sentence("It rains. The sun is out and") == "It rains."
    assert last_sentence("no sentence end") == "no sentence end"


def test_guard_fires_once_the_third_run_is_whole_and_reads_only_generated_tokens():
    pieces = ["x", " y", " z", " x", " y", " x", " y", ".", " more"]
    guard = RepetitionGuard(ScriptedLlama(pieces), LoopRule(2, 3))
    # Called as llama-cpp-python does: the prompt, then the k tokens generated before the one just sampled. The
    # prompt's ids (900...) are not pieces: detokenizing them would raise. After 7 tokens the text ends in "y",
    # which the next token could extend, so the guard waits for the "." (k = 8).
    fired = [guard(PROMPT + list(range(k))) for k in range(len(pieces) + 1)]
    assert fired == [False] * 8 + [True, True]
    assert guard(PROMPT) is True  # once fired it stays fired (llama-cpp-python asks again at the end)


def test_a_looping_reply_is_cut_as_the_post_hoc_rule_cuts_it_and_flagged():
    pieces = json_pieces("long_answer", LOOPING)
    unguarded, _ = scripted_lm(pieces, repetition_guard="off")
    stored = answer(unguarded)
    assert stored == LOOPING
    lm, llama = scripted_lm(pieces)
    with measured() as trace:
        cut = answer(lm)
    assert cut == guarded(stored) == GUARDED
    assert (trace.cut_by_repetition, trace.cut_by_length) == (1, 0)
    # the 7 words before the loop, then 4 x "a minnehaha academy," = 19 answer tokens after the opening one
    assert trace.output_tokens == 1 + 7 + 12


def test_a_reply_cut_by_the_token_cap_ends_at_its_last_sentence_and_is_flagged():
    pieces = json_pieces("long_answer", "It rains. The sun is out and the wind blows hard")
    lm, _ = scripted_lm(pieces, max_tokens=8)  # the opening and 7 words: "It rains. The sun is out and"
    with measured() as trace:
        assert answer(lm) == "It rains."
    assert (trace.cut_by_repetition, trace.cut_by_length) == (0, 1)


def test_a_reply_that_does_not_loop_is_untouched():
    pieces = json_pieces("long_answer", "It rains. It rains again, and it rains harder")
    lm, llama = scripted_lm(pieces)
    with measured() as trace:
        assert lm("q") == ["".join(pieces)]
    assert (trace.cut_by_repetition, trace.cut_by_length) == (0, 0)
    assert llama.calls[0]["guarded"] and "repeat_penalty" not in llama.calls[0]


def test_escaped_text_is_read_decoded():
    looping = 'He said \\"go\\" and' + " a minnehaha academy," * 4  # raw JSON: the quotes are escaped
    lm, _ = scripted_lm(json_pieces("long_answer", looping))
    # no sentence end: the text before the loop is kept whole, and written back as valid JSON
    assert lm("q") == ['{"long_answer": "He said \\"go\\" and a minnehaha academy,"}']


def test_guard_off_and_repeat_penalty_reach_llama():
    lm, llama = scripted_lm(json_pieces("long_answer", LOOPING), repetition_guard="off", repeat_penalty=1.1)
    assert answer(lm) == LOOPING
    assert not llama.calls[0]["guarded"] and llama.calls[0]["repeat_penalty"] == 1.1


def test_cuts_are_counted_from_threads_and_roll_up():
    import contextvars
    from concurrent.futures import ThreadPoolExecutor

    lm, _ = scripted_lm(json_pieces("long_answer", LOOPING))
    with measured() as outer:
        with ThreadPoolExecutor(max_workers=2) as pool:
            contexts = [contextvars.copy_context() for _ in range(2)]  # as the evaluation runner submits work
            list(pool.map(lambda context: context.run(answer, lm), contexts))
        with measured() as inner:
            answer(lm)
    assert inner.cut_by_repetition == 1
    assert outer.cut_by_repetition == 3  # two from the threads, one from the inner block, counted once


@pytest.mark.slow
def test_the_real_models_guarded_answer_is_the_post_hoc_cut_of_its_unguarded_one(local_lm, monkeypatch):
    # SmolLM2 loops here ("london, alabama, alabama, ..."); greedy decoding makes the guarded answer that prefix, cut.
    # Both compared calls start from the same prompt cache (a first call warms it): a fresh prefill and one that
    # reuses a cached prefix can differ in their last float bits on some CPU backends (seen on zen4), and so can
    # the greedy tokens that follow.
    monkeypatch.undo()  # the real model's own counters
    engine = local_lm.engine
    question = "List every school, a minnehaha academy, a minnehaha academy, a minnehaha academy, and so on."
    with dspy.context(lm=local_lm, adapter=CompactJSONAdapter()):
        try:
            engine.repetition_guard = "off"
            dspy.Predict(Write)(question=question)
            stored = dspy.Predict(Write)(question=question).long_answer
        finally:
            engine.repetition_guard = "6x3"
        with measured() as trace:
            cut = dspy.Predict(Write)(question=question).long_answer
    assert cut != stored  # it looped, and the guard stopped it
    assert cut == guarded(stored)
    assert trace.cut_by_repetition == 1


class _Library:
    """A stand-in for ``llama_cpp.Llama``: its class method answers, an instance attribute may hook it."""

    def create_completion(self, stopping_criteria=None, **kwargs):
        return ("library", len(stopping_criteria or []))


def test_a_guarded_call_leaves_the_instances_own_hook_in_place():
    from disambig.lm.guard import stopping_on

    llama = _Library()
    with stopping_on(llama, lambda ids, logits=None: False):
        assert llama.create_completion() == ("library", 1)
    assert "create_completion" not in vars(llama)  # no hook before: the class's method shows through again
    llama.create_completion = lambda **kwargs: ("hook", len(kwargs.get("stopping_criteria") or []))
    with stopping_on(llama, lambda ids, logits=None: False):
        assert llama.create_completion() == ("hook", 1)  # the guard wraps the hook
    assert llama.create_completion() == ("hook", 0)  # and gives it back (the call batcher's, the server's)
