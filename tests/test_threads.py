"""The embedded LM's default threads come from the cores free now, and a far-too-slow decode is reported once,
with the setting that fixes it (hand-made core counts, loads and decode counts; a scripted engine)."""

from __future__ import annotations

import logging
import time
from types import SimpleNamespace

import dspy
import pytest
from batch_fakes import QuestionEchoEngine

from disambig.lm import threads
from disambig.lm.speed import DecodeSpeedWatch, expected_decode_per_s, slow_decode_warning
from disambig.lm.threads import busy_cores, cgroup_quota, choose_threads, cpu_counters, free_threads, usable_cores

QWEN_BYTES = 491_000_000  # Qwen2.5-Coder-0.5B Q4_K_M: expected 8e9 / 491e6 = 16.3 tokens/s, "far below" under 3.26


@pytest.mark.parametrize(("cores", "busy", "threads"), [
    (2, 0.0, 2),    # idle 2-core machine: both cores
    (2, 0.4, 2),    # a light load rounds to no busy core
    (2, 0.5, 1),    # half a core busy counts as one
    (2, 1.0, 1),    # another LM job on one core: the other one
    (2, 2.9, 1),    # busier than the machine: never fewer than one
    (1, 0.0, 1),
    (4, 1.6, 2),    # 4 - round(1.6) = 2
    (64, 1.2, 8),   # a big idle machine: capped at 8
    (64, 60.0, 4),  # 64 - 60
])
def test_threads_are_the_usable_cores_not_kept_busy(cores, busy, threads):
    assert choose_threads(cores, busy) == threads


STAT = ("cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 {user} 0 {system} {idle} {iowait} 0 0 0 0 0\n"
        "cpu1 {user} 0 {system} {idle} {iowait} 0 0 0 0 0\ncpu2 0 0 0 999 0 0 0 0 0 0\nintr 1\n")


def test_busy_cores_are_the_busy_share_of_cpu_time_between_two_readings(tmp_path, monkeypatch):
    stat = tmp_path / "stat"
    stat.write_text(STAT.format(user=50, system=25, idle=400, iowait=25))
    assert cpu_counters(stat, {0, 1}) == (150, 1000, 2)  # cpu2 is not ours; the machine's "cpu" line is not read

    def half_busy_meanwhile(_seconds):  # 30 ticks a cpu: 15 busy (user, system), 15 idle or waiting on I/O
        stat.write_text(STAT.format(user=62, system=28, idle=412, iowait=28))

    monkeypatch.setattr(threads, "time", SimpleNamespace(sleep=half_busy_meanwhile, monotonic=time.monotonic))
    assert busy_cores(window_s=0.3, stat=stat, cpus={0, 1}) == pytest.approx(1.0, abs=0.05)  # 30 of 60 ticks
    assert busy_cores(stat=tmp_path / "missing", cpus={0, 1}) is None
    stat.write_text("garbage\n")
    assert cpu_counters(stat, {0, 1}) is None


def test_one_reading_serves_a_starting_process_then_the_cores_are_read_again(monkeypatch):
    readings = iter([0.0, 5.0])
    clock = iter([100.0, 105.0, 105.0, 111.0])
    monkeypatch.setattr(threads, "_LAST", [])
    monkeypatch.setattr(threads, "busy_cores", lambda: next(readings))
    monkeypatch.setattr(threads, "usable_cores", lambda: 4)
    monkeypatch.setattr(threads, "time", SimpleNamespace(monotonic=lambda: next(clock), sleep=time.sleep))
    assert free_threads() == 4  # idle: all four
    assert free_threads() == 4  # 5 s later: the same reading, no second wait
    monkeypatch.setattr(threads, "usable_cores", lambda: 2)
    assert free_threads() == 2  # the reading is reused, the usable cores are not: they are asked again
    assert free_threads() == 1  # 11 s later: read again, five cores' worth busy


@pytest.mark.slow
def test_a_process_spinning_on_a_core_is_seen_busy_at_once():
    import subprocess
    import sys

    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        import time

        time.sleep(0.5)  # the spinner is running; the 1-minute load average has not noticed it yet
        assert busy_cores() >= 0.5
    finally:
        spinner.kill()
        spinner.wait()


@pytest.mark.parametrize(("text", "cores"), [("200000 100000", 2.0), ("150000 100000", 1.5), ("max 100000", None),
                                             ("garbage", None)])
def test_a_cgroup_quota_is_read_in_cores(tmp_path, text, cores):
    (tmp_path / "cpu.max").write_text(text + "\n")
    assert cgroup_quota(tmp_path / "cpu.max") == cores
    assert cgroup_quota(tmp_path / "missing") is None


def test_a_fractional_quota_gives_its_started_core_and_never_more_than_the_affinity(tmp_path):
    import os

    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert usable_cores(tmp_path / "cpu.max") == min(2, len(os.sched_getaffinity(0)))  # 1.5 cores -> 2 at most
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert usable_cores(tmp_path / "cpu.max") == len(os.sched_getaffinity(0))


def test_the_expected_decode_rate_follows_the_model_size():
    assert expected_decode_per_s(QWEN_BYTES) == pytest.approx(16.29, abs=0.01)
    assert expected_decode_per_s(98_362_432) == pytest.approx(81.3, abs=0.1)  # SmolLM2 Q4_1: 82 measured, 1 thread


@pytest.mark.parametrize(("tokens", "ms", "threads", "warned", "advice"), [
    (64, 2_560.0, 2, False, ""),                                # 25 tokens/s: what an idle machine does
    (64, 4_500.0, 2, False, ""),                                # 14.2 tokens/s: busy, not stalled
    (64, 64_000.0, 2, True, "--threads 1 or DISAMBIG_THREADS=1"),  # 1 token/s with 2 threads: halve them
    (64, 64_000.0, 1, True, "run it when the machine is less busy"),  # already one thread
    (4, 60_000.0, 2, False, ""),                                # 4 tokens say nothing
])
def test_a_decode_far_below_the_expected_rate_is_named_with_its_fix(tokens, ms, threads, warned, advice):
    message = slow_decode_warning(tokens, ms, QWEN_BYTES, threads, load=2.9, cores=2)
    assert bool(message) == warned
    if warned:
        assert message.startswith("the embedded LM decodes 1.0 tokens/s, far below the ~16 a 491 MB model")
        assert f"({threads} threads, load average 2.9 on 2 usable cores)" in message and message.endswith(advice)


def test_the_watch_warns_once_after_a_slow_call(caplog):
    lm = dspy.LM("scripted/echo", engine=QuestionEchoEngine(), cache=False, num_retries=0)
    lm.callbacks.append(DecodeSpeedWatch(lambda: (64, 64_000.0), QWEN_BYTES, threads=2))
    with caplog.at_level(logging.WARNING, logger="disambig.lm.speed"):
        lm("question: Who?")
        lm("question: Who else?")
    warnings = [r.getMessage() for r in caplog.records if r.name == "disambig.lm.speed"]
    assert len(warnings) == 1 and "decodes 1.0 tokens/s" in warnings[0]


def test_the_watch_stays_quiet_at_a_normal_rate(caplog):
    lm = dspy.LM("scripted/echo", engine=QuestionEchoEngine(), cache=False, num_retries=0)
    lm.callbacks.append(DecodeSpeedWatch(lambda: (64, 2_560.0), QWEN_BYTES, threads=2))
    with caplog.at_level(logging.WARNING, logger="disambig.lm.speed"):
        lm("question: Who?")
    assert not [r for r in caplog.records if r.name == "disambig.lm.speed"]
