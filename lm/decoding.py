"""Decoding presets a run can choose with ``--decoding`` (``DISAMBIG_DECODING``).

``greedy`` (the default) keeps runs deterministic: temperature 0 and each LM's own token cap. ``paper`` is DIVA's
setting (seed 002, A.4: "max tokens set to 300, top-p to 1.0, and temperature to 0.3").
"""

from __future__ import annotations

from typing import Any

from disambig.errors import ConfigurationError

DECODINGS: dict[str, dict[str, Any]] = {
    "greedy": {"temperature": 0.0},
    "paper": {"temperature": 0.3, "top_p": 1.0, "max_tokens": 300},
}


def decoding_kwargs(name: str) -> dict[str, Any]:
    """The ``make_lm`` keyword arguments of preset ``name``."""
    if name not in DECODINGS:
        raise ConfigurationError(f"unknown decoding {name!r}; choose one of: {', '.join(DECODINGS)}")
    return dict(DECODINGS[name])
