"""``disambig lm check`` and ``disambig lm serve``: measure the LM; serve it over an OpenAI-compatible HTTP API."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from disambig.cli import options
from disambig.cli.errors import user_errors
from disambig.errors import ConfigurationError
from disambig.settings import load_settings

app = typer.Typer(no_args_is_help=True, help="Inspect or serve the language model.")


@app.command("check")
@user_errors
def check(lm: str | None = options.LM, threads: int | None = options.THREADS) -> None:
    """Load the LM, print measured prefill/decode tokens per second and a schema-constrained call's result."""
    from dspy.utils.exceptions import LMError

    from disambig.lm.check import run_check
    from disambig.lm.spec import parse_spec
    from disambig.lm.threads import check_threads

    settings = load_settings(lm=lm, threads=threads)
    if parse_spec(settings.lm).is_local:
        check_threads(settings.threads)  # before the model is assembled or loaded
    try:
        report = run_check(settings)
    except LMError as exc:  # a remote LM without its key, an unknown model, no network...
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ConfigurationError(f"the LM {settings.lm!r} failed its first call: {reason}") from None
    table = Table(title=f"LM check: {settings.lm}")
    table.add_column("measure")
    table.add_column("value", justify="right", overflow="fold")
    for key, value in report.rows():
        table.add_row(key, value)
    Console().print(table)


@app.command("serve")
@user_errors
def serve(
    model: str = typer.Option("local", "--model", metavar="SPEC",
                              help="Local model: local, local:NAME (smollm2, qwen2.5-0.5b, qwen2.5-1.5b) or "
                                   "local:/path/model.gguf."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (keep loopback unless clients are "
                                                         "trusted: the API has no key)."),
    port: int = typer.Option(8000, "--port", min=1, max=65535),
    parallel: int = typer.Option(1, "--parallel", min=1, metavar="N",
                                 help="Requests answered at once: N server processes on the port, each with its own "
                                      "context and THREADS/N threads (llama-cpp-python answers one at a time)."),
    ctx: int | None = typer.Option(None, "--ctx", min=256, metavar="N",
                                   help="Context window in tokens (env DISAMBIG_CTX, default 8192)."),
    threads: int | None = options.THREADS,
    repeat_penalty: float | None = options.REPEAT_PENALTY,
    repetition_guard: str | None = options.REPETITION_GUARD,
    prompt_cache_mb: int = typer.Option(0, "--prompt-cache-mb", min=0, metavar="MB",
                                        help="Keep KV states of earlier requests for prompt-prefix reuse (0: off). "
                                             "Faster, but with several clients at once a reply may depend on "
                                             "which requests came before it."),
) -> None:
    """Serve MODEL at http://HOST:PORT/v1 (OpenAI-compatible: /v1/models, /v1/chat/completions with JSON-schema
    response_format and logprobs) until Ctrl-C or SIGTERM. Clients: --lm openai/MODEL_ID --api-base URL."""
    from disambig.lm.server import check_port, serve_config
    from disambig.lm.server import serve as run_server
    from disambig.lm.threads import check_threads

    check_port(host, port)  # before a model is assembled or loaded
    settings = load_settings(threads=threads, ctx=ctx, repeat_penalty=repeat_penalty,
                             repetition_guard=repetition_guard)
    check_threads(settings.threads)
    check_threads(parallel, "--parallel")  # each server process runs at least one thread
    config = serve_config(model, cache_dir=settings.cache_dir, host=host, port=port, parallel=parallel,
                          ctx=settings.ctx, threads=settings.threads, repeat_penalty=settings.repeat_penalty,
                          repetition_guard=settings.repetition_guard, prompt_cache_mb=prompt_cache_mb)
    workers = f"{parallel} processes x {config.worker_threads} threads" if parallel > 1 else \
        f"{config.worker_threads} threads"
    typer.echo(f"serving {config.model_id} ({config.model_path}; {workers}, context {config.ctx}) at {config.url}",
               err=True)

    def ready() -> None:
        typer.echo(f"ready: {config.url} model id {config.model_id!r}; clients: --lm openai/{config.model_id} "
                   f"--api-base {config.url} (Ctrl-C stops)")

    run_server(config, on_ready=ready)
    typer.echo("stopped", err=True)
