"""Options shared by several commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

LM = typer.Option(None, "--lm", help="LM spec: local, local:/path.gguf or a LiteLLM model (env DISAMBIG_LM).")


def _export_api_base(value: str | None) -> str | None:
    """Make ``--api-base`` the run's ``DISAMBIG_API_BASE``, which every LM built from settings reads (the program,
    judge, verifier and reflection LMs, and Spark executors)."""
    import os

    if value is not None:
        os.environ["DISAMBIG_API_BASE"] = value
    return value


API_BASE = typer.Option(None, "--api-base", metavar="URL", callback=_export_api_base,
                        help="OpenAI-compatible endpoint of a remote --lm such as openai/MODEL, e.g. "
                             "http://127.0.0.1:8000/v1 from `disambig lm serve` (env DISAMBIG_API_BASE; key from env "
                             "DISAMBIG_API_KEY or OPENAI_API_KEY). Checked with one request before the run.")


def _export_parallel_calls(value: int | None) -> int | None:
    """Make ``--parallel-calls`` the run's ``DISAMBIG_PARALLEL_CALLS``, which programs read when they run independent
    calls (``disambig.lm.parallel``), in this process and in Spark executors or a served model."""
    import os

    if value is not None:
        os.environ["DISAMBIG_PARALLEL_CALLS"] = str(value)
    return value


PARALLEL_CALLS = typer.Option(None, "--parallel-calls", min=1, metavar="N", callback=_export_parallel_calls,
                              help="Independent LM calls inside a program (VerDICt's feedback calls, DIVA's "
                                   "verifications, AMD's agents, DFA's judge batches) sent at once to a remote LM "
                                   "(env DISAMBIG_PARALLEL_CALLS; default 8 remote). The in-process model takes "
                                   "them one at a time unless N is above 1: then it decodes up to N together in one "
                                   "batch (near-ties may go the other way; docs/benchmarks.md).")
THREADS = typer.Option(None, "--threads", min=1,
                       help="CPU threads of the in-process model; with a remote LM, questions answered at once by "
                            "eval, batch and compile (env DISAMBIG_THREADS; default: the cores other processes leave "
                            "free now).")
CACHE = typer.Option(None, "--cache/--no-cache",
                     help="Reuse LM responses and retrieval rankings from the cache directory (env "
                          "DISAMBIG_LM_CACHE; off by default so timings are real).")
VERIFIER_LM = typer.Option(None, "--verifier-lm",
                           help="Second LM for a program's side steps: DIVA's rewriting and verification (the "
                                "paper uses GPT-4 there), ADF's sub-questions and hypothetical passages, VerDICt's "
                                "execution feedback (env DISAMBIG_VERIFIER_LM; default --lm).")
DECODING = typer.Option(None, "--decoding",
                        help="greedy (default) or paper: temperature 0.3, top-p 1, 300 tokens (env DISAMBIG_DECODING).")
REPETITION_GUARD = typer.Option(None, "--repetition-guard", metavar="NxR|off",
                                help="Stop an embedded-LM reply once a run of N words occurs R times and cut it to its "
                                     "last whole sentence (default 6x3; env DISAMBIG_REPETITION_GUARD).")
REPEAT_PENALTY = typer.Option(None, "--repeat-penalty",
                              help="llama.cpp's repetition penalty of the embedded LM (default 1.0, off; env "
                                   "DISAMBIG_REPEAT_PENALTY).")
PROMPT_LOOKUP = typer.Option(None, "--prompt-lookup", min=0, max=16, metavar="N",
                             help="Embedded LM: draft up to N reply tokens a step from the prompt and check them in "
                                  "one batch; copied text decodes faster, greedy replies the same up to rounding "
                                  "(0: off, at most 16; env DISAMBIG_PROMPT_LOOKUP).")


def _export_passage_framing(value: str | None) -> str | None:
    """Make ``--passage-framing`` the run's ``DISAMBIG_PASSAGE_FRAMING``, which ``load_settings`` reads here and in
    the processes the command starts (a served model, Spark executors); ``load_settings`` checks the name."""
    import os

    if value is not None:
        os.environ["DISAMBIG_PASSAGE_FRAMING"] = value
    return value


PASSAGE_FRAMING = typer.Option(None, "--passage-framing", metavar="screened|quoted|plain",
                               callback=_export_passage_framing,
                               help="How retrieved passages are shown to the LM: screened (default: quoted as "
                                    "untrusted text, passages that read as instructions withheld), quoted, or plain "
                                    "(the numbered list of before the defences; env DISAMBIG_PASSAGE_FRAMING).")
PROXY_TOP = typer.Option(None, "--proxy-top", min=1, metavar="N",
                         help="Judge interpretations that cite no passage against U_q: the top N passages "
                              "--proxy-retriever finds for the question, one list shared by every system "
                              "(VerDICt: 20). Default: each answer's own passages.")
PROXY_RETRIEVER = typer.Option("hybrid", "--proxy-retriever", help="bm25, dense or hybrid: the retriever of U_q.")
TRACKING_URI = typer.Option(None, "--tracking-uri",
                            help="MLflow store (default: env MLFLOW_TRACKING_URI, else sqlite:///mlflow.db).")
PROGRAM_OPTION = typer.Option([], "--option", "--set", metavar="KEY=VALUE",
                              help="A constructor argument of the program (repeatable), e.g. style=asqa; VALUE is read "
                                   "as JSON when it parses (3, 0.5, true, null, [1, 2]), else as text.")


def parse_program_options(items: list[str], program: str, artifact: str = "") -> dict[str, Any]:
    """``--option KEY=VALUE`` items as constructor arguments of ``program``, checked against its signature.

    Raises:
        ValueError: an item without ``=`` or a key given twice.
        ConfigurationError: a key the program's constructor does not take (the message names those it takes), or
            options beside a compiled ``artifact`` (it is rebuilt with the arguments it was compiled with).
    """
    import json

    from disambig.errors import ConfigurationError
    from disambig.programs import check_options

    parsed: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"--option {item!r} is not KEY=VALUE; e.g. --option style=asqa")
        if key in parsed:
            raise ValueError(f"--option {key!r} is given twice; give each key once")
        try:
            parsed[key] = json.loads(value)
        except json.JSONDecodeError:
            parsed[key] = value
    if parsed and artifact:
        raise ConfigurationError("--option sets a new program's constructor arguments; a compiled --artifact is "
                                 "rebuilt with the ones it was compiled with (its manifest's knobs)")
    check_options(program, parsed)
    return parsed


def check_proxy(proxy_top: int | None, judged: bool) -> None:
    """Refuse ``--proxy-top`` when no judge metric is asked for (U_q would be retrieved for nothing)."""
    if proxy_top is not None and not judged:
        raise ValueError(f"--proxy-top {proxy_top} sets the U_q of the judge metrics and none is asked for; add e.g. "
                         "-m g-precision -m g-recall -m g-f1 (with --judge-lm), or drop --proxy-top")


def export_lm_roles(verifier_lm: str | None, decoding: str | None, repetition_guard: str | None = None,
                    repeat_penalty: float | None = None, prompt_lookup: int | None = None, *, lm: str | None = None,
                    threads: int | None = None) -> None:
    """Make ``--verifier-lm``, ``--decoding``, ``--repetition-guard``, ``--repeat-penalty``, ``--prompt-lookup``,
    ``--lm`` and ``--threads`` the run's ``DISAMBIG_*`` variables, which the programs' verifier LM and every LM built
    from settings read: a verifier LM naming the run's model is not loaded twice, and an in-process one beside an
    in-process run gets its ``--threads`` (beside a remote run ``--threads`` counts questions at once, not cores, so
    it is not passed on)."""
    import os

    from disambig.lm.spec import is_local_spec
    from disambig.settings import Settings

    run_lm = lm or os.environ.get("DISAMBIG_LM") or Settings.lm
    cores = None if threads is None or not is_local_spec(run_lm) else str(threads)
    for name, value in (("DISAMBIG_LM", lm), ("DISAMBIG_THREADS", cores),
                        ("DISAMBIG_VERIFIER_LM", verifier_lm), ("DISAMBIG_DECODING", decoding),
                        ("DISAMBIG_REPETITION_GUARD", repetition_guard),
                        ("DISAMBIG_REPEAT_PENALTY", None if repeat_penalty is None else str(repeat_penalty)),
                        ("DISAMBIG_PROMPT_LOOKUP", None if prompt_lookup is None else str(prompt_lookup))):
        if value is not None:
            os.environ[name] = value


def cache_note(settings: Any) -> str:
    """``on (FOLDER; repeated calls cost no LM time)`` or ``off``, for a run's printed summary."""
    from disambig.lm.runtime import RESPONSE_CACHE_SUBDIR

    if not settings.lm_cache:
        return "off"
    return f"on ({Path(settings.cache_dir) / RESPONSE_CACHE_SUBDIR}; repeated calls cost no LM time)"
