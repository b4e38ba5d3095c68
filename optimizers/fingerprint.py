"""A program's structure (predictor names and their signature field names) and its hash.

DSPy's JSON state pairs saved fields with the program's fields by position, so loading a state into a
program whose fields were renamed or reordered silently mislabels them. The fingerprint catches that.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def structure(program: Any) -> list[dict[str, Any]]:
    """``[{predictor, inputs, outputs}]`` for every named predictor, in DSPy's order."""
    return [
        {
            "predictor": name,
            "inputs": list(predictor.signature.input_fields),
            "outputs": list(predictor.signature.output_fields),
        }
        for name, predictor in program.named_predictors()
    ]


def fingerprint(program: Any) -> str:
    """SHA-256 of the structure, as 16 hex digits."""
    text = json.dumps(structure(program), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
