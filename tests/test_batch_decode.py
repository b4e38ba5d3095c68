"""Independent calls decoded together on the in-process model (real SmolLM2): grouped, prefix shared, ended as the
library ends a completion, and a lone grouped call equal to the library's reply."""

from __future__ import annotations

import dspy
import pytest

from disambig.lm import make_lm
from disambig.lm.batch_decode import MAX_SEQUENCES, BatchDecoder, Job, library_settings, shared_prefix
from disambig.lm.call_batcher import IN_GROUP
from disambig.lm.parallel import ordered_map
from disambig.lm.usage import measured

PASSAGE = ("Miroslav Klose | Klose scored 16 goals, the most in the history of the men's World Cup. Marta scored 17 "
           "goals, the most in the women's World Cup.")
QUESTIONS = ["Who scored the most men's World Cup goals?", "Who scored the most women's World Cup goals?",
             "How many goals did Klose score?"]


class Answer(dspy.Signature):
    """Answer the question from the passage, in a few words."""

    passage: str = dspy.InputField()
    question: str = dspy.InputField()
    answer: str = dspy.OutputField()


@pytest.fixture(scope="module")
def engines():
    plain, batched = make_lm("local:smollm2", max_tokens=24), make_lm("local:smollm2", max_tokens=24,
                                                                      batch_calls=True)
    yield plain, batched
    plain.engine.close()
    batched.engine.close()


def _answers(lm, questions: list[str]) -> list[str]:
    predict = dspy.Predict(Answer)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter(), cache=False):
        return ordered_map(lambda q: predict(passage=PASSAGE, question=q).answer, questions)


@pytest.mark.slow
def test_a_programs_independent_calls_are_decoded_as_one_batch(engines):
    _, batched = engines
    with dspy.context(lm=batched, cache=False):
        batched("Say hello.", max_tokens=3, temperature=0.0)  # a call outside a group first, its guard on and off
    with measured() as trace:
        answers = _answers(batched, QUESTIONS)
    batcher = batched.engine.batcher_
    assert batcher.batches[-1] == len(QUESTIONS) and len(answers) == len(QUESTIONS)
    assert all(isinstance(a, str) for a in answers)
    assert trace.lm_calls == len(QUESTIONS) and trace.output_tokens > 0
    # every call but the first reuses the prompt prefix (instructions, passage) prefilled once for all
    assert trace.reused_prompt_tokens >= (len(QUESTIONS) - 1) * 50
    # one decode step for a token of each unfinished reply: fewer steps than reply tokens
    assert batcher.decoder.steps < trace.output_tokens


@pytest.mark.slow
def test_a_lone_grouped_call_gives_the_librarys_reply(engines):
    plain, batched = engines
    expected = _answers(plain, QUESTIONS[:1])
    before = len(batched.engine.batcher_.batches)
    marked = IN_GROUP.set(True)  # as ordered_map marks its workers (it runs a single call in place, unmarked)
    try:
        assert _answers(batched, QUESTIONS[:1]) == expected
    finally:
        IN_GROUP.reset(marked)
    assert batched.engine.batcher_.batches[before:] == [1]


@pytest.mark.slow
def test_a_reply_cut_by_its_cap_ends_as_length_and_calls_outside_a_group_are_not_batched(engines):
    _, batched = engines
    assert batched.engine.llama is not None
    batcher = batched.engine.batcher_
    before = len(batcher.batches)
    with dspy.context(lm=batched, cache=False), measured() as trace:
        batched("Count from one to fifty in words.", max_tokens=5, temperature=0.0)  # not in a group
    assert len(batcher.batches) == before and trace.cut_by_length == 1
    job = Job(prompt=batched.engine.llama.tokenize(b"Count from one to fifty in words:"), max_tokens=5)
    batcher.decoder.run([job])
    assert job.finish_reason == "length" and len(job.completion) == 5 and job.text


@pytest.mark.slow
def test_a_prompt_over_the_context_fails_that_call_only(engines):
    _, batched = engines
    decoder = BatchDecoder(batched.engine.llama, ctx=64, threads=1)
    try:
        short = Job(prompt=batched.engine.llama.tokenize(b"One, two,"), max_tokens=3)
        long = Job(prompt=list(range(100, 200)), max_tokens=3)
        decoder.run([long, short])
        with pytest.raises(ValueError, match=r"Requested tokens \(100\) exceed context window of 64"):
            long.result("m")
        assert short.done and short.error is None and len(short.completion) <= 3
    finally:
        decoder.close()


@pytest.mark.parametrize(("prompts", "expected"), [
    ([[1, 2, 3, 4], [1, 2, 3, 5]], 3),
    ([[1, 2, 3], [1, 2, 3, 4]], 2),  # the shorter keeps its last token, whose logits start its reply
    ([[7, 2], [1, 2]], 0),
    ([[5, 6, 7]], 2),
])
def test_shared_prefix(prompts, expected):
    assert shared_prefix(prompts) == expected


def test_groups_fit_the_context_and_the_sequence_limit():
    decoder = BatchDecoder(llama=None, ctx=100, threads=1)
    jobs = [Job(prompt=[1] * 30, max_tokens=10) for _ in range(3)]  # 40 cells each: two fit in 100
    assert [len(g) for g in decoder._groups(jobs)] == [2, 1]
    many = [Job(prompt=[1], max_tokens=1) for _ in range(MAX_SEQUENCES + 1)]
    assert [len(g) for g in decoder._groups(many)] == [MAX_SEQUENCES, 1]


def test_the_batch_context_takes_the_librarys_settings_but_not_its_pointers():
    import llama_cpp

    library = llama_cpp.llama_context_default_params()
    library.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED  # what llama-cpp-python's Llama sets
    library.type_k, library.n_ctx, library.n_samplers = 1, 1234, 3
    library.cb_eval_user_data = library.ctx_other = 12345
    fresh = llama_cpp.llama_context_default_params()
    assert fresh.flash_attn_type != llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED  # llama.cpp's default: auto
    params = library_settings(library, fresh)
    assert (params.flash_attn_type, params.type_k, params.n_ctx) == (llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED, 1, 1234)
    assert params.cb_eval_user_data is None and params.ctx_other is None and params.n_samplers == 0
