"""``disambig compile route`` and ``disambig route predict``: learn the per-question policy, and show what it would
do on a question file without running any answering program."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from disambig.cli.errors import user_errors
from disambig.cli.paths import check_output_file
from disambig.settings import load_settings

app = typer.Typer(no_args_is_help=True, help="The router: what it would do, question by question.")


def compile_route(dataset: str, metric: str, candidates: str, train: int, val: int, cost_weight: float, allow: str,
                  runs: Path, detector_train: int | None, name: str, out: Path, lm: str | None, threads: int | None,
                  track: bool, register: bool, option: list[str], cascade: str = "", cascade_thresholds: str = ""
                  ) -> None:
    """Run ``compile route`` (called by ``disambig compile`` for PROGRAM ``route``)."""
    from rich.progress import Progress

    from disambig.cli.paths import check_output_folder
    from disambig.optimizers.route_compile import RouteJob, run_route_compile

    check_output_folder(out, "--out")  # before any candidate answers: the artifact is saved last
    check_output_folder(runs, "--runs")
    pair = cascade_pair(cascade, candidates)
    job = RouteJob(dataset=dataset, candidates=pair or tuple(split_list(candidates, "--candidates")), metric=metric,
                   n_train=train, n_val=val, cost_weight=cost_weight, allow=tuple(split_list(allow, "--allow", True)),
                   runs=runs, name=name or ("cascade" if pair else "policy"), detector_train=detector_train,
                   candidate_options=candidate_options(option), cascade=pair,
                   cascade_thresholds=thresholds(cascade_thresholds, pair))
    settings = load_settings(lm=lm, threads=threads)
    console = Console(stderr=True)
    with Progress(console=console) as bar:
        tasks: dict[str, Any] = {}

        def progress(label: str, done: int, total: int) -> None:
            if label not in tasks:
                tasks[label] = bar.add_task(label, total=total)
            bar.update(tasks[label], completed=done)

        result, tracked = run_route_compile(settings, job, out, progress, track, register)
    held = result.manifest["scores"]["heldout"]
    out_console = Console()
    out_console.print(f"{metric} on {held['questions']} held-out questions (composed from the candidates' stored "
                      f"answers): best single {held['best_single']['program']} {result.before:.4f} → route "
                      f"{result.after:.4f} (oracle {held['oracle']['score']:.4f})")
    for candidate, d in held.get("route_vs", {}).items():
        out_console.print(f"route − {candidate}: {d['difference']:+.4f} [{d['low']:+.4f}, {d['high']:+.4f}] "
                          f"({d['verdict']}; 95% paired bootstrap over the questions)")
    out_console.print(f"LM calls per question: route {held['route']['lm_calls_per_q']:.2f}; "
                      + ", ".join(f"{c} {s['lm_calls_per_q']:.2f}" for c, s in held["singles"].items()))
    out_console.print(f"actions: {held['actions']}" + (f" (escalated {held['escalated']} of {held['questions']})"
                                                       if "escalated" in held else ""))
    out_console.print(f"saved {result.state_path} (+ manifest.json)")
    for key, value in tracked.items():
        out_console.print(f"MLflow {key}: {value}")


@app.command("predict")
@user_errors
def predict(
    artifact: str = typer.Option(..., "--artifact", help="A compiled route: state JSON path or models:/..."),
    dataset: str = typer.Option("asqa", "--dataset", "-d", help="asqa, ambignq, or a JSONL file in their format."),
    split: str | None = typer.Option(None, "--split", help="train, dev, test or all (default: dev of a named set, "
                                     "all of a file)."),
    limit: int | None = typer.Option(None, "--limit", "-n", min=1, help="First N questions of the split."),
    out: Path = typer.Option(..., "--out", help="JSONL file: one decision per question."),
    questions: Path | None = typer.Option(None, "--questions", help="A question table instead of --dataset: CSV, "
                                          "JSONL or Parquet with a 'question' column (and optionally 'id'), as "
                                          "`disambig batch` reads; no gold answers needed."),
    first_run: Path | None = typer.Option(None, "--first-run", help="For a cascade artifact: a `disambig eval` "
                                          "folder of its first candidate on these questions; the decision reads "
                                          "its stored answers (no LM call)."),
) -> None:
    """The policy's decision per question (action, program, P(ambiguous), action probabilities), no LM call.

    A cascade's decision needs its first candidate's answer: give it as ``--first-run``."""
    from disambig.data import load_dataset
    from disambig.optimizers.loading import load
    from disambig.run_setup import default_split

    if out.suffix != ".jsonl":
        raise ValueError(f"--out {str(out)!r} must end with .jsonl")
    check_output_file(out, "--out", {"question": questions if questions is not None else Path(dataset)})
    from disambig.optimizers.artifact import read_manifest
    from disambig.optimizers.loading import resolve_state_path

    manifest = read_manifest(resolve_state_path(artifact))
    compiled_for = manifest.get("program")
    if compiled_for != "route":
        raise ValueError(f"artifact {artifact!r} is a compiled {compiled_for!r}, not a route; compile one with "
                         "`disambig compile route --candidates a,b`")
    is_cascade = manifest.get("optimizer") == "route-cascade"
    if is_cascade and first_run is None:
        first, escalate = (manifest.get("knobs") or {}).get("candidates", ["the first", "the escalation"])[:2]
        raise ValueError(f"artifact {artifact!r} is a cascade ({first} first, then {escalate}): its decision reads "
                         f"{first}'s answer to each question, which predict does not compute; pass --first-run DIR "
                         f"(a `disambig eval {first}` folder on these questions) or run the route itself with "
                         f"`disambig eval route --artifact {artifact}`")
    if not is_cascade and first_run is not None:
        raise ValueError(f"--first-run is for a cascade artifact; {artifact!r} decides from the retrieval alone")
    if questions is not None:
        asked = question_table(questions, limit)
    else:
        asked = [(str(ex.id), ex.question)
                 for ex in load_dataset(dataset, split=split or default_split(dataset), limit=limit)]
    stored = first_answers(first_run, asked) if first_run is not None else {}
    route = load(artifact, settings=load_settings())
    rows = []
    for qid, question in asked:
        d = (route.escalation(question, stored[qid]) if is_cascade else route.decide(question)).to_dict()
        rows.append({"id": qid, "question": question, **{k: d[k] for k in ("action", "program", "p_ambiguous",
                                                                           "probabilities")},
                     **({"p_escalate": d["cascade"]["p_escalate"], "escalated": d["cascade"]["escalated"],
                         "features": d["features"]} if is_cascade else {})})
    from disambig.data.atomic import write_text

    write_text(out, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    mix = {a: sum(r["action"] == a for r in rows) for a in sorted({r["action"] for r in rows})}
    Console().print(f"{len(rows)} decisions → {out} · actions {mix}")


def first_answers(folder: Path, asked: list[tuple[str, str]]) -> dict[str, Any]:
    """Each asked question's stored answer (an ``Answered``) in the eval folder ``folder``, matched by id.

    Raises:
        ValueError: the folder lacks a question, or holds another question under its id.
    """
    from disambig.optimizers.route_data import read_rows
    from disambig.programs.route import Answered

    rows = read_rows(folder)
    missing = [qid for qid, _ in asked if qid not in rows]
    if missing:
        raise ValueError(f"--first-run {str(folder)!r} has no answer to {len(missing)} of {len(asked)} questions "
                         f"(first id {missing[0]!r}); run the first candidate on them into that folder")
    for qid, question in asked:
        if str(rows[qid].get("question", "")).strip() != question.strip():
            raise ValueError(f"--first-run {str(folder)!r} answered another question under id {qid!r} "
                             f"({rows[qid].get('question')!r}, asked {question!r}); use the run of these questions")
    return {qid: Answered.from_row(rows[qid]) for qid, _ in asked}


def question_table(path: Path, limit: int | None) -> list[tuple[str, str]]:
    """``(id, question)`` pairs of a batch question table (its row number where it has no ``id`` column)."""
    from disambig.optimizers.batch_io import read_questions

    frame = read_questions(path)
    ids = [str(v) for v in frame["id"]] if "id" in frame.columns else [str(i) for i in range(len(frame))]
    return list(zip(ids, frame["question"], strict=True))[:limit]


def cascade_pair(cascade: str, candidates: str) -> tuple[str, str] | None:
    """``--cascade FIRST,ESCALATE`` as the pair (None when not given); ``--candidates``, if it names programs, must
    name the same two."""
    if not cascade.strip():
        return None
    pair = split_list(cascade, "--cascade")
    if len(pair) != 2:
        raise ValueError(f"--cascade {cascade!r} names {len(pair)} program(s); give two: the first and the "
                         "escalation, e.g. --cascade vanilla-rag,adf")
    named = [] if candidates.strip().isdigit() else split_list(candidates, "--candidates")
    if named and named != pair:
        raise ValueError(f"--candidates {candidates!r} disagrees with --cascade {cascade!r}; a cascade's candidates "
                         "are its two programs (drop --candidates)")
    return pair[0], pair[1]


def thresholds(value: str, pair: tuple[str, str] | None) -> tuple[float, ...]:
    """``--cascade-thresholds 0.4,0.5,0.6`` as floats (empty: the default); only with ``--cascade``."""
    items = split_list(value, "--cascade-thresholds", True)
    if items and pair is None:
        raise ValueError("--cascade-thresholds applies to a cascade; add --cascade FIRST,ESCALATE")
    try:
        values = tuple(float(v) for v in items)
    except ValueError:
        values = (-1.0,)
    if any(not 0.0 <= v < 1.0 for v in values):
        raise ValueError(f"--cascade-thresholds {value!r}: give comma-separated probabilities in [0, 1), e.g. "
                         "0.4,0.5,0.6")
    return values


def split_list(value: str, flag: str, empty_ok: bool = False) -> list[str]:
    """A comma-separated flag value as its items (blank items dropped)."""
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items and not empty_ok:
        raise ValueError(f"{flag} is empty; give comma-separated program names, e.g. {flag} vanilla-rag,adf")
    return items


def candidate_options(items: list[str]) -> dict[str, dict[str, Any]]:
    """``--option PROGRAM.KEY=VALUE`` items as per-candidate constructor arguments."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        target, sep, value = item.partition("=")
        program, dot, key = target.strip().partition(".")
        if not sep or not dot or not program or not key:
            raise ValueError(f"--option {item!r}: compile route takes PROGRAM.KEY=VALUE, e.g. --option adf.style=asqa")
        try:
            out.setdefault(program, {})[key] = json.loads(value)
        except json.JSONDecodeError:
            out.setdefault(program, {})[key] = value
    return out
