"""``bench/cost/remote_lm.py``: its settings' commands and its table from stored rows and timings, no LM or server."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def remote(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    return importlib.import_module("bench.cost.remote_lm")


def stored(folder: Path, answers: list[str], seconds: list[float], turns: list[tuple[int, float]],
           error_on: int | None = None) -> None:
    """A setting's folder: one row per answer and one timing line per turn (questions, answering seconds)."""
    folder.mkdir(parents=True)
    rows = [{"id": f"q{i}", "prediction": {"long_answer": a, "interpretations": []},
             "error": "boom" if i == error_on else None, "code": {"commit": "abc", "dirty": False},
             "trace": {"seconds": s, "lm_calls": 2, "input_tokens": 100, "output_tokens": 10}}
            for i, (a, s) in enumerate(zip(answers, seconds, strict=True))]
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "timing.jsonl").write_text("".join(
        json.dumps({"up_to": 0, "questions": n, "answering_s": t, "wall_s": t + 3, "code": "abc", "load1": 1.5,
                    "server_start_s": 0, "cpu": "test CPU"}) + "\n" for n, t in turns))


def test_the_table_counts_throughput_latency_and_answers_equal_to_in_process(remote, tmp_path):
    stored(tmp_path / "vanilla-rag" / "inproc", ["a", "b", "c", "d"], [10, 20, 30, 40], [(2, 30.0), (2, 30.0)])
    stored(tmp_path / "vanilla-rag" / "served-2", ["a", "x", "c", "d"], [5, 5, 5, 50], [(4, 40.0)], error_on=1)
    text = remote.table("vanilla-rag", tmp_path, Path("shown"))
    inproc = next(line for line in text.splitlines() if line.startswith("| inproc |"))
    served = next(line for line in text.splitlines() if line.startswith("| served-2 |"))
    assert "| 4 | 4.00 | 25.0 | 40.0 | 2.00 | 110 | 4 of 4 | 1.5-1.5 |" in inproc  # 4 questions in 60 s
    assert "| 4 (1 failed) | 6.00 | 5.0 | 50.0 |" in served and "| 3 of 4 |" in served
    assert "CPU: test CPU; code abc; rows in `shown/vanilla-rag`." in text


def test_each_setting_starts_the_server_it_names(remote, monkeypatch):
    served = remote.server_command(remote.SETTINGS["served-2"], 8123, ["disambig"])
    assert served == ["disambig", "lm", "serve", "--model", "local:qwen2.5-0.5b", "--port", "8123", "--parallel", "2",
                      "--threads", "2", "--prompt-cache-mb", "512"]
    assert remote.server_command(remote.SETTINGS["served-1-nocache"], 1, ["disambig"])[-1] == "0"
    monkeypatch.delenv("LLAMA_SERVER", raising=False)
    with pytest.raises(SystemExit, match="LLAMA_SERVER"):
        remote.server_command(remote.SETTINGS["llama-server-2"], 1, ["disambig"])
