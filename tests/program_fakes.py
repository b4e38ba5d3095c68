"""In-memory stand-ins for the programs' retriever and embedder (deterministic, no model, no JVM)."""

from __future__ import annotations

import hashlib

import numpy as np

from disambig.retrieval.passage import Passage

CORPUS = [
    Passage("p1", "Cristiano Ronaldo", "Ronaldo has the most international goals in men's football."),
    Passage("p2", "Christine Sinclair", "Sinclair has the most international goals in women's football."),
    Passage("p3", "Josef Bican", "Bican scored the most goals in a football career."),
    Passage("p4", "Pele", "Pele scored many goals for Santos and Brazil."),
    Passage("p5", "Cricket", "Sachin Tendulkar scored the most runs in test cricket."),
    Passage("p6", "Weather", "Rain is common in autumn."),
]


def words(text: str) -> set[str]:
    return {w.strip(".,?'s").lower() for w in text.split()}


class FakeRetriever:
    """Word-overlap ranking over ``CORPUS``; counts its calls."""

    name = "fake"

    def __init__(self, passages: list[Passage] | None = None) -> None:
        self.passages = list(CORPUS if passages is None else passages)
        self.calls = 0

    @property
    def size(self) -> int:
        return len(self.passages)

    def search(self, query: str, k: int = 10) -> list[Passage]:
        self.calls += 1
        q = words(query)
        ranked = sorted(self.passages, key=lambda p: -len(q & words(f"{p.title} {p.text}")))
        return [Passage(p.id, p.title, p.text, float(len(q & words(p.text))), r) for r, p in enumerate(ranked[:k], 1)]

    def batch_search(self, queries: list[str], k: int = 10) -> list[list[Passage]]:
        return [self.search(q, k) for q in queries]


class FakeEmbedder:
    """Hashed bag-of-words unit vectors: texts sharing words are similar."""

    dim = 64

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in words(text):
                out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)


class ScriptedEngine:
    """A DSPy engine that answers each LLM step by a rule, counting words as tokens.

    ``rules`` maps a phrase of a signature's instruction (the system message) to a function of the user
    message that returns the output fields. Calls are recorded as ``(step phrase, user message)``.
    """

    supports_response_schema = True
    supported_params = frozenset({"temperature", "max_tokens", "stop", "seed", "top_p", "response_format"})

    def __init__(self, rules: dict) -> None:
        self.rules = rules
        self.calls: list[tuple[str, str]] = []
        self.usage: list[tuple[int, int]] = []

    def complete(self, request):
        import json

        from dspy.lm15 import Message, Response, TextPart, Usage

        system = request.system if isinstance(request.system, str) else "".join(p.text for p in request.system or [])
        user = request.messages[-1].text or ""
        phrase = next((p for p in self.rules if p in system), None)
        if phrase is None:
            raise AssertionError(f"no scripted rule for system message {system[:80]!r}")
        self.calls.append((phrase, user))
        output = self.rules[phrase](user)
        text = output if isinstance(output, str) else json.dumps(output)
        usage = Usage(input_tokens=len(f"{system} {user}".split()), output_tokens=len(text.split()))
        self.usage.append((usage.input_tokens, usage.output_tokens))
        return Response(id=None, model=request.model, message=Message.assistant([TextPart(text)]),
                        finish_reason="stop", usage=usage)

    def stream(self, request):
        from dspy.lm15 import response_to_events

        return response_to_events(self.complete(request))

    def close(self) -> None:
        pass


def scripted_lm(rules: dict):
    """``(dspy.LM, engine)`` over a ``ScriptedEngine`` with the given rules."""
    import dspy

    engine = ScriptedEngine(rules)
    return dspy.LM("scripted/rules", engine=engine, cache=False, num_retries=0), engine


def configure_scripted(rules: dict):
    """``scripted_lm(rules)``, configured in DSPy with the project's adapter; returns ``(lm, engine)``."""
    import dspy

    from disambig.lm.adapter import CompactJSONAdapter

    lm, engine = scripted_lm(rules)
    dspy.configure(lm=lm, adapter=CompactJSONAdapter())
    return lm, engine


def use_in_cli(monkeypatch, lm, retriever=None) -> None:
    """Make the command line build ``lm`` for every LM spec (and return ``retriever`` for every retriever)."""
    monkeypatch.setattr("disambig.lm.runtime.build_lm", lambda settings, spec=None, **kw: lm)
    if retriever is not None:
        monkeypatch.setattr("disambig.retrieval.build_retriever", lambda *a, **kw: retriever)


def compile_asqa(program: str, asqa_file: str, out, *options: str):
    """``disambig compile PROGRAM`` (labeled-fewshot on ROUGE-L over ``asqa_file``, untracked) through the command
    line; asserts it succeeded and returns the saved state's path and its manifest entry."""
    import json
    from pathlib import Path

    from typer.testing import CliRunner

    from disambig.cli import app

    result = CliRunner().invoke(app, [
        "compile", program, "--dataset", asqa_file, "--metric", "rouge-l", "--optimizer", "labeled-fewshot",
        *options, "--no-track", "--out", str(out)])
    assert result.exit_code == 0, result.output
    state_path = Path(out) / program / Path(asqa_file).stem / "labeled-fewshot.json"
    return state_path, json.loads((state_path.parent / "manifest.json").read_text())["labeled-fewshot"]
