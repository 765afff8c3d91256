"""search_spans: a search or lookup may only name a span of the question or of what the run has read, in the
decoder's grammars (GBNF and llguidance's Lark) and in the parser, and the loop builds each step's calls from what
it has read so far (issue 72: a bridge is a name the run read, not one a Thought made up)."""

from __future__ import annotations

import pytest
from support import make_agent
from test_grounding import _LarkChecker

from offline_agent.agents import ReActAgent, VerifyAgent
from offline_agent.backends.scripted import ScriptedBackend
from offline_agent.errors import StepParseError
from offline_agent.grammar import GbnfChecker, GrammarSpec, ToolSpec, build_grammar
from offline_agent.grounding import Grounding
from offline_agent.parse import parser_for
from offline_agent.tools import build_tools

QUESTION = "In which city was Marie Curie born?"
READ = "[1] Marie Curie: Marie Curie was born in Warsaw, then part of the Russian Empire."
SPEC = GrammarSpec(
    tools=(ToolSpec("search"), ToolSpec("lookup")), grounded=True, span_arguments=("search",), argument_max=30
)


@pytest.fixture(scope="module")
def deciders():
    reading = Grounding([QUESTION, READ], yes_no=False)
    grammar = build_grammar(SPEC, Grounding([QUESTION, READ]), reading=reading)
    parser = parser_for(SPEC)
    return reading, grammar, GbnfChecker(grammar.gbnf), _LarkChecker(grammar.llguidance), parser


@pytest.mark.parametrize(
    ("argument", "expected"),
    [
        ("Warsaw", True),
        ("Russian Empire", True),
        ("Marie Curie", True),
        ("which city", True),
        ("the Russian Empire", True),
        ("Paris", False),  # never read
        ("Warsaw Poland", False),  # words read, but not one span
        ("yes", False),  # not an answer here: a search for yes is no search
        ("Marie Curie was born", False),  # a span holds no copula
    ],
)
def test_a_search_argument_is_a_span_of_what_was_read_for_every_decider(deciders, argument, expected) -> None:
    reading, _, gbnf, lark, parser = deciders
    step = f"Thought: t\nAction: search[{argument}]\n"
    assert reading.accepts(argument) is expected
    assert gbnf.accepts(step) is expected
    assert lark.accepts(step) is expected
    if expected:
        assert parser.parse(step, reading=reading).action.argument == argument
    else:
        with pytest.raises(StepParseError) as error:
            parser.parse(step, reading=reading)
        assert error.value.label in {"ungrounded", "bad_argument"} or "span" in str(error.value)


def test_other_tools_keep_their_free_line_and_a_span_may_be_longer_than_argument_max(deciders) -> None:
    reading, grammar, gbnf, lark, parser = deciders
    assert gbnf.accepts("Thought: t\nAction: lookup[anything at all]\n")
    long_span = "Marie Curie was born in Warsaw, then part of the Russian Empire"[len("Marie Curie was born in ") :]
    assert len(long_span) > SPEC.argument_max and reading.accepts(long_span)
    step = f"Thought: t\nAction: search[{long_span}]\n"
    assert gbnf.accepts(step) and lark.accepts(step)
    assert parser.parse(step, reading=reading).action.argument == long_span
    assert grammar.reading is reading


def test_without_a_reading_the_search_is_a_free_bounded_line() -> None:
    grammar = build_grammar(SPEC, Grounding([QUESTION]))
    checker = GbnfChecker(grammar.gbnf)
    assert grammar.reading is None
    assert checker.accepts("Thought: t\nAction: search[Paris]\n")
    assert not checker.accepts("Thought: t\nAction: search[" + "x" * 31 + "]\n")


def _run(strategy, tiny_index, outputs, **options):
    backend = ScriptedBackend(outputs)
    options = {"max_steps": 4, "grounded": True, "search_spans": True, **options}
    agent = make_agent(strategy, backend, build_tools(tiny_index, question=QUESTION), **options)
    return agent.run(QUESTION), backend


def test_each_step_may_search_only_what_the_run_has_read_so_far(tiny_index) -> None:
    outputs = [
        "Thought: x\nAction: search[Marie Curie]",
        "Thought: y\nAction: search[Warsaw]",
        "Thought: z\nFinal: Warsaw",
    ]
    trajectory, backend = _run(ReActAgent, tiny_index, outputs)
    first, second = (GbnfChecker(call.grammar) for call in backend.calls[:2])
    # Before anything is read, only the question's spans; "Warsaw" comes with the first search's Observation.
    assert first.accepts("Thought: x\nAction: search[Marie Curie]\n")
    assert not first.accepts("Thought: x\nAction: search[Warsaw]\n")
    assert "Warsaw" in trajectory.steps[0].observation
    assert second.accepts("Thought: y\nAction: search[Warsaw]\n")
    assert not second.accepts("Thought: y\nAction: search[Kraków]\n")
    assert [step.argument for step in trajectory.steps[:2]] == ["Marie Curie", "Warsaw"]
    assert trajectory.answer == "Warsaw"


def test_an_opening_search_is_read_and_a_refused_answer_may_still_be_searched(tiny_index) -> None:
    # verify refuses a Final that repeats the question's own entity and excludes it from the Finals (exclude_refused);
    # a search for it stays allowed: the reading excludes nothing.
    outputs = ["Thought: x\nFinal: Marie Curie", "Thought: y\nAction: search[Marie Curie]", "Thought: z\nFinal: Warsaw"]
    trajectory, backend = _run(
        VerifyAgent, tiny_index, outputs, first_search=True, exclude_refused=True, answer_form=True
    )
    assert trajectory.steps[0].details.opening is True
    assert trajectory.steps[1].details.refusal is not None
    after = GbnfChecker(backend.calls[1].grammar)
    assert not after.accepts("Thought: y\nFinal: Marie Curie\n")
    assert after.accepts("Thought: y\nAction: search[Marie Curie]\n")
    assert trajectory.answer == "Warsaw"


def test_the_option_is_off_by_default_and_the_grammar_unchanged(tiny_index) -> None:
    outputs = ["Thought: x\nAction: search[Paris]", "Thought: z\nFinal: Warsaw"]
    trajectory, backend = _run(ReActAgent, tiny_index, outputs, search_spans=False)
    assert trajectory.steps[0].argument == "Paris"
    plain = make_agent(ReActAgent, ScriptedBackend([]), build_tools(tiny_index), grounded=True)
    spanned = make_agent(ReActAgent, ScriptedBackend([]), build_tools(tiny_index), grounded=True, search_spans=True)
    assert plain.spec.span_arguments == () and spanned.spec.span_arguments == ("search", "retrieve", "lookup")
    assert "read-" not in backend.calls[0].grammar


def test_a_lookup_may_not_name_what_the_run_never_read_either(tiny_index) -> None:
    # Held to spans in its searches only, a model could still look up any name it liked; lookup names a thing in
    # the documents as search does, so it is held to the same spans.
    outputs = [
        "Thought: x\nAction: search[Marie Curie]",
        "Thought: y\nAction: lookup[Warsaw]",
        "Thought: z\nFinal: Warsaw",
    ]
    trajectory, backend = _run(ReActAgent, tiny_index, outputs)
    second = GbnfChecker(backend.calls[1].grammar)
    assert second.accepts("Thought: y\nAction: lookup[Warsaw]\n")
    assert not second.accepts("Thought: y\nAction: lookup[Francis Escudero]\n")
    assert trajectory.answer == "Warsaw"
