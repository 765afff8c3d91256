"""Grounded answers: the span language, decided three ways (Python, the GBNF, llguidance's Lark) and held equal."""

from __future__ import annotations

import llguidance
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offline_agent.errors import StepParseError
from offline_agent.grammar import GbnfChecker, GrammarSpec, ToolSpec, _ByteTokenizer, build_grammar
from offline_agent.grounding import Grounding, tokens
from offline_agent.parse import parser_for

EVIDENCE = [
    "Which river flows through the birth city of James Joyce?",
    "[1] James Joyce: James Augustine Aloysius Joyce (2 February 1882 – 13 January 1941) was an Irish novelist, "
    "born in Dublin, Ireland. He is best known for Ulysses.\n[2] River Liffey: The Liffey is a river in Ireland, "
    "which flows through the centre of Dublin. Its tributaries include the River Dodder.",
]
SPEC = GrammarSpec(tools=(ToolSpec("search"),), grounded=True)


class _LarkChecker:
    """Whole strings against llguidance's Lark grammar (the decoder's form of a grounded step), byte by byte."""

    def __init__(self, text: str) -> None:
        self._tokenizer = llguidance.LLTokenizer(llguidance.TokenizerWrapper(_ByteTokenizer()))
        self._grammar = llguidance.grammar_from("lark", text)

    def accepts(self, text: str) -> bool:
        matcher = llguidance.LLMatcher(self._tokenizer, self._grammar, log_level=0)
        assert not matcher.is_error(), matcher.get_error()
        return all(matcher.consume_token(byte) for byte in text.encode("utf-8")) and matcher.is_accepting()


def excluding(evidence: list[str], *answers: str) -> tuple[Grounding, GbnfChecker, _LarkChecker]:
    """The three deciders (Python, GBNF, Lark) of a grounding of `evidence` with `answers` excluded."""
    grounding = Grounding(evidence)
    for answer in answers:
        grounding.exclude(answer)
    grammar = build_grammar(SPEC, grounding)
    return grounding, GbnfChecker(grammar.gbnf), _LarkChecker(grammar.llguidance)


@pytest.fixture(scope="module")
def grounded():
    return excluding(EVIDENCE)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("River Liffey", True),
        ("Liffey", True),
        ("Dublin", True),
        ("Dublin, Ireland", True),
        ("2 February 1882", True),
        ("Irish novelist, born in Dublin", True),
        ("James Joyce", True),  # a span of the question counts
        ("yes", True),
        ("No", True),
        ("Paris", False),  # never read
        ("Dublin Ireland", False),  # not written that way
        ("Ireland.", False),  # a span ends on a word
        (", Ireland", False),  # and starts on one
        ("Ulysses. The Liffey", False),  # and never crosses a sentence
        ("river Liffey flows", False),
        ("The Liffey is a river in Ireland", False),  # a clause: a copula ends the span of a name
        ("The Liffey", True),
        ("a river in Ireland", True),
        ("", False),
    ],
)
def test_span_language_agrees_in_python_gbnf_and_lark(grounded, answer: str, expected: bool) -> None:
    assert_deciders_say(grounded, answer, expected)


def test_a_copula_cuts_spans_only_in_lower_case() -> None:
    grounding = Grounding(["What Is Love is a song. The band were formed in 1990, and it is still touring."])
    assert grounding.accepts("What Is Love") and not grounding.accepts("What Is Love is a song")
    assert grounding.accepts("a song") and grounding.accepts("formed in 1990, and it")
    assert not grounding.accepts("The band were formed") and not grounding.accepts("it is still touring")
    assert len(grounding) == 2  # sentences read, whatever the copulas


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("-e", True),  # a command-line option is written with its hyphens
        ("--extension", True),
        ("-e pattern", True),
        ("-1", True),  # a negative number with its sign
        ("1", False),  # not the sign's digit alone: a model meaning "1000" is not let write "1" of it
        ("extension", False),
        ("1990-1995", True),  # a hyphen inside a word joins it as before
        ("1990", False),
        ("b", True),  # a hyphen set apart by spaces is a token alone, so no span opens with it
        ("- b", False),
    ],
)
def test_a_word_may_open_with_the_hyphens_of_an_option_or_a_sign(answer: str, expected: bool) -> None:
    evidence = [
        "pg_dump > Options > -e pattern --extension=pattern: Dump only extensions matching pattern.",
        "The special value of -1 disables it. The years 1990-1995 saw a - b.",
    ]
    assert_deciders_say(excluding(evidence), answer, expected)


