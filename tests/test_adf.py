"""ADF's control flow with a scripted LM and hand-made embeddings: the gate, one sub-question and one HyDE
passage per kept cluster, the relevance filter, RRF over both pathways, the trace, and recorded failures."""

from __future__ import annotations

import re

import dspy
import numpy as np
import pytest
from program_fakes import scripted_lm

from disambig.evaluation.runner import answer_one
from disambig.lm.adapter import CompactJSONAdapter
from disambig.programs import build_program
from disambig.programs.adf.program import ADF
from disambig.retrieval.passage import Passage

QUESTION = "Who has the most goals?"
AXES = {"Men": 0, "Women": 1, "Club": 2, "Cricket": 3}


def passage(title: str, n: int) -> Passage:
    return Passage(f"{title.lower()}{n}", title, f"{title} passage {n}.")


def corpus(groups: dict[str, int]) -> list[Passage]:
    """``groups`` titles with that many passages each, interleaved in rank order (Men1, Women1, ..., Men2, ...)."""
    rows = [[passage(title, n) for n in range(1, count + 1)] for title, count in groups.items()]
    return [p for rank in range(max(groups.values())) for row in rows if rank < len(row) for p in [row[rank]]]


class AxisEmbedder:
    """A passage lies on its title's axis; a question on ``question_axes``; any other text on the Men axis."""

    def __init__(self, question_axes: tuple[str, ...]) -> None:
        self.question_axes = question_axes

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), len(AXES)))
        for row, text in enumerate(texts):
            title = text.split(":")[0]
            axes = [title] if title in AXES else list(self.question_axes) if text == QUESTION else ["Men"]
            out[row, [AXES[a] for a in axes]] = 1.0
        return out / np.linalg.norm(out, axis=1, keepdims=True)


class TableRetriever:
    """Returns ``table[query]`` (or the whole corpus in order) cut to k; records every query."""

    name = "table"

    def __init__(self, passages: list[Passage], table: dict[str, list[str]] | None = None) -> None:
        self.passages, self.table, self.queries = passages, table or {}, []

    @property
    def size(self) -> int:
        return len(self.passages)

    def search(self, query: str, k: int = 10) -> list[Passage]:
        self.queries.append(query)
        by_id = {p.id: p for p in self.passages}
        ids = self.table.get(query, [p.id for p in self.passages])[:k]
        return [Passage(i, by_id[i].title, by_id[i].text, 1.0 / r, r) for r, i in enumerate(ids, 1)]


def first_title(user: str) -> str:
    return re.search(r"\[1\] (\w+)", user).group(1)


def synthesis(user: str) -> dict:
    subs = re.findall(r"Which (\w+)\?", user.split("sub_questions:")[-1])
    return {"intents": [{"label": s, "confidence": 0.9, "key_facts": [f"{s} answer"]} for s in subs],
            "long_answer": "It depends on the reading.", "concise_answer": "Ronaldo"}


RULES = {
    "retrieved together": lambda user: {"sub_question": f"Which {first_title(user)}?"},
    "Write a short factual passage": lambda user: {"passage": f"hyde {user.split('question:')[-1].strip()}"},
    "Answer the question from the numbered passages": synthesis,
}


def run(retriever, question_axes=("Men", "Women", "Club"), rules=RULES, **kwargs):
    lm, engine = scripted_lm(rules)
    dspy.configure(lm=lm, adapter=CompactJSONAdapter())
    program = ADF(retriever, embedder=AxisEmbedder(question_axes), **kwargs)
    return program(question=QUESTION), engine


def steps(engine) -> list[str]:
    return [phrase.split()[0] for phrase, _ in engine.calls]


def test_unambiguous_geometry_returns_after_one_generation():
    retriever = TableRetriever(corpus({"Men": 10}))   # ten passages on one axis: variance 0, separation 0
    pred, engine = run(retriever, question_axes=("Men",))
    notes = pred.trace["notes"]
    assert notes["state"] == "Unambiguous" and notes["decomposed"] is False
    assert notes["statistics"]["variance"] == pytest.approx(0.0) and notes["statistics"]["separation"] == 0.0
    assert steps(engine) == ["Answer"]
    assert "sub_questions: []" in engine.calls[0][1]
    assert retriever.queries == [QUESTION, QUESTION]        # D_init, then Retrieve(q, k) (Algorithm 1 line 6)
    assert len(pred.passages) == 5 and pred.trace["retrieval_calls"] == 2
    assert pred.interpretations == [{"question": QUESTION, "answer": "Ronaldo", "passage_ids": [], "score": None}]
    assert pred.long_answer == "It depends on the reading."
    assert pred.trace["lm_calls"] == 1 and notes["synthesis_only"]["lm_calls"] == 1


def test_authors_profile_reuses_the_initial_passages_on_the_direct_path():
    retriever = TableRetriever(corpus({"Men": 10}))
    pred, engine = run(retriever, question_axes=("Men",), profile="authors")
    assert retriever.queries == [QUESTION] and steps(engine) == ["Answer"]
    assert pred.trace["notes"]["thresholds"] == {"tau_var": 0.8, "tau_sep": 0.1}


