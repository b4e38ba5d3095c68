"""Importing the package must stay cheap: no torch, pyserini, JVM or llama.cpp."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ["torch", "pyserini", "jnius", "llama_cpp", "sentence_transformers", "faiss", "mlflow", "dspy"]


def test_import_disambig_loads_no_heavy_backend():
    code = (
        "import sys, disambig, disambig.settings, disambig.lm, disambig.retrieval, disambig.cli; "
        f"print([m for m in {HEAVY!r} if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
