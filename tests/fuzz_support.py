"""What every fuzz test checks: a hostile input ends in one clear error (exit code 2, no traceback) or a per-row
error, and no file is changed that the command did not mean to write. Hypothesis is bounded so the suite stays fast."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from hypothesis import HealthCheck, settings

DEEPER = int(os.environ.get("DISAMBIG_FUZZ_EXAMPLES", "0"))
FUZZ = settings(max_examples=DEEPER or 40, deadline=None, derandomize=not DEEPER, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
"""Bounded and repeatable: the same 40 cases each run (``derandomize``), no example database written to the checkout.
``DISAMBIG_FUZZ_EXAMPLES=500`` searches deeper, with fresh random cases each time."""

TEXT = {"blacklist_categories": ("Cs",)}  # any character a command line or a JSON string can carry


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (relative path) with a hash of its bytes."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()[:16]
            for p in sorted(folder.rglob("*")) if p.is_file()}


def changed(before: dict[str, str], after: dict[str, str], allowed: tuple[str, ...] = ()) -> list[str]:
    """Files created, changed or removed between two snapshots, except those under an ``allowed`` prefix."""
    names = sorted(set(before) | set(after))
    return [n for n in names if before.get(n) != after.get(n) and not n.startswith(allowed)]


def one_clear_error(result) -> str:
    """Assert a ``CliRunner`` result is a refusal a user can act on: exit code 2, no traceback, an error line or
    Click's usage error; return the output."""
    output = result.output
    assert result.exit_code == 2, (result.exit_code, output[-2000:], result.exception)
    assert "Traceback" not in output, output[-2000:]
    assert "error:" in output or "Error" in output, output[-2000:]
    return output


@contextlib.contextmanager
def working_folder() -> Iterator[Path]:
    """A fresh folder, made the working directory for the block (each hypothesis example gets its own)."""
    previous = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="disambig-fuzz-") as folder:
        os.chdir(folder)
        try:
            yield Path(folder)
        finally:
            os.chdir(previous)
