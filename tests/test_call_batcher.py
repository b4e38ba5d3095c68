"""Gathering concurrent calls into batches, with a scripted decoder (no model): who waits, who leads, what ends."""

from __future__ import annotations

import threading

import pytest

from disambig.lm.batch_decode import MAX_SEQUENCES, Job
from disambig.lm.call_batcher import CallBatcher


class EchoDecoder:
    """Answers each job with its prompt's length; a prompt holding -1 fails its whole batch, as a llama.cpp error."""

    ctx = 4096

    def __init__(self) -> None:
        self.groups: list[list[int]] = []

    def run(self, jobs: list[Job]) -> None:
        self.groups.append([len(job.prompt) for job in jobs])
        for job in jobs:
            if any(-1 in j.prompt for j in jobs):
                job.error = RuntimeError("llama_decode failed")
            job.text, job.done = str(len(job.prompt)), True


def _submit_all(batcher: CallBatcher, prompts: list[list[int]]) -> list[Job | BaseException]:
    results: list[Job | BaseException] = [RuntimeError("not run")] * len(prompts)

    def one(index: int) -> None:
        results[index] = batcher.submit(Job(prompt=prompts[index]))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(prompts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return results


def test_calls_arriving_together_are_decoded_as_one_batch():
    decoder = EchoDecoder()
    batcher = CallBatcher(decoder, threading.Lock(), window_s=1.0)  # threads start late on a loaded machine
    jobs = _submit_all(batcher, [[1] * n for n in (3, 5, 7)])
    assert batcher.batches == [3] and sorted(decoder.groups[0]) == [3, 5, 7]
    assert [job.text for job in jobs] == ["3", "5", "7"]  # each caller gets its own job back


def test_more_calls_than_sequences_take_several_batches():
    decoder = EchoDecoder()
    batcher = CallBatcher(decoder, threading.Lock(), window_s=1.0)  # threads start late on a loaded machine
    jobs = _submit_all(batcher, [[1] * (n + 1) for n in range(MAX_SEQUENCES + 2)])
    assert sum(batcher.batches) == MAX_SEQUENCES + 2 and max(batcher.batches) == MAX_SEQUENCES
    assert all(job.done for job in jobs)


def test_a_failed_batch_raises_in_each_of_its_callers():
    decoder = EchoDecoder()
    batcher = CallBatcher(decoder, threading.Lock(), window_s=1.0)  # threads start late on a loaded machine
    jobs = _submit_all(batcher, [[1, 2], [-1]])
    for job in jobs:
        with pytest.raises(RuntimeError, match="llama_decode failed"):
            job.result("m")


@pytest.mark.parametrize(("max_tokens", "expected"), [(256, 256), (None, 4096 - 100), (0, 3996), (5000, 3996)])
def test_the_token_cap_is_set_as_the_library_sets_it(max_tokens, expected):
    from disambig.lm.call_batcher import _cap

    assert _cap(max_tokens, ctx=4096, prompt_tokens=100) == expected  # prompt and reply fit the context


class StoppingDecoder(EchoDecoder):
    """Stops as a KeyboardInterrupt would, before any job is marked done."""

    def run(self, jobs: list[Job]) -> None:
        raise KeyboardInterrupt


def test_a_decoder_that_stops_leaves_no_caller_waiting():
    batcher = CallBatcher(StoppingDecoder(), threading.Lock(), window_s=0.01)
    job = Job(prompt=[1, 2])
    with pytest.raises(KeyboardInterrupt):
        batcher.submit(job)
    assert job.done and "stopped before this call was decoded" in str(job.error)
