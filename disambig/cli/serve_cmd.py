"""``disambig serve``: serve a registered compiled program over HTTP with MLflow's scoring server
(``disambig.serving.app``)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

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
    lm: str | None = options.LM,
    api_base: str | None = options.API_BASE,
    parallel_calls: int | None = options.PARALLEL_CALLS,
    passage_framing: str | None = options.PASSAGE_FRAMING,
    timeout: int = typer.Option(1800, "--timeout", min=1,
                                help="Seconds a request may take (MLflow's default, 60, is less than one DFA question "
                                     "on the embedded LM)."),
    max_request_bytes: int = typer.Option(1_000_000, "--max-request-bytes", min=1,
                                          help="Largest request body; a larger one is refused with HTTP 413 before it "
                                               "is parsed."),
    max_concurrent: int = typer.Option(4, "--max-concurrent", min=1,
                                       help="Requests answered at once (the embedded LM answers one LM call at a "
                                            "time whatever this is; a remote LM may take several)."),
    max_queue: int = typer.Option(16, "--max-queue", min=0,
                                  help="Requests that may wait for a turn; any beyond gets HTTP 503 with Retry-After."),
    read_timeout: int = typer.Option(20, "--read-timeout", min=1,
                                     help="Seconds a client has to send a request's headers (a connection that sends "
                                          "none is closed) and again its body (HTTP 408 past it)."),
    write_timeout: int = typer.Option(20, "--write-timeout", min=1,
                                      help="Seconds an answer may wait for its client to read it (once the socket's "
                                           "buffers are full); past it the connection is closed."),
    max_connections: int = typer.Option(64, "--max-connections", min=2,
                                        help="Connections held open at once, more than --max-concurrent + "
                                             "--max-queue; past it a new one takes the place of the one that has "
                                             "kept the server waiting on its client longest (HTTP 503 when every "
                                             "place holds a request in progress)."),
) -> None:
    """Answer POST /invocations {"inputs": ["question", ...]} with the compiled program (JSON state, no pickle).

    A count program (dfa, ...) counts over chunks: send rows with the chunk file and the scope, as
    {"dataframe_records": [{"question": ..., "corpus": ".../corpus.jsonl", "scope": "DB_ID"}]}. The corpus is a
    path on the serving machine, read as the server's user: keep the default host (127.0.0.1) unless the clients
    are trusted. A body over --max-request-bytes gets HTTP 413, a request that is not a table of questions (no
    question column, a question that is not text) HTTP 400 with the reason. At most --max-concurrent requests are
    answered at once and --max-queue wait their turn; a request beyond both gets HTTP 503 at once, with a Retry-After
    header and the reason, rather than waiting unanswered. A request's body is read in full before it takes a turn: a
    client whose headers have not all arrived --read-timeout seconds after it connected (or after its last answer) is
    disconnected, and one whose body has not arrived --read-timeout seconds after its headers gets HTTP 408. An
    answer the socket has not taken --write-timeout seconds after its buffers filled (a client that does not read)
    is dropped with its connection. At most --max-connections are held open: past it, a new connection takes the
    place of the one still sending its request, idle, or not reading its answer for the longest (closed with no
    reply); only when every place holds a request being answered or waiting is the new one refused with HTTP 503.

    The program answers with --lm (or DISAMBIG_LM), else the LM its manifest records when that is available here (an
    embedded model or GGUF file this machine has, or a remote LiteLLM string, used as it is), else the embedded
    default; the startup line says which and why, and GET /ping answers {"status": "ok", "lm": SPEC}.

    The server runs as its own process group: stopping this command (SIGTERM, SIGINT, SIGHUP) stops the server and
    its workers with it.
    """
    from disambig.evaluation.tracking import tracking_uri as resolve_uri
    from disambig.lm import parse_spec
    from disambig.lm.runtime import check_remote_lm
    from disambig.lm.server import check_port
    from disambig.serving.app import serve_command
    from disambig.serving.cache import LM_FACTORY_ENV
    from disambig.serving.connections import check_max_connections
    from disambig.serving.lm import LM_ENV, served_lm
    from disambig.settings import load_settings

    check_max_connections(max_connections, max_concurrent, max_queue)
    if not model_uri.startswith(("models:/", "runs:/")):
        raise ConfigurationError(f"{model_uri!r} is not an MLflow model URI; compile with tracking on to get one")
    settings = load_settings(lm=lm)
    check_port(host, port)  # the server would find a busy port or a bad host only after loading the model
    given = lm or os.environ.get(LM_ENV)
    if given and not os.environ.get(LM_FACTORY_ENV):  # a factory builds LMs a spec cannot name
        parse_spec(settings.lm)  # a spec that cannot be used, refused before the model is fetched
        check_remote_lm(settings)  # the LM given, at --api-base
    store = resolve_uri(tracking_uri)
    with downloaded(model_uri, store) as folder:
        chosen = served_lm(folder, lm, os.environ.get(LM_ENV), settings.lm)
        if not given:
            check_remote_lm(settings, chosen.spec)  # the LM the manifest records, before the server starts
        typer.echo(f"serving {model_uri} at http://{host}:{port} · LM {chosen.describe()}")
        command, variables = serve_command(folder, host, port, timeout, max_request_bytes, max_concurrent,
                                           max_queue, read_timeout, write_timeout, max_connections)
        code = process_group.run_as_group(command, {**os.environ, "MLFLOW_TRACKING_URI": store, **variables,
                                                    LM_ENV: chosen.spec})
    raise typer.Exit(code)


@contextmanager
def downloaded(model_uri: str, store: str) -> Iterator[str]:
    """The model's folder, fetched from the MLflow ``store`` (its runs and its model registry) into a temporary folder
    kept while the server runs. A sqlite store must exist: it is read, never created."""
    import mlflow
    from mlflow.exceptions import MlflowException
    from mlflow.tracking._tracking_service.utils import _use_tracking_uri

    from disambig.evaluation.tracking import check_store

    check_store(store)
    with tempfile.TemporaryDirectory(prefix="disambig-serve-") as folder:
        try:  # MLflow looks a models:/ URI up in the registry of the process's tracking URI, whatever it is given
            with _use_tracking_uri(store):
                path = mlflow.artifacts.download_artifacts(artifact_uri=model_uri, dst_path=folder,
                                                           tracking_uri=store)
        except MlflowException as exc:
            raise ConfigurationError(f"cannot fetch {model_uri!r} from the MLflow store {store}: {exc.message}") \
                from None
        except ModuleNotFoundError as exc:  # a postgresql:// or mysql:// store without its driver
            raise ConfigurationError(f"the MLflow store {store} needs the package {exc.name!r}, which is not "
                                     "installed; install it or use a sqlite:/// store") from None
        yield path
