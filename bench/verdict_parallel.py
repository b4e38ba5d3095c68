"""What parallel feedback calls buy VerDICt: its k execution-feedback calls one after another vs in a thread pool.

    python bench/verdict_parallel.py                       # 10 questions, 0.2 s per LM call, 1 / 4 / 8 / 20 threads
    python bench/verdict_parallel.py --latency 0.5 --threads 1 8

The LM is a stand-in for a remote one: a scripted engine that sleeps ``--latency`` seconds per call, as a network
round trip would, and may serve any number of calls at once. It answers each step from the hand-made corpus below
(the reading a passage states for the question, with its answer, or null), so every run gives the same
interpretations and the timing isolates scheduling. Retrieval is word overlap over the 56-passage corpus and the
encoder a hashed bag of words, so nothing loads a model. Each question runs VerDICt with k = 20, the relaxation
call on and the long answer off: 1 + 20 LM calls. Serial and threaded runs are checked to return the same
interpretations.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import statistics
import sys
import threading
import time
from typing import Any

import numpy as np

# Ten ambiguous questions, each with its relaxed query and readings; every reading is stated by two passages.
QUESTIONS = [
    ("Who won the world cup?", "world cup winner",
     [("Who won the 2018 men's FIFA World Cup?", "France"), ("Who won the 2019 women's FIFA World Cup?", "USA"),
      ("Who won the 2019 Rugby World Cup?", "South Africa")]),
    ("When was the eiffel tower built?", "eiffel tower built",
     [("When did construction of the Eiffel Tower start?", "1887"),
      ("When was the Eiffel Tower completed?", "1889")]),
    ("Who plays the doctor in doctor who?", "doctor who actor",
     [("Who played the Doctor in Doctor Who in 2010?", "Matt Smith"),
      ("Who played the Doctor in Doctor Who in 2018?", "Jodie Whittaker"),
      ("Who played the first Doctor in Doctor Who?", "William Hartnell")]),
    ("How many seasons of the office are there?", "the office seasons",
     [("How many seasons does the US version of The Office have?", "9"),
      ("How many series does the UK version of The Office have?", "2")]),
    ("Who is the president of georgia?", "georgia president",
     [("Who is the president of the country Georgia in 2020?", "Salome Zourabichvili"),
      ("Who is the governor of the US state of Georgia in 2020?", "Brian Kemp")]),
    ("What is the capital of australia?", "australia capital",
     [("What is the capital city of Australia?", "Canberra"),
      ("What was the capital of Australia before 1927?", "Melbourne")]),
    ("Who sang hallelujah?", "hallelujah singer",
     [("Who wrote and first sang Hallelujah in 1984?", "Leonard Cohen"),
      ("Who sang the 1994 cover of Hallelujah?", "Jeff Buckley"),
      ("Who won Eurovision 1979 with Hallelujah?", "Milk and Honey")]),
    ("When did the titanic sink?", "titanic sink",
     [("When did the RMS Titanic sink?", "15 April 1912"),
      ("When was the film Titanic released?", "1997")]),
    ("Who invented the telephone?", "telephone inventor",
     [("Who was granted the first US patent for the telephone?", "Alexander Graham Bell"),
      ("Who built an early telephone device in 1860?", "Antonio Meucci")]),
    ("How tall is mount everest?", "mount everest height",
     [("How tall is Mount Everest according to the 2020 survey?", "8,848.86 m"),
      ("How tall was Mount Everest according to the 1955 survey?", "8,848 m")]),
]


def corpus() -> tuple[list[Any], dict[tuple[str, str], tuple[str, str]]]:
    """Two passages per reading, plus on-topic passages that answer nothing; and, for each (question, passage
    text), the reading and answer that passage states (passages of other questions state nothing)."""
    from disambig.retrieval.passage import Passage

    passages, states = [], {}
    for q_index, (question, query, readings) in enumerate(QUESTIONS):
        for r_index, (reading, answer) in enumerate(readings):
            for copy in range(2):
                text = f"{query.capitalize()}: {reading[:-1]}? The answer is {answer} (source {copy + 1})."
                passages.append(Passage(f"q{q_index}r{r_index}c{copy}", query.title(), text))
                states[question, text] = (reading, answer)
        passages.append(Passage(f"q{q_index}x", query.title(), f"{query.capitalize()} is a popular topic."))
    return passages, states


class OverlapRetriever:
    """Word-overlap ranking (ties in corpus order); no index, no model."""

    name = "overlap"

    def __init__(self, passages: list[Any]) -> None:
        self.passages = passages

    @property
    def size(self) -> int:
        return len(self.passages)

    def search(self, query: str, k: int = 10) -> list[Any]:
        q = words(query)
        return sorted(self.passages, key=lambda p: -len(q & words(f"{p.title} {p.text}")))[:k]


class HashedBagOfWords:
    """Unit vectors of hashed word counts: texts that share words are close."""

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), 256), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in words(text):
                out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % 256] += 1.0
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


class SleepingEngine:
    """A stand-in remote LM: every call sleeps ``latency`` seconds, then answers its step from the corpus."""

    supports_response_schema = True
    supported_params = frozenset({"temperature", "max_tokens", "stop", "seed", "top_p", "response_format"})

    def __init__(self, latency: float, states: dict[tuple[str, str], tuple[str, str]]) -> None:
        self.latency = latency
        self.states = states
        self.relaxed = {question: query for question, query, _ in QUESTIONS}
        self.calls = 0
        self.in_flight = self.peak = 0
        self._lock = threading.Lock()

    def complete(self, request: Any) -> Any:
        from dspy.lm15 import Message, Response, TextPart, Usage

        with self._lock:
            self.calls += 1
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        time.sleep(self.latency)
        user = request.messages[-1].text or ""
        text = json.dumps(self.reply(user))
        with self._lock:
            self.in_flight -= 1
        return Response(id=None, model=request.model, message=Message.assistant([TextPart(text)]),
                        finish_reason="stop", usage=Usage(input_tokens=len(user.split()), output_tokens=12))

    def reply(self, user: str) -> dict[str, Any]:
        question = re.search(r"question: (.*)", user)[1]
        passage = re.search(r"document: [^|]*\| (.*?)(?:</passage>)?$", user, re.MULTILINE)  # quoted or plain
        if passage is None:  # the relaxation step
            return {"query": self.relaxed.get(question, question)}
        reading, answer = self.states.get((question, passage[1]), (None, None))
        return {"interpretation": reading, "answer": answer}

    def stream(self, request: Any) -> Any:
        from dspy.lm15 import response_to_events

        return response_to_events(self.complete(request))

    def close(self) -> None:
        pass


def words(text: str) -> set[str]:
    return {w.strip(".,?:()'").lower() for w in text.split()} - {""}


def run(threads: int, latency: float) -> dict[str, Any]:
    """Every question once with ``threads`` feedback calls in flight; wall time per question and the outputs."""
    import dspy

    from disambig.lm.adapter import CompactJSONAdapter
    from disambig.programs.verdict import VerDICt

    passages, states = corpus()
    engine = SleepingEngine(latency, states)
    lm = dspy.LM("remote/stand-in", engine=engine, cache=False, num_retries=0)
    program = VerDICt(OverlapRetriever(passages), embedder=HashedBagOfWords(), k=20, long_answer="none",
                      parallel=threads)
    seconds, outputs, calls = [], [], []
    with dspy.context(lm=lm, adapter=CompactJSONAdapter()):
        for question, _, _ in QUESTIONS:
            start = time.perf_counter()
            pred = program(question=question)
            seconds.append(time.perf_counter() - start)
            outputs.append([(i["question"], i["answer"], tuple(i["passage_ids"])) for i in pred.interpretations])
            calls.append(pred.trace["lm_calls"])
    return {"threads": threads, "seconds": seconds, "outputs": outputs, "lm_calls": calls, "peak": engine.peak}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds each stand-in LM call sleeps")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 4, 8, 20], help="feedback calls in flight")
    parser.add_argument("--json", help="also write the numbers to this file")
    args = parser.parse_args(argv)

    run(1, 0.0)  # warm-up: imports (sklearn's HDBSCAN, the adapter) happen here, not in the first timed question
    runs = [run(t, args.latency) for t in args.threads]
    if any(r["outputs"] != runs[0]["outputs"] for r in runs):
        print("threaded runs returned different interpretations than the first run", file=sys.stderr)
        return 1
    base = statistics.fmean(runs[0]["seconds"])
    found = statistics.fmean(len(o) for o in runs[0]["outputs"])
    load = os.getloadavg()[0]
    print(f"{len(QUESTIONS)} questions, k = 20, {args.latency} s per LM call, "
          f"{statistics.fmean(runs[0]['lm_calls']):.0f} LM calls per question, "
          f"{found:.1f} interpretations per question (identical in every run); {os.cpu_count()} CPUs, "
          f"1-minute load average {load:.1f} at start\n")
    print("| feedback threads | sleep floor (s) | mean s / question | p50 | max | peak calls in flight | speed-up |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in runs:
        mean = statistics.fmean(r["seconds"])
        floor = args.latency * (1 + math.ceil(20 / r["threads"]))  # relax, then waves of feedback calls
        print(f"| {r['threads']} | {floor:.2f} | {mean:.2f} | {statistics.median(r['seconds']):.2f} "
              f"| {max(r['seconds']):.2f} | {r['peak']} | {base / mean:.1f}x |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"latency": args.latency, "runs": [{k: v for k, v in r.items() if k != "outputs"}
                                                         for r in runs]}, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
