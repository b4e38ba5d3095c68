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


@dataclass
class CheckReport:
    """Measured numbers of one ``lm check`` run."""

    spec: str
    load_seconds: float = 0.0
    prefill_tokens_per_s: float | None = None
    decode_tokens_per_s: float | None = None
    structured: dict[str, Any] = field(default_factory=dict)
    structured_seconds: float = 0.0
    structured_tokens: dict[str, int] = field(default_factory=dict)

    def rows(self) -> list[tuple[str, str]]:
        def rate(x: float | None) -> str:
            return "n/a (remote)" if x is None else f"{x:.1f}"

        return [
            ("load time (s)", f"{self.load_seconds:.2f}"),
            ("prefill tokens/s", rate(self.prefill_tokens_per_s)),
            ("decode tokens/s", rate(self.decode_tokens_per_s)),
            ("schema call (s)", f"{self.structured_seconds:.2f}"),
            ("schema call tokens in/out", "{in}/{out}".format(**{"in": 0, "out": 0, **self.structured_tokens})),
            ("schema call result", repr(self.structured)),
        ]


def run_check(settings: Settings) -> CheckReport:
    """Load the settings' LM and measure it; the in-process model also gets prefill/decode rates."""
    from disambig.lm.adapter import CompactJSONAdapter
    from disambig.lm.spec import make_lm
    from disambig.lm.usage import measured

    report = CheckReport(spec=settings.lm)
    lm = make_lm(settings.lm, threads=settings.threads, ctx=settings.ctx)
    from disambig.lm.llama_engine import LlamaEngine

    engine = lm.engine
    if isinstance(engine, LlamaEngine):
        start = time.perf_counter()
        llama = engine.llama
        report.load_seconds = time.perf_counter() - start
        report.prefill_tokens_per_s, report.decode_tokens_per_s = _speeds(llama)
    with dspy.context(lm=lm, adapter=CompactJSONAdapter()), measured() as trace:
        result = dspy.Predict(CheckQuestion)(question=CHECK_QUESTION)
    report.structured = {"person": result.person, "year": result.year}
    report.structured_seconds = trace.seconds
    report.structured_tokens = {"in": trace.input_tokens, "out": trace.output_tokens}
    return report


def _speeds(llama: Any) -> tuple[float, float]:
    """Prefill rate from a one-token completion of a long prompt; decode rate from a fixed-length completion."""
    prompt_tokens = llama.tokenize(PREFILL_TEXT.encode())
    llama.reset()
    start = time.perf_counter()
    llama.create_completion(PREFILL_TEXT, max_tokens=1, temperature=0.0)
    prefill_rate = len(prompt_tokens) / (time.perf_counter() - start)

    decode_prompt_tokens = len(llama.tokenize(DECODE_PROMPT.encode()))
    llama.reset()
    start = time.perf_counter()
    out = llama.create_completion(DECODE_PROMPT, max_tokens=DECODE_TOKENS, temperature=0.0)
    elapsed = time.perf_counter() - start - decode_prompt_tokens / prefill_rate
    generated = out["usage"]["completion_tokens"]
    llama.reset()
    return prefill_rate, generated / max(elapsed, 1e-6)
