"""``disambig serve``: serve a registered compiled program over HTTP with ``mlflow models serve``."""

from __future__ import annotations

import os
import sys
import sysconfig

import typer

from disambig.cli import options, process_group
from disambig.cli.errors import user_errors
from disambig.errors import ConfigurationError


@user_errors
def serve(
    model_uri: str = typer.Argument(..., help="MLflow model URI from `disambig compile`, e.g. models:/NAME/1."),
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(5001, "--port", min=1, max=65535),
    tracking_uri: str | None = options.TRACKING_URI,
    timeout: int = typer.Option(1800, "--timeout", min=1,
                                help="Seconds a request may take (MLflow's default, 60, is less than one DFA question "
                                     "on the embedded LM)."),
) -> None:
    """Answer POST /invocations {"inputs": ["question", ...]} with the compiled program (JSON state, no pickle).

    A count program (dfa, ...) counts over chunks: send rows with the chunk file and the scope, as
    {"dataframe_records": [{"question": ..., "corpus": ".../corpus.jsonl", "scope": "DB_ID"}]}. The corpus is a
    path on the serving machine, read as the server's user: keep the default host (127.0.0.1) unless the clients
    are trusted.

    The server runs as its own process group: stopping this command (SIGTERM, SIGINT, SIGHUP) stops the server and
    its workers with it.
    """
    from disambig.evaluation.tracking import tracking_uri as resolve_uri

    if not model_uri.startswith(("models:/", "runs:/")):
        raise ConfigurationError(f"{model_uri!r} is not an MLflow model URI; compile with tracking on to get one")
    # mlflow starts `uvicorn` by name: find it beside this Python even when its environment is not activated
    scripts = dict.fromkeys([sysconfig.get_path("scripts"), os.path.dirname(sys.executable)])
    path = os.pathsep.join(p for p in (*scripts, os.environ.get("PATH", "")) if p)
    env = {**os.environ, "MLFLOW_TRACKING_URI": resolve_uri(tracking_uri), "PATH": path}
    command = [sys.executable, "-m", "mlflow", "models", "serve", "-m", model_uri, "--env-manager", "local",
               "-h", host, "-p", str(port), "-t", str(timeout)]
    raise typer.Exit(process_group.run_as_group(command, env))