def test_ambiguous_geometry_one_sub_question_and_one_hyde_per_kept_cluster():
    # 3 Men, 3 Women, 2 Club, 2 Cricket on four orthogonal axes: variance 0.74, 2-means separation > 0.1 ->
    # Ambiguous; k = min(max(2, 10 // 2), 4) = 4 clusters; the question lies on Men + Women + Club, so the
    # Cricket centroid has cosine 0 < tau_rel = 0.2 and is dropped.
    retriever = TableRetriever(corpus({"Men": 3, "Women": 3, "Club": 2, "Cricket": 2}))
    pred, engine = run(retriever)
    notes = pred.trace["notes"]
    assert notes["state"] == "Ambiguous" and notes["k"] == 4
    assert notes["statistics"]["variance"] == pytest.approx(1 - (0.09 + 0.09 + 0.04 + 0.04))
    kept = {tuple(c["passage_ids"]): c["kept"] for c in notes["clusters"]}
    assert kept[("cricket1", "cricket2")] is False and sum(kept.values()) == 3
    assert steps(engine) == ["retrieved"] * 3 + ["Write"] * 3 + ["Answer"]
    assert not any("Cricket" in user for _, user in engine.calls[:3])     # the dropped cluster is never shown
    assert sorted(notes["sub_questions"]) == ["Which Club?", "Which Men?", "Which Women?"]
    assert [p["hyde"] for p in notes["pathways"]] == [f"hyde {q}" for q in notes["sub_questions"]]
    # D_init, then the sub-question and its hypothetical passage per kept cluster; q itself is not re-retrieved
    assert retriever.queries[0] == QUESTION and len(retriever.queries) == 1 + 2 * 3
    assert pred.trace["retrieval_calls"] == 7
    assert pred.trace["lm_calls"] == 7 and notes["synthesis_only"]["lm_calls"] == 1
    assert pred.trace["input_tokens"] > notes["synthesis_only"]["input_tokens"]
    expected = [f"{q.split()[1][:-1]} answer" for q in notes["sub_questions"]]   # "Which Men?" -> "Men answer"
    assert [i["answer"] for i in pred.interpretations] == expected


def test_a_cluster_below_tau_rel_is_dropped_and_tau_rel_zero_keeps_it():
    passages = corpus({"Men": 3, "Women": 3, "Club": 2, "Cricket": 2})
    _, engine = run(TableRetriever(passages), tau_rel=0.0)
    assert steps(engine).count("retrieved") == 4


def test_rrf_fuses_the_two_pathways_by_passage_id():
    # k_max = 2: two clusters (Men, Women), both kept. The direct and latent lists of each sub-question below;
    # RRF (eta 60) over [m1 m2], [m2 c1], [w1 m2], [w1]:
    #   m2 = 1/62 + 1/61 + 1/62, w1 = 2/61, m1 = 1/61, c1 = 1/62 (no ties, so cluster order does not matter)
    table = {"Which Men?": ["men1", "men2"], "hyde Which Men?": ["men2", "club1"],
             "Which Women?": ["women1", "men2"], "hyde Which Women?": ["women1"]}
    retriever = TableRetriever(corpus({"Men": 5, "Women": 5, "Club": 1}), table)
    pred, _ = run(retriever, question_axes=("Men", "Women"), k_max=2, pathway_k=2)
    fused = pred.trace["notes"]["fused"]
    assert [f["id"] for f in fused] == ["men2", "women1", "men1", "club1"]
    assert fused[0]["score"] == pytest.approx(2 / 62 + 1 / 61) and fused[1]["score"] == pytest.approx(2 / 61)
    assert [p["id"] for p in pred.passages] == [f["id"] for f in fused]
    cited = {i["question"]: i["passage_ids"] for i in pred.interpretations}
    assert cited == {"Which Men?": ["men1", "men2", "club1"], "Which Women?": ["women1", "men2"]}


def test_authors_profile_merges_by_max_score_instead():
    passages = corpus({"Men": 5, "Women": 5, "Club": 1})
    table = {"Which Men?": ["men1", "men2"], "hyde Which Men?": ["men2", "club1"],
             "Which Women?": ["women1", "men2"], "hyde Which Women?": ["women1", "women2"]}
    pred, _ = run(TableRetriever(passages, table), question_axes=("Men", "Women"), profile="authors",
                  pathway_k=2, tau_sep=0.05)
    # raw scores are 1 / rank: each list's first passage scores 1.0 whatever else retrieved it (RRF would add up)
    fused = pred.trace["notes"]["fused"]
    assert {f["id"] for f in fused[:3]} == {"men1", "men2", "women1"} and {f["id"] for f in fused[3:]} == {
        "club1", "women2"}
    assert [f["score"] for f in fused] == [1.0, 1.0, 1.0, 0.5, 0.5]


