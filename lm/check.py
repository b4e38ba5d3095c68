"""Measure an LM: load time, prefill and decode speed, and one schema-constrained DSPy call."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import dspy

from disambig.settings import Settings

PREFILL_TEXT = (
    "Ambiguous questions have several readings. For example, 'who has the most goals in world football' "
    "can ask about men's or women's football, international or club goals, a single season or a whole career. "
) * 4
DECODE_PROMPT = "List the months of the year, one per line."
DECODE_TOKENS = 64


class CheckQuestion(dspy.Signature):
    """Answer the question with the name of the person and the year."""

    question: str = dspy.InputField()
    person: str = dspy.OutputField()
    year: int = dspy.OutputField()


CHECK_QUESTION = "Who was the first person to walk on the Moon, and in which year?"
SECOND_QUESTION = "Who was the first person in space, and in which year?"


@dataclass
class CheckReport:
    """Measured numbers of one ``lm check`` run."""

    spec: str
    model_file: str = ""
    model_bytes: int | None = None
    model_sha256: str | None = None
    load_seconds: float = 0.0
    prefill_tokens_per_s: float | None = None
    decode_tokens_per_s: float | None = None
    structured: dict[str, Any] = field(default_factory=dict)
    structured_seconds: float = 0.0
    structured_tokens: dict[str, int] = field(default_factory=dict)
    reuse_tokens: dict[str, int] = field(default_factory=dict)

    def rows(self) -> list[tuple[str, str]]:
        def rate(x: float | None) -> str:
            return "n/a (remote)" if x is None else f"{x:.1f}"

        return [
            *self.model_rows(),
            ("load time (s)", f"{self.load_seconds:.2f}"),
            ("prefill tokens/s", rate(self.prefill_tokens_per_s)),
            ("decode tokens/s", rate(self.decode_tokens_per_s)),
            ("schema call (s)", f"{self.structured_seconds:.2f}"),
            ("schema call tokens in/out", "{in}/{out}".format(**{"in": 0, "out": 0, **self.structured_tokens})),
            ("schema call result", repr(self.structured)),
            *([("2nd call: prompt tokens reused", "{reused} of {prompt}".format(**self.reuse_tokens))]
              if self.reuse_tokens else []),
        ]


    def model_rows(self) -> list[tuple[str, str]]:
        """The model the check loaded: file name, size and hash (none for a remote LM)."""
        if not self.model_file:
            return []
        verified = f"verified {self.model_sha256}" if self.model_sha256 else "unverified (no pinned hash)"
        return [("model file", self.model_file), ("model size", f"{self.model_bytes / 1e6:.1f} MB"),
                ("model sha256", verified)]


def run_check(settings: Settings) -> CheckReport:
    """Load the settings' LM and measure it; the in-process model also gets prefill/decode rates."""
    from disambig.lm.adapter import CompactJSONAdapter
    from disambig.lm.spec import make_lm
    from disambig.lm.usage import measured

    report = CheckReport(spec=settings.lm)
    lm = make_lm(settings.lm, threads=settings.threads, ctx=settings.ctx, cache_dir=settings.cache_dir)
    from disambig.lm.llama_engine import LlamaEngine

    engine = lm.engine
    if isinstance(engine, LlamaEngine):
        start = time.perf_counter()
        llama = engine.llama
        report.load_seconds = time.perf_counter() - start
        model = engine.model_file()
        report.model_file, report.model_bytes, report.model_sha256 = model.name, model.size_bytes, model.sha256
        report.prefill_tokens_per_s, report.decode_tokens_per_s = _speeds(llama)
    with dspy.context(lm=lm, adapter=CompactJSONAdapter()), measured() as trace:
        result = dspy.Predict(CheckQuestion)(question=CHECK_QUESTION)
    report.structured = {"person": result.person, "year": result.year}
    report.structured_seconds = trace.seconds
    report.structured_tokens = {"in": trace.input_tokens, "out": trace.output_tokens}
    if isinstance(engine, LlamaEngine):  # the same instruction again: its KV state is reused, not prefilled
        with dspy.context(lm=lm, adapter=CompactJSONAdapter()), measured() as second:
            dspy.Predict(CheckQuestion)(question=SECOND_QUESTION)
        report.reuse_tokens = {"reused": second.reused_prompt_tokens, "prompt": second.input_tokens}
    return report


def _speeds(llama: Any) -> tuple[float, float]:
    """Prefill and decode rates as llama.cpp counts them: a long prompt completed by one token, then a chat
    reply of up to ``DECODE_TOKENS`` tokens; each from a fresh context."""
    from disambig.lm.llama_engine import read_counters, reset_counters

    llama.reset()
    reset_counters(llama)
    llama.create_completion(PREFILL_TEXT, max_tokens=1, temperature=0.0)
    prefill = read_counters(llama)
    llama.reset()
    reset_counters(llama)
    llama.create_chat_completion(messages=[{"role": "user", "content": DECODE_PROMPT}], max_tokens=DECODE_TOKENS,
                                 temperature=0.0)
    decode = read_counters(llama)
    llama.reset()
    return prefill.prefill_per_s, decode.decode_per_s
