"""``disambig ask``: run one registered program on one question and show the answer and its cost."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from disambig.cli import options
from disambig.cli.errors import user_errors
from disambig.settings import load_settings

DEFAULT_PROGRAM = "closed-book"


@user_errors
def ask(
    question: str = typer.Argument(..., help="The question to answer."),
    program: str | None = typer.Option(None, "--program", "-p",
                                       help="Registered program (see `disambig programs`); default closed-book, or "
                                            "the program --artifact is a compile of (another name is refused)."),
    retriever: str | None = typer.Option(None, "--retriever", help="bm25, dense or hybrid (default hybrid if needed)."),
    corpus: str | None = typer.Option(None, "--corpus",
                                      help="Corpus the retriever searches (default: with --artifact the one its "
                                           "manifest names, searched by the kind it names; else wiki-slice)."),
    artifact: str | None = typer.Option(None, "--artifact", help="Compiled program: state JSON path or models:/..."),
    dataset: str | None = typer.Option(None, "--dataset", "-d",
                                       help="Count programs (dfa, naive-rag-count, map-count): the aggregation "
                                            "dataset whose chunk corpus they count over (a `disambig data spiderqa` "
                                            "folder)."),
    scope: str | None = typer.Option(None, "--scope", help="Count programs: the scope (database id) counted over."),
    interactive: bool = typer.Option(False, "--interactive", help="Programs that clarify ambiguity (dfa): ask "
                                                                  "each clarification here and use the reply; "
                                                                  "without it the most literal reading is taken."),
    lm: str | None = options.LM,
    api_base: str | None = options.API_BASE,
    parallel_calls: int | None = options.PARALLEL_CALLS,
    verifier_lm: str | None = options.VERIFIER_LM,
    decoding: str | None = options.DECODING,
    repetition_guard: str | None = options.REPETITION_GUARD,
    repeat_penalty: float | None = options.REPEAT_PENALTY,
    prompt_lookup: int | None = options.PROMPT_LOOKUP,
    passage_framing: str | None = options.PASSAGE_FRAMING,
    threads: int | None = options.THREADS,
    cache: bool | None = options.CACHE,
    option: list[str] = options.PROGRAM_OPTION,
) -> None:
    """Answer QUESTION with a program and print the interpretations, the answer, LM calls, tokens and latency."""
    from disambig.lm.runtime import build_lm, configure_dspy
    from disambig.programs.context import passage_framing as framing

    if not question.strip():
        raise ValueError("question is empty; pass the question text as the first argument")
    if artifact:
        from disambig.run_setup import check_compiled, compiled_for

        program = program or compiled_for(artifact)
        check_compiled(artifact, program)  # as `eval` does, before any index or model is loaded
    program = program or DEFAULT_PROGRAM
    program_options = options.parse_program_options(option, program, artifact or "")
    options.export_lm_roles(verifier_lm, decoding, repetition_guard, repeat_penalty, prompt_lookup, lm=lm,
                           threads=threads)
    settings = load_settings(lm=lm, threads=threads, lm_cache=cache)
    module = _program(settings, program, retriever, corpus, artifact, program_options)
    inputs = _scope_inputs(module, program, dataset, scope)
    console = Console()
    if interactive:
        _ask_the_user(module, program, console)
    configure_dspy(build_lm(settings))
    with framing(settings.passage_framing):
        prediction = module(question=question, **inputs)
    _show(console, question, prediction)
    if settings.lm_cache:
        console.print(f"LM response cache {options.cache_note(settings)}; calls answered from it are not counted")


def _program(settings: object, name: str, retriever: str | None, corpus: str | None, artifact: str | None,
             program_options: dict) -> object:
    """The program to ask: a compiled ``artifact`` searching its manifest's retriever, with ``--retriever`` and
    ``--corpus`` in place of the kind and corpus the manifest names; else ``name`` built with ``program_options``."""
    from disambig.programs import build_program, retriever_kind
    from disambig.retrieval import build_retriever

    if artifact:
        from disambig.optimizers.loading import load

        return load(artifact, settings=settings, corpus=corpus, kind=retriever)
    kind = retriever_kind(name, retriever)
    searcher = build_retriever(kind, corpus=corpus or "wiki-slice", settings=settings) if kind else None
    return build_program(name, retriever=searcher, **program_options)


def _scope_inputs(module: object, name: str, dataset: str | None, scope: str | None) -> dict[str, str]:
    """The chunk scope a count program is called with: the corpus of ``--dataset`` and the ``--scope`` in it."""
    import inspect

    from disambig.errors import ConfigurationError

    if "scope" not in inspect.signature(type(module).forward).parameters:
        if dataset or scope:
            raise ConfigurationError(f"program {name!r} counts over no chunk scope; --dataset and --scope are for "
                                     "the count programs (dfa, naive-rag-count, map-count)")
        return {}
    if not dataset:
        if getattr(module, "corpus", "") is None:  # llm-only-count has no corpus: it answers without chunks
            raise ConfigurationError(f"program {name!r} counts over a chunk scope; pass --dataset DIR (a folder "
                                     "`disambig data spiderqa` built) and --scope DB_ID")
        return {"scope": scope} if scope else {}
    from disambig.data.loaders import aggregation_corpus
    from disambig.data.spiderqa import scope_ids, scopes_shown

    corpus = aggregation_corpus(dataset)
    scopes = scope_ids(corpus)
    if scope not in scopes:
        given = f"--scope {scope!r} is not a scope of {dataset}" if scope else "--scope is missing"
        raise ConfigurationError(f"{given}; pass --scope DB_ID, one of: {scopes_shown(scopes)}")
    return {"corpus": corpus, "scope": scope}


def _ask_the_user(module: object, name: str, console: Console) -> None:
    """Let ``module`` put its clarification questions to the user on the terminal (a numbered option or free text)."""
    from rich.markup import escape

    from disambig.errors import ConfigurationError

    if not hasattr(module, "ask_user"):
        raise ConfigurationError(f"program {name!r} asks no clarification questions; --interactive is for the "
                                 "programs that do (dfa, route with clarify allowed)")
    if "clarify" not in getattr(module, "allow", ["clarify"]):
        raise ConfigurationError(f"this {name} may not clarify (its allowed actions: "
                                 f"{', '.join(module.allow) or 'answering only'}); --interactive needs clarify")
    if getattr(module, "disambiguation", "guided") != "guided":
        raise ConfigurationError(f"--interactive needs the classify-then-clarify step; this {name} was built with "
                                 f"disambiguation={module.disambiguation!r}, which asks nothing")

    def ask_user(text: str, choices: list[str]) -> str:
        console.print(f"[bold]Clarification:[/bold] {escape(text)}")  # LM text: brackets are not markup
        for number, choice in enumerate(choices, 1):
            console.print(f"  {number}. {escape(choice)}")
        reply = typer.prompt("Your answer (a number above, or your own words)").strip()
        if reply.isdigit() and 1 <= int(reply) <= len(choices):
            return choices[int(reply) - 1]
        return reply

    module.ask_user = ask_user


def _show(console: Console, question: str, prediction: object) -> None:
    titles = {p["id"]: p["title"] or p["id"] for p in getattr(prediction, "passages", []) or []}
    interpretations = getattr(prediction, "interpretations", [])
    if interpretations:
        table = Table(title="Interpretations")
        for column in ("#", "question", "answer", "passages"):
            table.add_column(column)
        for i, item in enumerate(interpretations, 1):
            cited = ", ".join(titles.get(pid, pid) for pid in item["passage_ids"])
            table.add_row(str(i), item["question"], item["answer"], cited)
        console.print(table)
    if getattr(prediction, "conflicts", None):
        _show_conflicts(console, prediction.conflicts, titles)
    trace = prediction.trace
    notes = trace.get("notes", {})
    if notes.get("pseudo_interpretations") and not interpretations and "answered" not in notes:
        console.print("[bold]Pseudo-interpretations:[/bold] " + " | ".join(notes["pseudo_interpretations"]))
    if "grade" in notes:
        console.print(f"[bold]Retrieval grade:[/bold] {notes['grade']} " + _grade_basis(notes))
    if "statistics" in notes and "state" in notes:
        _show_adf(console, notes, titles)
    if "rewritten_question" in notes:
        from rich.markup import escape

        console.print(f"[bold]Counted as:[/bold] {escape(notes['rewritten_question'])}"
                      + "".join(f"\n  assumption: {escape(a)}" for a in notes.get("assumptions") or []))
    if "route" in notes:
        _show_route(console, notes["route"], prediction)
    console.print(f"[bold]Q:[/bold] {question}")
    console.print(f"[bold]A:[/bold] {prediction.long_answer}")
    console.print(
        f"LM calls {trace['lm_calls']} · tokens in {trace['input_tokens']} / out {trace['output_tokens']} · "
        f"retrieval calls {trace['retrieval_calls']} · {trace['seconds']:.2f} s" + cut_note(trace) + cost_note(trace)
    )


def _grade_basis(notes: dict) -> str:
    """What the retrieval grade was read from: DIVA's verdicts and P(Yes), or which readings the passages answer."""
    if "answered" in notes:
        from rich.markup import escape

        readings = notes.get("pseudo_interpretations") or []
        left = [r for r, answered in zip(readings, notes["answered"], strict=False) if not answered]
        return (f"({sum(notes['answered'])} of {len(readings)} readings answered from the passages)"
                + "".join(f"\n  not answered: {escape(r)}" for r in left))
    return (f"(verdicts {notes.get('verdicts')}, P(Yes) {notes.get('yes_probabilities')} from "
            f"{notes.get('probability_source')})")


