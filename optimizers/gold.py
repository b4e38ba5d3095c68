"""Gold demo fields from a dataset's annotations, so labeled demos show complete, correct steps.

An optimizer that shows a training example as a demo (LabeledFewShot; BootstrapFewShot's labeled demos) fills
each step's fields from the example by name, and drops a step's demo when no output field is present. Bare
dataset rows only carry the question, so most steps would lose their demos. ASQA rows hold what the steps
need: the evidence passages annotators read, the disambiguated questions with short answers, and long answers.

Added fields (each only when the row has the material):
    ``long_answer``     the first annotator's long answer (ConsolidateAnswer, ClosedBookAnswer);
    ``sub_questions``   the gold disambiguated questions (PseudoInterpretations);
    ``passages``        up to ``MAX_PASSAGES`` evidence passages, numbered, each cut to ``MAX_CHARS``;
    ``disambiguations`` each gold question whose answer a kept passage states, with that passage's number
                        (ExtractInterpretations, ConsolidateAnswer);
    ``document``, ``interpretation``, ``answer``
                        the first such passage alone, with its gold question and answer (ExecutionFeedback);
    ``intents``, ``concise_answer``
                        one intent per gold interpretation (its question as the label, its answers as key facts,
                        confidence 1) and the first interpretation's first answer (ADF's MultiIntentSynthesis);
    ``chunks``, ``entities``
                        for a count question: a judging demo from its annotated items (``gold_count``), for the
                        programs that judge batches of chunks only.
"""

from __future__ import annotations

from typing import Any

from disambig.data.text import normalize
from disambig.optimizers.gold_count import JUDGING_PROGRAMS, count_fields
from disambig.programs.context import format_passages
from disambig.retrieval.passage import Passage
from disambig.signatures import Disambiguation, Intent

MAX_PASSAGES = 3
MAX_CHARS = 600
"""Demo passages are cut short: every demo token is paid again in every prompt of that step."""


def with_gold_fields(example: Any, program: str | None = None) -> Any:
    """``example`` plus the gold demo fields its annotations support for ``program`` (any program when None);
    inputs unchanged."""
    fields: dict[str, Any] = {}
    long_answers = getattr(example, "long_answers", None) or []
    if long_answers:
        fields["long_answer"] = long_answers[0]
    interpretations = getattr(example, "interpretations", None) or []
    if len(interpretations) > 1:
        fields["sub_questions"] = [i["question"] for i in interpretations]
    passages = evidence_passages(getattr(example, "evidence", None) or [])
    pairs = cited_pairs(interpretations, passages)
    if pairs:
        fields["passages"] = format_passages(passages)
        fields["disambiguations"] = pairs
    fields.update(feedback_fields(pairs, passages))
    fields.update(synthesis_fields(interpretations))
    if program is None or program in JUDGING_PROGRAMS:
        fields.update(count_fields(example))
    fields = {k: v for k, v in fields.items() if k not in example}
    return example.copy(**fields).with_inputs(*example.inputs().keys()) if fields else example


def feedback_fields(pairs: list[Disambiguation], passages: list[Passage]) -> dict[str, str]:
    """VerDICt's execution-feedback demo: one evidence passage, the gold question it answers and that answer.

    The first cited pair is used (``cited_pairs`` keeps only pairs whose answer the passage states, the case the
    step's prompt asks to answer rather than abstain on); no pair gives no fields.
    """
    from disambig.programs.verdict.program import passage_text

    if not pairs:
        return {}
    first = pairs[0]
    return {"document": passage_text(passages[first.passage - 1]), "interpretation": first.question,
            "answer": first.answer}


def synthesis_fields(interpretations: list[dict[str, Any]]) -> dict[str, Any]:
    """ADF's structured synthesis demo: an intent per gold interpretation and the best single short answer."""
    answered = [i for i in interpretations if i.get("answers")]
    if not answered:
        return {}
    intents = [Intent(label=i["question"][:100], confidence=1.0, key_facts=[a[:160] for a in i["answers"][:3]])
               for i in answered[:6]]
    return {"intents": intents, "concise_answer": answered[0]["answers"][0]}


def evidence_passages(evidence: list[dict[str, str]]) -> list[Passage]:
    """The first ``MAX_PASSAGES`` distinct evidence passages, each cut to ``MAX_CHARS`` at a word boundary."""
    seen: set[str] = set()
    out = []
    for row in evidence:
        text = shorten(row["text"].strip())
        if text and text not in seen:
            seen.add(text)
            out.append(Passage(str(len(out) + 1), row.get("title", ""), text))
    return out[:MAX_PASSAGES]


def cited_pairs(interpretations: list[dict[str, Any]], passages: list[Passage]) -> list[Disambiguation]:
    """One pair per interpretation whose answer a passage states (first such passage, numbered from 1)."""
    texts = [normalize(f"{p.title} {p.text}") for p in passages]
    pairs = []
    for interpretation in interpretations:
        for answer in interpretation.get("answers", []):
            key = normalize(answer)
            number = next((n for n, text in enumerate(texts, 1) if key and key in text), 0)
            if number:
                pairs.append(Disambiguation(question=interpretation["question"], answer=answer, passage=number))
                break
    return pairs


def shorten(text: str) -> str:
    if len(text) <= MAX_CHARS:
        return text
    return text[:MAX_CHARS].rsplit(" ", 1)[0] + " ..."
