"""A scripted LM that every process builds from configuration: ``DISAMBIG_LM_FACTORY=<this file>:scripted_lm``.

It answers a closed-book question with a text made from the question, so answers are equal in any process; a
question containing ``POISON`` raises. Read at each call: ``DISAMBIG_SCRIPTED_DELAY`` (seconds) makes it wait like a
remote LM, ``DISAMBIG_SCRIPTED_LOG`` names a file where it appends its question (to count calls across processes).
``DISAMBIG_SCRIPTED_BUILDS`` names a file where each build appends its process id. Loaded by path in Spark workers,
so it imports nothing from the tests folder.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

FACTORY = f"{Path(__file__).resolve()}:scripted_lm"
POISON = "POISON"


def scripted_answer(question: str) -> str:
    return f"Scripted answer to {question}"


class QuestionEchoEngine:
    """A DSPy engine whose reply is ``{"long_answer": scripted_answer(question)}``."""

    supports_response_schema = True
    supported_params = frozenset({"temperature", "max_tokens", "stop", "seed", "top_p", "response_format"})

    def complete(self, request: Any) -> Any:
        from dspy.lm15 import Message, Response, TextPart, Usage

        user = request.messages[-1].text or ""
        question = user.partition("question:")[2].strip()
        append(os.environ.get("DISAMBIG_SCRIPTED_LOG", ""), json.dumps(question))
        if POISON in question:
            raise RuntimeError(f"poisoned question {question!r}")
        time.sleep(float(os.environ.get("DISAMBIG_SCRIPTED_DELAY", "0")))
        text = json.dumps({"long_answer": scripted_answer(question)})
        usage = Usage(input_tokens=len(user.split()), output_tokens=len(text.split()))
        return Response(id=None, model=request.model, message=Message.assistant([TextPart(text)]),
                        finish_reason="stop", usage=usage)

    def stream(self, request: Any) -> Any:
        from dspy.lm15 import response_to_events

        return response_to_events(self.complete(request))

    def close(self) -> None:
        pass


def append(path: str, line: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def scripted_lm(settings: Any = None) -> Any:
    import dspy

    append(os.environ.get("DISAMBIG_SCRIPTED_BUILDS", ""), str(os.getpid()))
    return dspy.LM("scripted/echo", engine=QuestionEchoEngine(), cache=False, num_retries=0)
