"""The fixtures of ``tests/fixtures/release-9e7fddc/``, made with the code of 9e7fddc (the last release before
programs/ got a folder per method), and the scripted LM and retriever they were made with (``tests/test_moved.py``).

Made by running this file with ``disambig`` imported from the old tree, laid out as the wheel maps it:

    git worktree add /tmp/old9e7 9e7fddc
    mkdir -p /tmp/old9e7-path/disambig && cp -r /tmp/old9e7/disambig/. /tmp/old9e7-path/disambig/
    for d in lm retrieval metrics evaluation signatures programs optimizers data; do
        ln -s /tmp/old9e7/$d /tmp/old9e7-path/disambig/$d; done
    PYTHONPATH=/tmp/old9e7-path .venv/bin/python tests/release_9e7fddc.py tests/fixtures/release-9e7fddc
    git worktree remove /tmp/old9e7

It compiles ``verdict`` and ``dtv-pseudo`` with LabeledFewShot and the scripted LM, keeps their JSON state and
manifest as that release saves them (``artifacts/``), logs ``dtv-pseudo`` as an MLflow model (``mlflow-model/``, its
code file stored as ``serving_model.py.txt`` so that tools do not read a frozen copy as project code), and lists the
classes and functions of every module that moved (``modules.json``).
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

import dspy
from program_fakes import FakeEmbedder, scripted_lm

from disambig.retrieval.passage import Passage

MOVED = ["adf", "adf_gate", "adf_geometry", "amd", "closed_book", "consolidate", "count_baselines", "dfa",
         "dfa_batching", "dfa_dedup", "dfa_filter", "diva", "diversify", "dtv_pseudo", "expanded_retrieval",
         "expansion", "iterative_rag", "per_reading_rag", "rac_top20", "vanilla_rag", "verdict"]
MEN = "Who has the most international goals in men's football?"
WOMEN = "Who has the most international goals in women's football?"
PASSAGES = [Passage("p1", "Ronaldo", "Ronaldo has the most international goals in men's football."),
            Passage("p2", "Sinclair", "Sinclair has the most international goals in women's football."),
            Passage("p3", "Ronaldo again", "Cristiano Ronaldo leads men's international scoring.")]
READINGS = {"Ronaldo": (MEN, "Cristiano Ronaldo"), "Sinclair": (WOMEN, "Christine Sinclair"),
            "Ronaldo again": (MEN, "Cristiano Ronaldo")}


class ListRetriever:
    name = "list"
    embedder = FakeEmbedder()
    size = len(PASSAGES)

    def search(self, query: str, k: int = 10) -> list[Passage]:
        return PASSAGES[:k]


def feedback(user: str) -> dict:
    reading, answer = READINGS[re.search(r"<passage>([\w ]+) \|", user)[1]]
    return {"interpretation": reading, "answer": answer}


RULES = {
    "Turn the question into a short, broad search query": lambda _: {"query": "football goals"},
    "ONE document, a passage from the search results": feedback,
    "Write a long-form answer of at least three sentences": lambda _: {"long_answer": "Men: Ronaldo. Women: Sinclair."},
    "Decide why a question may be ambiguous": lambda _: {"reason": "men or women", "types": ["AmbSub"]},
    "Rewrite the ambiguous question": lambda _: {"sub_questions": [MEN, WOMEN]},
    "Answer each of the specific questions": lambda _: {"answers": ["Cristiano Ronaldo", "Christine Sinclair"]},
}


def examples(n: int, offset: int = 0) -> list[dspy.Example]:
    return [dspy.Example(id=f"t{i}", question=f"Who scored the most goals in league {i}?", reason=f"men or women {i}",
                         long_answer=f"Men: player {i}. Women: player {i}.").with_inputs("question")
            for i in range(offset, offset + n)]


def two_readings(example: dspy.Example, pred: dspy.Prediction, trace: object = None) -> float:
    return float(len(pred.interpretations) >= 2)


def main(fixtures: Path) -> None:
    import mlflow

    from disambig.lm.adapter import CompactJSONAdapter
    from disambig.optimizers.compile import CompileJob, compile_program
    from disambig.optimizers.recipes import Budget
    from disambig.optimizers.tracking import log_compile_run
    from disambig.programs import build_program

    scratch = Path(tempfile.mkdtemp())
    dspy.configure(lm=scripted_lm(RULES)[0], adapter=CompactJSONAdapter())
    results = {}
    for name, retriever in (("verdict", ListRetriever()), ("dtv-pseudo", None)):
        job = CompileJob(name, "toy", "two-readings", "labeled-fewshot", Budget(demos=2), lm_spec="openai/scripted")
        results[name] = compile_program(job, build_program(name, retriever=retriever), examples(3),
                                        examples(2, offset=10), two_readings, scratch / "artifacts",
                                        {"train": "toy-train", "heldout": "toy-heldout"})
        shutil.copytree(results[name].state_path.parent, fixtures / "artifacts" / name / "toy", dirs_exist_ok=True)
    uri = f"sqlite:///{scratch / 'mlflow.db'}"
    logged = log_compile_run(results["dtv-pseudo"], uri=uri)
    mlflow.set_tracking_uri(uri)
    model = Path(mlflow.artifacts.download_artifacts(artifact_uri=logged["model_uri"], dst_path=str(scratch / "m")))
    shutil.copytree(model, fixtures / "mlflow-model", dirs_exist_ok=True)
    (fixtures / "mlflow-model" / "serving_model.py").rename(fixtures / "mlflow-model" / "serving_model.py.txt")
    names = {}
    for old in MOVED:
        module = importlib.import_module(f"disambig.programs.{old}")
        names[module.__name__] = sorted(n for n, v in vars(module).items() if not n.startswith("_")
                                        and (inspect.isclass(v) or inspect.isfunction(v))
                                        and v.__module__ == module.__name__)
    (fixtures / "modules.json").write_text(json.dumps(names, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