def test_the_hyphens_that_open_a_word_follow_a_space_a_bracket_or_a_quote() -> None:
    assert [symbol.text for symbol in tokens('use (-X) or "--no-psqlrc", not x,-y')] == [
        "use", "(", "-X", ")", "or", '"', "--no-psqlrc", '"', ",", "not", "x", ",", "-", "y",
    ]  # fmt: skip


def assert_deciders_say(deciders, answer: str, expected: bool) -> None:
    """The grounding itself, its GBNF and its Lark grammar each accept `answer` as a Final, or each refuse it."""
    grounding, gbnf, lark = deciders
    step = f"Thought: done.\nFinal: {answer}\n"
    assert grounding.accepts(answer) is expected
    assert gbnf.accepts(step) is expected
    assert lark.accepts(step) is expected


@settings(max_examples=150)
@given(start=st.integers(0, 200), length=st.integers(1, 12), mutate=st.booleans())
def test_every_span_of_the_evidence_is_accepted_and_edits_agree(
    grounded, start: int, length: int, mutate: bool
) -> None:
    """Random spans of the evidence (and spans with a word swapped) are judged alike by all three deciders."""
    grounding, gbnf, lark = grounded
    symbols = [s for text in EVIDENCE for s in tokens(text)]
    piece = symbols[start % len(symbols) :][:length]
    answer = "".join((" " if s.spaced and i else "") + s.text for i, s in enumerate(piece))
    if mutate and piece:
        answer = answer.replace(piece[-1].text, "Zanzibar")
    step = f"Thought: done.\nFinal: {answer}\n"
    verdict = grounding.accepts(answer)
    assert gbnf.accepts(step) is verdict
    assert lark.accepts(step) is verdict


def test_the_parser_rejects_an_ungrounded_final_with_its_label() -> None:
    grounding = Grounding(EVIDENCE)
    parser = parser_for(SPEC)
    assert parser.parse("Thought: x\nFinal: River Liffey\n", grounding=grounding).final == "River Liffey"
    with pytest.raises(StepParseError) as caught:
        parser.parse("Thought: x\nFinal: the Seine\n", grounding=grounding)
    assert caught.value.label == "ungrounded"


def test_before_anything_is_read_only_yes_no_and_the_question_can_answer() -> None:
    grounding = Grounding(["Is Paris in France?"])
    checker = GbnfChecker(build_grammar(SPEC, grounding).gbnf)
    assert checker.accepts("Thought: x\nFinal: yes\n")
    assert checker.accepts("Thought: x\nFinal: Paris\n")
    assert not checker.accepts("Thought: x\nFinal: Lyon\n")
    # Without a grounding at all (nothing read), the grammar still builds: yes or no only.
    bare = GbnfChecker(build_grammar(SPEC).gbnf)
    assert bare.accepts("Thought: x\nFinal: no\n") and not bare.accepts("Thought: x\nFinal: Paris\n")


def test_the_grammar_grows_with_what_is_read() -> None:
    grounding = Grounding(["Who founded the Larkspur Gallery?"])
    before = build_grammar(SPEC, grounding)
    grounding.add("[1] Larkspur Gallery: The painter Edda Morlin founded it in 1921.")
    after = build_grammar(SPEC, grounding)
    assert before.sha256 != after.sha256 or before.llguidance != after.llguidance
    assert not GbnfChecker(before.gbnf).accepts("Thought: x\nFinal: Edda Morlin\n")
    assert GbnfChecker(after.gbnf).accepts("Thought: x\nFinal: Edda Morlin\n")