def test_all_clusters_dropped_falls_back_to_the_question():
    retriever = TableRetriever(corpus({"Men": 5, "Women": 5}))
    pred, engine = run(retriever, question_axes=("Cricket",))  # cosine 0 with every centroid
    assert steps(engine) == ["Write", "Answer"] and pred.trace["notes"]["sub_questions"] == [QUESTION]


def test_a_malformed_synthesis_reply_is_a_recorded_failure():
    lm, engine = scripted_lm(RULES | {"Answer the question from the numbered passages": lambda _: "I think Ronaldo"})
    dspy.configure(lm=lm, adapter=CompactJSONAdapter())
    program = ADF(TableRetriever(corpus({"Men": 10})), embedder=AxisEmbedder(("Men",)))
    example = dspy.Example(id="q1", question=QUESTION).with_inputs("question")
    answered = {"answered": lambda ex, pred: float(bool(pred.long_answer))}  # a failure scores as an empty answer
    result = answer_one(program, example, answered)
    assert result.failed and result.prediction is None and result.scores == {"answered": 0.0}
    assert "Adapter" in result.error or "parse" in result.error.lower()
    assert result.trace["lm_calls"] >= 1            # the failed attempt's cost is kept


def test_registered_and_profiles_checked():
    program = build_program("adf", retriever=TableRetriever(corpus({"Men": 10})), embedder=AxisEmbedder(("Men",)))
    assert isinstance(program, ADF) and program.settings["tau_var"] == 0.25
    assert [name for name, _ in program.named_predictors()] == ["sub_question", "hyde", "synthesize"]
    assert ADF(None, style="asqa").settings["tau_sep"] == 0.05
    assert ADF(None, profile="authors", style="asqa").settings["always_decompose"] is True
    with pytest.raises(ValueError, match="choose one of paper, authors"):
        ADF(None, profile="mine")
    with pytest.raises(ValueError, match="choose rrf"):
        ADF(None, fusion="sum")


def test_fit_gate_learns_thresholds_from_train_questions():
    # two questions, same retrieval: one corpus is spread over two axes (ambiguous), the other on one axis
    spread, tight = corpus({"Men": 5, "Women": 5}), corpus({"Men": 10})
    passages = spread + [p for p in tight if p.id not in {q.id for q in spread}]
    table = {"spread?": [p.id for p in spread], "tight?": [p.id for p in tight]}
    examples = [dspy.Example(question="spread?", interpretations=[{}, {}]),
                dspy.Example(question="tight?", interpretations=[{}])]
    values = ADF.fit_gate(TableRetriever(passages, table), examples, embedder=AxisEmbedder(("Men",)))
    assert set(values) == {"tau_var", "tau_sep"}
    program = ADF(None, **values)
    # spread: variance 0.5, separation 1; tight: 0 and 0 -> learned thresholds split them
    assert program.gate.predict(np.array([[0.5, 1.0], [0.0, 0.0]])).tolist() == [True, False]


def test_ask_shows_the_gate_the_sub_questions_with_their_hyde_passages_and_the_answer():
    from rich.console import Console

    from disambig.cli.ask_cmd import _show

    pred, _ = run(TableRetriever(corpus({"Men": 3, "Women": 3, "Club": 2, "Cricket": 2})))
    console = Console(record=True, width=200)
    _show(console, QUESTION, pred)
    text = console.export_text()
    assert "Gate: Ambiguous -> decomposed" in text and "separation" in text and "tau_var 0.25" in text
    assert "(dropped)" in text and "Sub-questions" in text and "hyde Which Men?" in text
    assert "Concise answer: Ronaldo" in text and "A: It depends on the reading." in text


def test_the_synthesis_keeps_the_lms_cap_unless_given():
    assert "max_tokens" not in ADF(None).synthesize.config  # the LM's own cap (256 on the embedded engine)
    assert ADF(None, synthesis_tokens=300).synthesize.config["max_tokens"] == 300


def test_readings_without_intents_keep_the_concise_answer_for_the_question():
    from disambig.programs.adf.program import interpretations

    subs = ["Who scored most for men?", "Who scored most for women?"]
    found = interpretations(QUESTION, subs, [], "Christine Sinclair", {})
    assert [(i.question, i.answer) for i in found] == [(QUESTION, "Christine Sinclair")]
    assert interpretations(QUESTION, subs, [], "", {}) == []  # nothing to keep


def test_a_second_lm_writes_the_sub_questions_and_hyde_passages_and_the_runs_lm_the_synthesis(monkeypatch):
    from disambig.lm import verifier

    second, second_engine = scripted_lm(RULES)
    monkeypatch.setattr(verifier, "verifier_lm", lambda: second)
    retriever = TableRetriever(corpus({"Men": 3, "Women": 3, "Club": 2, "Cricket": 2}))
    pred, engine = run(retriever)
    assert steps(second_engine) == ["retrieved"] * 3 + ["Write"] * 3 and steps(engine) == ["Answer"]
    assert pred.trace["lm_calls"] == 7  # both LMs' calls are the question's
    assert sorted(pred.trace["notes"]["sub_questions"]) == ["Which Club?", "Which Men?", "Which Women?"]
