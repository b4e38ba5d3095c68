"""Shared fixtures: DSPy settings reset after every test; the embedded LM loaded once per session."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(autouse=True)
def _reset_dspy():
    import dspy

    yield
    dspy.configure(lm=None, adapter=None)


@pytest.fixture(scope="session")
def local_lm():
    """The embedded SmolLM2 as a ``dspy.LM`` (real model, loaded once)."""
    from disambig.lm import make_lm

    lm = make_lm("local", max_tokens=64)
    yield lm
    lm.engine.close()