def test_quotes_and_backslashes_in_the_evidence_are_escaped() -> None:
    grounding = Grounding(['He said "hello\\world" twice.'])
    grammar = build_grammar(SPEC, grounding)
    assert GbnfChecker(grammar.gbnf).accepts('Thought: x\nFinal: He said "hello\\world" twice\n')
    assert _LarkChecker(grammar.llguidance).accepts('Thought: x\nFinal: hello\\world" twice\n')
    assert grounding.accepts('said "hello')


# ---- excluded answers ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def excluded():
    return excluding(EVIDENCE, "River Liffey", "Irish novelist")


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("River Liffey", False),  # the excluded answer
        ("River", False),  # a beginning of it
        ("Irish", False),
        ("Irish novelist, born in Dublin", False),  # a span that begins with it
        ("River Dodder", True),  # the same first word, another answer
        ("Liffey", True),  # a suffix that also stands alone ("The Liffey is a river")
        ("novelist", True),
        ("Dublin, Ireland", True),
        ("yes", True),
    ],
)
def test_an_excluded_answer_is_refused_alike_by_python_gbnf_and_lark(excluded, answer: str, expected: bool) -> None:
    assert_deciders_say(excluded, answer, expected)


@settings(max_examples=150)
@given(start=st.integers(0, 200), length=st.integers(1, 12))
def test_excluded_answers_keep_the_three_deciders_equal(excluded, start: int, length: int) -> None:
    grounding, gbnf, lark = excluded
    symbols = [s for text in EVIDENCE for s in tokens(text)]
    piece = symbols[start % len(symbols) :][:length]
    answer = "".join((" " if s.spaced and i else "") + s.text for i, s in enumerate(piece))
    step = f"Thought: done.\nFinal: {answer}\n"
    verdict = grounding.accepts(answer)
    assert gbnf.accepts(step) is verdict
    assert lark.accepts(step) is verdict


def test_an_excluded_answer_takes_out_the_longer_words_it_begins() -> None:
    evidence = ["Joyce was born in Dublin.", "He wrote Dubliners.", "The River Liffey flows through Dublin."]
    deciders = excluding(evidence, "Dublin")
    for answer, expected in [("Dublin", False), ("Dubliners", False), ("River Liffey", True), ("Joyce", True)]:
        assert_deciders_say(deciders, answer, expected)
    liffey = Grounding(["The River Liffey flows through Dublin, past the River Liffeyside walk."])
    liffey.exclude("River Liffey")  # the last word extended after the same first words; alone, it stays
    assert not liffey.accepts("River Liffeyside") and liffey.accepts("Liffeyside") and liffey.accepts("Dublin")


def test_an_excluded_answer_is_taken_out_in_every_case_it_was_read_in() -> None:
    # dev200: "magazine" was refused as the question's word, and "Magazine", read in another passage's title, stood.
    evidence = ["Woman's Era is a fortnightly magazine.", "Chrysalis: A Magazine of Women's Culture.", "VIVA Media."]
    deciders = excluding(evidence, "magazine", "Viva Media")
    for answer, expected in [
        ("magazine", False),
        ("Magazine", False),
        ("Magazine of Women's Culture", False),  # a span that begins with it
        ("fortnightly magazine", True),  # it ends the answer, which is another one
        ("VIVA Media", False),
        ("VIVA", False),  # a beginning of it
        ("Media", True),
    ]:
        assert_deciders_say(deciders, answer, expected)


def test_an_excluded_answer_is_taken_out_after_an_article_too() -> None:
    # "The America East Conference" is "America East Conference" to HotpotQA's scoring and to the checks.
    evidence = ["The America East Conference was the North Atlantic Conference.", "America East Conference teams."]
    deciders = excluding(evidence, "America East Conference")
    for answer, expected in [
        ("America East Conference", False),
        ("The America East Conference", False),
        ("The America", False),  # a beginning of it
        ("the North Atlantic Conference", True),
        ("North Atlantic Conference", True),
        ("East Conference", True),
    ]:
        assert_deciders_say(deciders, answer, expected)


