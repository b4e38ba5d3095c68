"""The second LM of a run: DIVA's rewriting and verification steps (the paper uses GPT-4 there), ADF's sub-questions
and hypothetical passages and VerDICt's execution feedback, when a run gives them their own.

``--verifier-lm SPEC`` sets ``DISAMBIG_VERIFIER_LM``; programs wrap those steps in ``using_verifier()``, which
switches the LM with ``dspy.context`` for the block. Nothing is stored on a predictor, so saved programs stay JSON.
Unset, or the same spec as the run's LM, the block uses the run's LM.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

VERIFIER_LM_ENV = "DISAMBIG_VERIFIER_LM"
"""Read by ``load_settings`` as ``Settings.verifier_lm``."""

_built: dict[str, Any] = {}
_lock = threading.Lock()


def verifier_spec() -> str:
    """The second LM spec of this run ("" when the run's LM makes those calls too, also when the
    spec names the run's model in other words, ``local`` and ``local:qwen2.5-1.5b``)."""
    from disambig.lm.spec import same_model
    from disambig.settings import load_settings

    settings = load_settings()
    spec = settings.verifier_lm.strip()
    return "" if not spec or same_model(spec, settings.lm) else spec


def verifier_lm() -> Any | None:
    """The ``dspy.LM`` named by ``DISAMBIG_VERIFIER_LM`` (built once per spec), or None."""
    spec = verifier_spec()
    if not spec:
        return None
    with _lock:
        if spec not in _built:
            from disambig.lm.runtime import build_lm
            from disambig.settings import load_settings

            _built[spec] = build_lm(load_settings(), spec)
        return _built[spec]


@contextmanager
def using_verifier() -> Iterator[None]:
    """Run the block with the verifier LM when the run has one, else with the run's LM."""
    import dspy

    lm = verifier_lm()
    if lm is None:
        yield
        return
    with dspy.context(lm=lm):
        yield
