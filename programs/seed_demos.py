"""The seed paper's one-shot demo for each step (DIVA, Appendix D, Tables 7-12: the World Cup example).

Verification (Table 9) has no demo in the paper and none here.

Programs start with these demos, as the paper's prompts do; ``disambig compile`` replaces them with demos
chosen on a dataset. They are short, and they sit before the question in every prompt, so the embedded
model's prompt cache reuses them from one call to the next.
"""

from __future__ import annotations

import dspy

from disambig.signatures import Disambiguation

QUESTION = "Who is top goalscorer in the world cup?"
REASON = "The subject 'Who' may refer to men or women, as both men's and women's FIFA World Cups are held."
MEN = "Who is the top goalscorer in the men's FIFA World Cup?"
WOMEN = "Who is the top goalscorer in the women's FIFA World Cup?"
PASSAGES = (
    "[1] Miroslav Klose | Klose scored 16 goals, the most in the history of the men's World Cup.\n"
    "[2] Marta | Marta has scored 17 goals, the most of any player at the Women's World Cup."
)
CLUB = "Who is the top goalscorer in the FIFA Club World Cup?"
UNKNOWN = "unknown"
PAIRS = [Disambiguation(question=MEN, answer="Miroslav Klose", passage=1),
         Disambiguation(question=WOMEN, answer="Marta", passage=2)]
# The paper's answer also named the players' nationalities, which its passages do not state; the 1.5B model copied
# that habit into answers ("Brooks Koepka, a German professional golfer"). Ours restates each reading's passage; an
# answer built as two parallel sentences ("X, with 16 goals. ... Y, with 17 goals.") led the 1.5B to give the second
# reading the first one's details.
LONG_ANSWER = (
    "There is a men's and a women's FIFA World Cup. Miroslav Klose scored 16 goals, the most in the history of the "
    "men's World Cup. Marta has scored 17 goals, the most of any player at the Women's World Cup."
)

DEMOS: dict[str, list[dict]] = {
    "ClassifyAmbiguity": [{"question": QUESTION, "reason": REASON, "types": ["AmbSub"]}],
    "PseudoInterpretations": [
        {"question": QUESTION, "reason": f"Types: [AmbSub]. {REASON}", "sub_questions": [MEN, WOMEN]}
    ],
    "ExtractInterpretations": [{"passages": PASSAGES, "question": QUESTION, "disambiguations": PAIRS}],
    # Ours: the same example for DIVA's per-reading answers (``programs/diva/anchored.py``), one answered, one not.
    "AnchoredAnswer": [
        {"passages": PASSAGES, "question": MEN, "answer": "Miroslav Klose", "passage": 1},
        {"passages": PASSAGES, "question": CLUB, "answer": UNKNOWN, "passage": 0},
    ],
    "ConsolidateAnswer": [
        {"passages": PASSAGES, "question": QUESTION, "disambiguations": PAIRS, "long_answer": LONG_ANSWER}
    ],
    "ClosedBookAnswer": [{"question": QUESTION, "long_answer": LONG_ANSWER}],
}


def predict(signature: type[dspy.Signature]) -> dspy.Predict:
    """``dspy.Predict(signature)`` carrying the seed paper's demo for that step (none if it has none)."""
    predictor = dspy.Predict(signature)
    predictor.demos = [dspy.Example(**demo) for demo in DEMOS.get(signature.__name__, [])]
    return predictor
