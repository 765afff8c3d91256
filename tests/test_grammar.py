"""The grammar builder: one spec, two grammars that accept the same language."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.lark import from_lark
from lark import Lark
from support import ROOT

from offline_agent.errors import ConfigError, GrammarError
from offline_agent.grammar import GbnfChecker, GrammarSpec, ToolSpec, build_grammar
from offline_agent.parse import StepParser
from offline_agent.tools import default_tool_specs

DEFAULT = GrammarSpec(tools=tuple(default_tool_specs()))


def test_shipped_grammar_files_are_the_builders_output() -> None:
    built = build_grammar(DEFAULT)
    assert (ROOT / "grammars" / "react.gbnf").read_text(encoding="utf-8") == built.gbnf
    assert (ROOT / "grammars" / "react.lark").read_text(encoding="utf-8") == built.lark


def test_only_registered_tools_appear() -> None:
    spec = GrammarSpec(tools=(ToolSpec("search"),))
    built = build_grammar(spec)
    assert '"search["' in built.gbnf and "lookup" not in built.gbnf and "calculator" not in built.gbnf
    assert StepParser(spec).accepts("Thought: x\nAction: search[y]")
    assert not StepParser(spec).accepts("Thought: x\nAction: lookup[y]")


def test_final_only_grammar_has_no_action() -> None:
    spec = DEFAULT.final_only()
    built = build_grammar(spec)
    assert "Action" not in built.gbnf and "Action" not in built.lark
    parser = StepParser(spec)
    assert parser.accepts("Thought: done\nFinal: 42")
    assert not parser.accepts("Thought: more\nAction: search[x]")


def test_allowed_tools_restricts_actions() -> None:
    spec = GrammarSpec(tools=DEFAULT.tools, allowed_tools=("lookup",))
    parser = StepParser(spec)
    assert parser.accepts("Thought: x\nAction: lookup[born]")
    assert not parser.accepts("Thought: x\nAction: search[born]")


def test_no_thought_variant() -> None:
    parser = StepParser(GrammarSpec(tools=DEFAULT.tools, thought=False))
    assert parser.accepts("Action: search[Ed Wood]\n")
    assert not parser.accepts("Thought: x\nAction: search[Ed Wood]\n")


def test_bounds_are_in_both_grammars() -> None:
    spec = GrammarSpec(tools=DEFAULT.tools, thought_max=10, argument_max=5, final_max=3)
    built = build_grammar(spec)
    checker, parser = GbnfChecker(built.gbnf), StepParser(spec)
    for text, ok in [
        ("Thought: " + "a" * 10 + "\nFinal: abc", True),
        ("Thought: " + "a" * 11 + "\nFinal: abc", False),
        ("Thought: a\nFinal: abcd", False),
        ("Thought: a\nAction: search[abcde]", True),
        ("Thought: a\nAction: search[abcdef]", False),
    ]:
        assert parser.accepts(text) is ok, text
        assert checker.accepts(text) is ok, text


def test_hash_changes_with_the_spec() -> None:
    assert build_grammar(DEFAULT).sha256 != build_grammar(DEFAULT.final_only()).sha256
    assert build_grammar(DEFAULT).sha256 == build_grammar(GrammarSpec(tools=tuple(default_tool_specs()))).sha256


@pytest.mark.parametrize(
    "make",
    [
        lambda: ToolSpec("Bad Name"),
        lambda: ToolSpec("x", schema={"type": "array"}),
        lambda: ToolSpec("x", schema={"type": "object", "properties": {"a": {"type": "list"}}}),
        lambda: GrammarSpec(tools=(ToolSpec("a"), ToolSpec("a"))),
        lambda: GrammarSpec(tools=(ToolSpec("a"),), allowed_tools=("b",)),
        lambda: GrammarSpec(tools=(), allow_final=False),
        lambda: GrammarSpec(thought_max=0),
    ],
)
def test_bad_specs_are_config_errors(make) -> None:
    with pytest.raises(ConfigError):
        make()


def test_broken_gbnf_fails_closed() -> None:
    with pytest.raises(GrammarError):
        GbnfChecker('root ::= "a" undefined-rule')


def test_json_schema_types() -> None:
    tool = ToolSpec(
        "book",
        schema={
            "type": "object",
            "properties": {
                "title": {"type": "string", "maxLength": 20},
                "year": {"type": "integer"},
                "price": {"type": "number"},
                "signed": {"type": "boolean"},
                "cover": {"enum": ["hard", "soft"]},
            },
        },
    )
    spec = GrammarSpec(tools=(tool,))
    parser, checker = StepParser(spec), GbnfChecker(build_grammar(spec).gbnf)
    good = 'Thought: buy\nAction: book[{"title": "Dune", "year": 1965, "price": -9.5, "signed": true, "cover": "hard"}]'
    step = parser.parse(good)
    assert step.action is not None and step.action.argument["year"] == 1965
    assert checker.accepts(good)
    for bad in [
        good.replace("1965", '"1965"'),
        good.replace('"hard"', '"paper"'),
        good.replace("true", "yes"),
        good.replace('"Dune"', '"' + "x" * 21 + '"'),
    ]:
        assert not parser.accepts(bad) and not checker.accepts(bad), bad


# --- the two grammars accept the same language -----------------------------------------------------------------


def _lark_for_generation(spec: GrammarSpec) -> Lark:
    return Lark(build_grammar(spec).lark, parser="lalr", lexer="contextual")


SPECS = {
    "react": DEFAULT,
    "final_only": DEFAULT.final_only(),
    "act": GrammarSpec(tools=DEFAULT.tools, thought=False),
    "small_bounds": GrammarSpec(tools=DEFAULT.tools, thought_max=4, argument_max=3, final_max=2, string_max=3),
}
CHECKERS = {name: GbnfChecker(build_grammar(spec).gbnf) for name, spec in SPECS.items()}
PARSERS = {name: StepParser(spec) for name, spec in SPECS.items()}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_strings_generated_from_lark_are_accepted_by_the_gbnf(name: str) -> None:
    strategy = from_lark(_lark_for_generation(SPECS[name]), start="start")

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(strategy)
    def check(text: str) -> None:
        assert CHECKERS[name].accepts(text), repr(text)
        assert PARSERS[name].accepts(text), repr(text)

    check()


_PIECES = st.sampled_from(
    [
        "Thought: ",
        "Action: ",
        "Final: ",
        "search[",
        "lookup[",
        "calculator[",
        "]",
        "\n",
        "\n\n",
        " ",
        "[",
        '{"expression": ',
        '"',
        "}",
        "\\",
        "x",
        "Ed Wood",
        "3*7",
        "é",
        "\t",
        "Observation: ",
    ]
)


@settings(max_examples=250, deadline=None)
@given(st.lists(_PIECES, max_size=12).map("".join))
def test_gbnf_and_lark_agree_on_arbitrary_text(text: str) -> None:
    for name in ("react", "small_bounds"):
        assert CHECKERS[name].accepts(text) == PARSERS[name].accepts(text), (name, text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_gbnf_and_lark_agree_on_json_strings(value: str) -> None:
    text = 'Thought: t\nAction: calculator[{"expression": ' + json.dumps(value, ensure_ascii=False) + "}]"
    assert CHECKERS["react"].accepts(text) == PARSERS["react"].accepts(text), text


def test_gbnf_has_no_unbounded_free_text() -> None:
    gbnf = build_grammar(DEFAULT).gbnf
    assert not re.search(r"\]\*|\]\+", gbnf), "free text must be bounded"
