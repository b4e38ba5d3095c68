"""Double quotes meant as text inside a JSON string (``disambig.lm.json_quotes``): written escaped so the string goes
on, while a string's own closing quote, and quotes the model escapes itself, are kept."""

from __future__ import annotations

import json

import numpy as np
import pytest

from disambig.lm.json_quotes import InnerQuotes


def written(tokens: list[str]) -> str:
    """The reply a sampler writes when the model's tokens are ``tokens``, as ``GreedyPick`` consults ``InnerQuotes``:
    a rewrite is written in place of the model's token, and after a rewrite that closes the string the model offers
    the same token again."""
    quotes, out, pending = InnerQuotes(), [], list(tokens)
    while pending:
        token = pending.pop(0)
        rewrite = quotes.rewrite(token)
        if rewrite is None:
            quotes.accept(token)
            out.append(token)
            continue
        quotes.take(rewrite)
        quotes.accept(rewrite.text, ours=True)
        out.append(rewrite.text)
        if rewrite.text == '"':
            pending.insert(0, token)
    return "".join(out)


def test_a_quoted_title_inside_a_string_is_escaped_and_the_string_goes_on():
    reply = written(['{"', "long", "_answer", '":', ' "', "The", " song", ' "', "There", "'s", " a", " Meeting", '"',
                     " was", " recorded", " by", " Klymaxx", '."', "}"])
    assert json.loads(reply) == {"long_answer": "The song \"There's a Meeting\" was recorded by Klymaxx."}
    # after "(" too, and a comma inside the quotation is text, not the string's end
    reply = written(['{"', "a", '":', ' "', "The", " single", " (", '"', "Hello", ",", " Goodbye", '")', " sold", '."',
                     "}"])
    assert json.loads(reply) == {"a": 'The single ("Hello, Goodbye") sold.'}


def test_strings_that_end_as_usual_are_left_as_written():
    tokens = ['{"', "question", '":', ' "', "Who", " won", "?", '",', ' "', "answer", '":', ' "', "Mar", "ta", '"', "}"]
    assert written(tokens) == "".join(tokens)
    # quotes the model escapes itself are its own
    tokens = ['{"', "a", '":', ' "', "The", " song", ' \\"', "X", '\\"', " is", " old", '."', "}"]
    assert written(tokens) == "".join(tokens)


def test_a_quotation_the_model_closes_with_an_escaped_quote_ends_with_it():
    reply = written(['{"', "a", '":', ' "', "The", " song", ' "', "X", '\\"', " is", " old", '."', "}"])
    assert json.loads(reply) == {"a": 'The song "X" is old.'}


def test_a_quote_that_was_the_strings_end_after_all_closes_the_string():
    # "Marta " with a space before its closing quote: escaped as an opening one, then the model writes "}"
    reply = written(['{"', "a", '":', ' "', "Mar", "ta", ' "', "}"])
    assert json.loads(reply) == {"a": 'Marta "'}
    reply = written(['{"', "a", '":', ' "', "Mar", "ta", ' "', ",", ' "', "b", '":', ' "', "x", '"', "}"])
    assert json.loads(reply) == {"a": 'Marta "', "b": "x"}


def test_a_quote_with_json_structure_in_its_token_ends_the_string():
    # the title closed and the object ended in one token: the string ends there, the title's opening quote escaped
    reply = written(['{"', "a", '":', ' "', "The", " song", ' "', "Yesterday", '"}'])
    assert reply.endswith('"}') and json.loads(reply) == {"a": 'The song "Yesterday'}
    # "X", is prose; but a quote after it that starts the next key ends the string instead of opening a quotation
    reply = written(['{"', "a", '":', ' "', "The", " song", ' "', "X", '",', ' "', "b", '":', ' "', "y", '"}'])
    assert reply.startswith('{"a": "The song \\"X\\", "b"')


def test_at_most_four_quotes_a_string_are_rewritten():
    quotation = [' "', "X", '"', " and"]
    reply = written(['{"', "a", '":', ' "', "Songs", *quotation * 2, ' "', "}"])  # the fifth quote ends the string
    assert reply.count('\\"') == 4 and json.loads(reply) == {"a": 'Songs "X" and "X" and '}


@pytest.mark.slow
def test_the_sampler_writes_a_rewrite_the_grammar_accepts_on_the_real_vocabulary():
    import llama_cpp

    from disambig.lm import make_lm
    from disambig.lm.lazy_grammar import GrammarCounts, GreedyPick

    lm = make_lm("local:smollm2")
    try:
        llama = lm.engine.llama
        schema = {"type": "object", "properties": {"long_answer": {"type": "string"}}, "required": ["long_answer"]}

        def ids(text: str) -> list[int]:
            return llama.tokenize(text.encode(), add_bos=False, special=False)

        # the model's reply, one piece a step: each quote its own token, as a model writes them
        plan = [*ids('{"long_answer": "The song'), *ids(' "'), *ids("Stuck"), *ids('"'), *ids(" is old."), *ids('"}')]

        def sample(repair: bool) -> tuple[str, GrammarCounts]:
            grammar = llama_cpp.LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
            counts = GrammarCounts()
            pick, out = GreedyPick(llama, grammar, counts, repair_quotes=repair), []
            for token in plan:
                logits = np.full(llama.n_vocab(), -10.0, dtype=np.float32)
                logits[token] = 10.0  # the model's choice
                out.append(pick(logits))
                while pick._queue:  # the rest of a rewrite, written before the model's next choice
                    out.append(pick(logits))
            pick.close()
            return llama.detokenize(out).decode(), counts

        reply, counts = sample(repair=True)
        assert json.loads(reply) == {"long_answer": 'The song "Stuck" is old.'} and counts.quotes_escaped == 2
        cut, counts = sample(repair=False)  # the library's reading: the string ends before the title
        assert cut.startswith('{"long_answer": "The song "') and "Stuck" not in cut and counts.quotes_escaped == 0
    finally:
        lm.engine.close()