def _show_conflicts(console: Console, conflicts: list[dict], titles: dict[str, str]) -> None:
    """The readings the passages answer differently: one row per answer, with the passages that give it."""
    from rich.markup import escape

    table = Table(title="Conflicts: the sources disagree")
    for column in ("reading", "answer", "passages"):
        table.add_column(column)
    for conflict in conflicts:
        for n, said in enumerate(conflict["answers"]):
            cited = ", ".join(titles.get(pid, pid) for pid in said["passage_ids"])
            table.add_row(escape(conflict["question"]) if n == 0 else "", escape(said["answer"]), escape(cited))
    console.print(table)


def cost_note(trace: dict) -> str:
    """`` · $0.000123`` (`` (5 of 7 calls priced)`` when some had no price) where the LM's price is known."""
    usd = trace.get("cost_usd")
    if usd is None:
        return ""
    priced, calls = int(trace.get("priced_calls", 0)), int(trace.get("lm_calls", 0))
    return f" · ${usd:.6f}" + (f" ({priced} of {calls} calls priced)" if priced < calls else "")


def cut_note(trace: dict) -> str:
    """`` · replies cut: 1 looping, 0 at the token cap`` when the engine cut a reply; else nothing."""
    looping, capped = int(trace.get("cut_by_repetition", 0)), int(trace.get("cut_by_length", 0))
    return f" · replies cut: {looping} looping, {capped} at the token cap" if looping or capped else ""


