"""fresh_calls: a step's grammar leaves out the calls the loop would refuse as repeats.

The language is decided three ways (Python's call_key, the GBNF, llguidance's Lark) and held equal; the loop is
driven by the scripted backend over the tiny corpus, and the grammars it sent are checked."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_answer_checks import make
from test_grounding import _LarkChecker

from offline_agent.agents import ReActAgent
from offline_agent.agents.base import call_key
from offline_agent.grammar import GbnfChecker, GrammarSpec, ToolSpec, build_grammar

SPEC = GrammarSpec(
    tools=(
        ToolSpec("search"),
        ToolSpec("lookup"),
        ToolSpec("note", schema={"type": "object", "properties": {"text": {"type": "string"}}}),
    )
)
SPENT = {"search": ["Aladin stage name", "Aladin", "AC/DC - live", "Émile Zola's Paris", "x"], "lookup": ["born"]}


@pytest.fixture(scope="module")
def deciders():
    grammar = build_grammar(SPEC, spent=SPENT)
    return GbnfChecker(grammar.gbnf), _LarkChecker(grammar.llguidance)


def spent(tool: str, argument: str) -> bool:
    """What the loop refuses: the same tool and argument, case and spacing ignored."""
    return any(call_key(tool, argument) == call_key(tool, earlier) for earlier in SPENT.get(tool, ()))


def assert_deciders_say(deciders, tool: str, argument: str, expected: bool) -> None:
    gbnf, lark = deciders
    step = f"Thought: again.\nAction: {tool}[{argument}]\n"
    assert gbnf.accepts(step) is expected, step
    assert lark.accepts(step) is expected, step


@pytest.mark.parametrize(
    ("tool", "argument", "expected"),
    [
        ("search", "Aladin", False),
        ("search", "ALADIN", False),
        ("search", "Aladin ", False),  # a trailing space is the same call
        ("search", "Aladin   ", False),
        ("search", "Aladin stage name", False),
        ("search", "aladin STAGE name ", False),
        ("search", "Aladin stage  name", False),  # so is a doubled space
        ("search", "Émile Zola's Paris", False),
        ("search", "éMILE zola's paris", False),
        ("search", "AC/DC - live", False),
        ("search", "X", False),
        ("search", "Aladin stage", True),  # a prefix of a spent call is a new call
        ("search", "Aladi", True),
        ("search", "Aladin magician", True),
        ("search", "Aladin stage names", True),
        ("search", "Aladin stage name 1959", True),
        ("search", "AC/DC", True),
        ("search", "AC/DC -", True),
        ("search", "xy", True),
        ("search", "Eenasul Fateh", True),
        ("lookup", "born", False),
        ("lookup", "Aladin", True),  # spent for search only
        ("lookup", "born in", True),
        ("search", "born", True),
        ("search", " Aladin magician", False),  # the argument's rules still hold
        ("search", "Aladin [1]", False),
    ],
)
def test_spent_calls_agree_in_gbnf_and_lark(deciders, tool: str, argument: str, expected: bool) -> None:
    assert_deciders_say(deciders, tool, argument, expected)


@settings(max_examples=100, deadline=None)
@given(
    base=st.sampled_from(SPENT["search"]),
    cut=st.integers(0, 20),
    tail=st.sampled_from(["", " ", "  ", "s", " x", "  name", " stage name", "!"]),
    upper=st.booleans(),
)
def test_edits_of_spent_calls_are_judged_as_the_loop_judges_them(deciders, base, cut, tail, upper) -> None:
    argument = base[: max(1, len(base) - cut)] + tail
    argument = argument.upper() if upper else argument
    if "  " in argument:
        return  # a doubled space is never written after a spent call's prefix (see _line_except), so not judged here
    assert_deciders_say(deciders, "search", argument, not spent("search", argument))


def test_json_arguments_and_tools_without_spent_calls_keep_their_grammar() -> None:
    plain = build_grammar(SPEC)
    with_spent = build_grammar(SPEC, spent={"lookup": ["born"], "note": ['{"text": "a"}']})
    assert plain.llguidance is None  # only a grammar that leaves something out needs its own decoder form
    assert with_spent.lark == plain.lark  # the parser accepts a repeat; the loop refuses it
    checker = GbnfChecker(with_spent.gbnf)
    assert checker.accepts('Thought: a\nAction: note[{"text": "a"}]\n')
    assert checker.accepts("Thought: a\nAction: search[born]\n")
    assert not checker.accepts("Thought: a\nAction: lookup[born]\n")


def test_the_loop_leaves_made_calls_out_of_later_grammars(tiny_index) -> None:
    agent, backend = make(
        tiny_index,
        [
            "Thought: a\nAction: search[Marie Curie]",
            "Thought: b\nAction: lookup[zzz]",
            "Thought: c\nAction: search[Warsaw]",
            "Thought: d\nFinal: Warsaw",
        ],
        agent=ReActAgent,
        fresh_calls=True,
    )
    trajectory = agent.run("In which city was Marie Curie born?")
    assert trajectory.answer == "Warsaw"
    first, second, third = (GbnfChecker(call.grammar) for call in backend.calls[:3])
    assert first.accepts("Thought: a\nAction: search[Marie Curie]\n")
    assert not second.accepts("Thought: b\nAction: search[marie curie]\n")
    assert second.accepts("Thought: b\nAction: search[Marie Curie birthplace]\n")
    assert second.accepts("Thought: b\nAction: lookup[zzz]\n")
    assert not third.accepts("Thought: c\nAction: lookup[zzz]\n")  # no sentence has it: a lookup would only repeat
    assert third.accepts("Thought: c\nAction: lookup[Warsaw]\n")


def test_without_fresh_calls_a_repeat_is_written_and_refused_by_the_loop(tiny_index) -> None:
    agent, backend = make(
        tiny_index,
        [
            "Thought: a\nAction: search[Marie Curie]",
            "Thought: b\nAction: search[Marie Curie]",
            "Thought: c\nFinal: Warsaw",
        ],
        agent=ReActAgent,
    )
    trajectory = agent.run("In which city was Marie Curie born?")
    assert GbnfChecker(backend.calls[1].grammar).accepts("Thought: b\nAction: search[Marie Curie]\n")
    assert trajectory.steps[1].observation.startswith("You already ran search[Marie Curie]")


def test_a_spent_call_of_the_longest_length_leaves_the_rest_of_the_language() -> None:
    spec = GrammarSpec(tools=(ToolSpec("search"),), argument_max=6)
    grammar = build_grammar(spec, spent={"search": ["abcdef", "abcdefgh"]})  # the second cannot be written anyway
    gbnf, lark = GbnfChecker(grammar.gbnf), _LarkChecker(grammar.llguidance)
    for argument, expected in [("abcdef", False), ("ABCDEF", False), ("abcdeg", True), ("abcde", True), ("abc", True)]:
        step = f"Thought: t\nAction: search[{argument}]\n"
        assert gbnf.accepts(step) is expected and lark.accepts(step) is expected, argument