def test_an_exclusion_that_would_leave_no_answer_is_ignored() -> None:
    grounding = Grounding(["Mount Elbrus", "Mount Kilimanjaro"], yes_no=False)
    grounding.exclude("Mount Elbrus")
    assert not grounding.accepts("Mount Elbrus") and not grounding.accepts("Mount")
    assert grounding.accepts("Mount Kilimanjaro") and grounding.accepts("Kilimanjaro")
    before = grounding.sha256
    grounding.exclude("Mount Kilimanjaro")
    grounding.exclude("Kilimanjaro")
    grounding.exclude("Elbrus")
    assert grounding.sha256 != before
    # every answer is excluded now: the exclusions are set aside rather than leave a grammar with no Final
    assert grounding.accepts("Mount Elbrus")
    assert GbnfChecker(build_grammar(SPEC, grounding).gbnf).accepts("Thought: x\nFinal: Mount Kilimanjaro\n")


def test_a_yes_or_no_that_is_not_an_answer_is_not_one_where_it_was_read_either() -> None:
    # knowagent's run on "D1NZ is a series based on what oversteering technique?" read this sentence, and the
    # grammar let it write "no" as a span, which the parser then refused: the run ended in a format error
    read = ["D1NZ is a production car drifting series in New Zealand.", "No championship runs there. Yes, it does."]
    for grounding in (Grounding(read, yes_no=False), Grounding(read)):
        grounding.exclude("no")  # on an open question neither word is an answer; on a yes/no one, "no" was refused
        grammar = build_grammar(SPEC, grounding)
        deciders = (grounding, GbnfChecker(grammar.gbnf), _LarkChecker(grammar.llguidance))
        for answer in ("no", "No"):
            assert_deciders_say(deciders, answer, False)
        for answer in ("No championship", "no championship", "New Zealand", "drifting series"):
            assert_deciders_say(deciders, answer, answer != "no championship")  # spans as they were read
        assert_deciders_say(deciders, "Yes", grounding.yes_no)
    assert Grounding(read).accepts("no") and Grounding(read).accepts("Yes")


def test_answers_that_are_not_spans_are_never_excluded_and_yes_no_only_one_at_a_time() -> None:
    grounding = Grounding(EVIDENCE)
    for answer in ("", "  ", ", Ireland"):
        grounding.exclude(answer)
    assert grounding.accepts("yes") and grounding.accepts("Dublin, Ireland")
    before = grounding.sha256
    grounding.exclude("yes")
    grounding.exclude("No")  # would leave neither yes nor no: ignored
    assert not grounding.accepts("Yes") and grounding.accepts("No") and grounding.accepts("Dublin, Ireland")
    assert grounding.sha256 != before


def test_spans_lists_the_short_answers_that_fit_each_once_in_the_order_read() -> None:
    grounding = Grounding(
        ["[1] Roald Dahl: His books have sold more than 250 million copies. The first was published in 1943."],
        yes_no=False,
    )
    holds_250 = grounding.spans(lambda span: "250" in span, 3)
    assert holds_250 == ["more than 250", "than 250", "than 250 million", "250", "250 million", "250 million copies"]
    assert all(grounding.accepts(span) for span in holds_250)
    # A span never crosses a copula ("The first was"), a sentence or a title, nor ends on punctuation.
    assert grounding.spans(lambda span: "1943" in span, 8) == ["published in 1943", "in 1943", "1943"]
    assert grounding.spans(lambda span: "Dahl" in span, 8) == ["Roald Dahl", "Dahl"]
    assert grounding.spans(lambda span: span.endswith("."), 10) == []


def test_spans_leave_out_what_is_excluded() -> None:
    grounding = Grounding(["The lake covers 1,047 hectares and 250 acres."], yes_no=False)
    grounding.exclude("1,047 hectares")
    spans = grounding.spans(lambda span: any(ch.isdigit() for ch in span), 2)
    assert "1,047 hectares" not in spans and "1,047" not in spans and spans[-2:] == ["250", "250 acres"]
