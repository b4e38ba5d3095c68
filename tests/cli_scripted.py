"""The ``disambig`` command line for a subprocess that tests kill: ``python tests/cli_scripted.py eval ...``.

Every LM the command builds is the one ``DISAMBIG_LM_FACTORY`` names (``tests/batch_fakes.py:scripted_lm``...), as the
serving path already does, so ``eval`` and ``compile`` run without a model. With ``KILL_AT_REPLACE=NAME`` the process
kills itself (SIGKILL) at the moment it would rename a finished temporary file onto a file called ``NAME``: the worst
moment for a writer that is not atomic.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any


def use_factory_lm() -> None:
    import disambig.lm.runtime as runtime
    from disambig.serving.cache import LM_FACTORY_ENV, lm_factory

    factory = lm_factory(os.environ[LM_FACTORY_ENV])
    runtime.build_lm = lambda settings, spec=None, **kwargs: factory(settings)


def kill_at_replace(name: str) -> None:
    real = os.replace

    def replace(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        if Path(dst).name == name:
            os.kill(os.getpid(), signal.SIGKILL)
        real(src, dst, *args, **kwargs)

    os.replace = replace


if __name__ == "__main__":
    use_factory_lm()
    if os.environ.get("KILL_AT_REPLACE"):
        kill_at_replace(os.environ["KILL_AT_REPLACE"])
    from disambig.cli.app import main

    sys.argv = ["disambig", *sys.argv[1:]]
    main()