def _show_route(console: Console, decision: dict, prediction: object) -> None:
    """The router's choice with its probability and P(ambiguous); a clarifying question or an abstention."""
    from rich.markup import escape

    probs = decision.get("probabilities") or {}
    p_amb = decision.get("p_ambiguous")
    chosen = decision["action"]
    console.print(f"[bold]Route:[/bold] {chosen} (p {probs.get(chosen, 1.0):.2f}"
                  + (f" · P(ambiguous) {p_amb:.2f}" if p_amb is not None else "") + ")")
    if getattr(prediction, "clarify_question", ""):
        console.print(f"[bold]Clarify:[/bold] {escape(prediction.clarify_question)}")
    clarified = (prediction.trace.get("notes") or {}).get("clarified_as")
    if clarified:
        console.print(f"[bold]Answered as:[/bold] {escape(clarified)}")
    if getattr(prediction, "abstain_reason", ""):
        console.print(f"[bold]Abstained:[/bold] {escape(prediction.abstain_reason)}")


def _show_adf(console: Console, notes: dict, titles: dict[str, str]) -> None:
    """ADF's gate decision with its statistics, then each sub-question with its HyDE passage and cited titles."""
    stats, tau = notes["statistics"], notes.get("thresholds", {})
    route = "decomposed" if notes.get("decomposed") else "answered directly"
    console.print(
        f"[bold]Gate:[/bold] {notes['state']} -> {route} · variance {stats['variance']:.3f} · mean distance "
        f"{stats['mean_distance']:.3f} · separation {stats['separation']:.3f} (tau_var {tau.get('tau_var')}, "
        f"tau_sep {tau.get('tau_sep')}; {notes.get('profile')} profile, {stats['size']} passages)"
    )
    clusters = notes.get("clusters") or []
    if clusters:
        kept = sum(c["kept"] for c in clusters)
        relevance = ", ".join(f"{c['relevance']:.2f}{'' if c['kept'] else ' (dropped)'}" for c in clusters)
        console.print(f"[bold]Clusters:[/bold] k = {notes.get('k')}, {kept} kept · relevance {relevance}")
    pathways = notes.get("pathways") or []
    if pathways:
        table = Table(title="Sub-questions")
        for column in ("#", "sub-question", "HyDE passage", "cited"):
            table.add_column(column)
        for n, pathway in enumerate(pathways, 1):
            ids = dict.fromkeys(pathway["direct"] + pathway["latent"])
            cited = ", ".join(dict.fromkeys(titles[i] for i in ids if i in titles))
            hyde = pathway["hyde"] if len(pathway["hyde"]) <= 160 else pathway["hyde"][:160] + " ..."
            table.add_row(str(n), pathway["sub_question"], hyde, cited)
        console.print(table)
    if notes.get("concise_answer"):
        console.print(f"[bold]Concise answer:[/bold] {notes['concise_answer']}")
    paper = notes.get("synthesis_only") or {}
    if paper:
        console.print(f"Synthesis call alone (the paper's count): tokens in {paper['input_tokens']} / "
                      f"out {paper['output_tokens']}")
