"""JSON turn grammars from pydantic models: the GBNF and Lark pair accept the same texts, and JsonParser validates."""

from __future__ import annotations

import json
from enum import Enum
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.lark import from_lark
from lark import Lark
from pydantic import BaseModel, Field, field_validator

from offline_agent.errors import ConfigError, StepParseError
from offline_agent.grammar import GbnfChecker, JsonGrammar, json_grammar
from offline_agent.parse import JsonParser, json_parser_for


class Mood(str, Enum):
    calm = "calm"
    stormy = "stormy"


class Lighthouse(BaseModel):
    keeper: str = Field(max_length=12)
    height_m: float
    lit: bool


class Survey(BaseModel):
    """Every supported kind once: scalars, a Literal, an Enum, a nested model and lists of both."""

    island: str = Field(max_length=16)
    visits: int
    inhabited: bool
    tide: Literal["low", "high"]
    mood: Mood
    main: Lighthouse
    lighthouses: list[Lighthouse] = Field(max_length=3)
    birds: list[str] = Field(default_factory=list, min_length=1, max_length=2)


class Verdict(BaseModel):
    sufficient: bool
    answer: str = Field(max_length=40)
    missing: str = Field(max_length=40)


class Grid(BaseModel):
    rows: list[list[int]] = Field(max_length=2)
    label: Literal["a", "b"]


MODELS: dict[str, type[BaseModel]] = {"survey": Survey, "verdict": Verdict, "grid": Grid}
GRAMMARS = {name: json_grammar(model, array_max=3) for name, model in MODELS.items()}
CHECKERS = {name: GbnfChecker(grammar.gbnf) for name, grammar in GRAMMARS.items()}
PARSERS = {name: JsonParser(grammar) for name, grammar in GRAMMARS.items()}

GOOD_SURVEY = (
    '{"island": "Brannock", "visits": 12, "inhabited": false, "tide": "high", "mood": "calm", '
    '"main": {"keeper": "Oda Vell", "height_m": 31.5, "lit": true}, '
    '"lighthouses": [{"keeper": "Ilse [II]", "height_m": -2, "lit": false}], "birds": ["tern"]}'
)


def _both(name: str, text: str) -> tuple[bool, bool]:
    return CHECKERS[name].accepts(text), PARSERS[name].accepts(text)


def test_a_valid_survey_parses_into_the_model() -> None:
    survey = PARSERS["survey"].parse(GOOD_SURVEY + "\n\n")
    assert isinstance(survey, Survey)
    assert survey.mood is Mood.calm and survey.lighthouses[0].keeper == "Ilse [II]"
    assert CHECKERS["survey"].accepts(GOOD_SURVEY) and CHECKERS["survey"].accepts(GOOD_SURVEY + "\n\n")


@pytest.mark.parametrize(
    "bad",
    [
        GOOD_SURVEY.replace('"Brannock"', '"' + "x" * 17 + '"'),  # over max_length
        GOOD_SURVEY.replace('"high"', '"medium"'),  # not in the Literal
        GOOD_SURVEY.replace('"calm"', '"Calm"'),  # not in the Enum
        GOOD_SURVEY.replace("12", '"12"'),  # a string for an integer
        GOOD_SURVEY.replace("12", "12.5"),  # a number for an integer
        GOOD_SURVEY.replace("12", "012"),  # a leading zero is not JSON
        GOOD_SURVEY.replace('["tern"]', "[]"),  # under min_length
        GOOD_SURVEY.replace('["tern"]', '["tern", "auk", "gull"]'),  # over max_length
        GOOD_SURVEY.replace('"visits": 12, "inhabited": false', '"inhabited": false, "visits": 12'),  # order
        GOOD_SURVEY.replace(', "birds": ["tern"]', ""),  # a missing field
        GOOD_SURVEY.replace('"island": ', '"island":  '),  # two spaces
        GOOD_SURVEY.replace('"Brannock"', '"Bran\\u006eock"'),  # \u escapes are not in the grammar
        GOOD_SURVEY.replace('"Brannock"', '"Bran\nnock"'),  # a raw control character
        " " + GOOD_SURVEY,
        GOOD_SURVEY + "\n\n\n",
        GOOD_SURVEY + " thanks",
        "```json\n" + GOOD_SURVEY + "\n```",
    ],
)
def test_both_grammars_refuse_the_same_bad_texts(bad: str) -> None:
    assert _both("survey", bad) == (False, False), bad


def test_whitespace_is_at_most_one_space_at_each_place() -> None:
    spaced = '{ "sufficient": true, "answer": "Oslo", "missing": "" }'
    assert _both("verdict", spaced) == (True, True)
    assert _both("verdict", spaced.replace("true,", "true ,")) == (False, False)  # none before a comma
    assert _both("verdict", '{"sufficient":true,"answer":"Oslo","missing":""}') == (True, True)
    assert _both("verdict", '{"sufficient" : true,"answer":"Oslo","missing":""}') == (False, False)
    assert _both("grid", '{"rows": [ ], "label": "a"}') == (True, True)
    assert _both("grid", '{"rows": [  ], "label": "a"}') == (False, False)
    assert _both("grid", '{"rows": [ [1, -20 ], [] ], "label": "b"}') == (True, True)


def test_the_flattened_schema_has_every_bound() -> None:
    schema = GRAMMARS["survey"].schema
    assert list(schema["properties"]) == list(Survey.model_fields)
    assert schema["required"] == list(Survey.model_fields)
    assert schema["properties"]["mood"] == {"enum": ["calm", "stormy"]}
    assert schema["properties"]["main"]["properties"]["keeper"] == {"type": "string", "maxLength": 12}
    assert schema["properties"]["lighthouses"]["maxItems"] == 3
    assert schema["properties"]["birds"]["minItems"] == 1
    assert json_grammar(Verdict, string_max=5).schema == json_grammar(Verdict).schema  # fields carry max_length


def test_defaults_apply_where_the_model_has_no_bound() -> None:
    class Note(BaseModel):
        text: str
        tags: list[str]

    grammar = json_grammar(Note, string_max=4, array_max=2)
    checker, parser = GbnfChecker(grammar.gbnf), JsonParser(grammar)
    for text, ok in [
        ('{"text": "abcd", "tags": ["a", "b"]}', True),
        ('{"text": "abcde", "tags": []}', False),
        ('{"text": "", "tags": ["a", "b", "c"]}', False),
    ]:
        assert checker.accepts(text) is ok and parser.accepts(text) is ok, text


def test_grammars_are_built_once_per_model_and_bounds() -> None:
    assert json_grammar(Verdict) is json_grammar(Verdict)
    assert json_grammar(Verdict, string_max=10) is not json_grammar(Verdict)
    assert json_parser_for(json_grammar(Verdict)) is json_parser_for(json_grammar(Verdict))
    assert isinstance(json_grammar(Verdict), JsonGrammar) and len(json_grammar(Verdict).sha256) == 64


def test_rule_names_are_unique_for_fields_that_differ_only_in_case() -> None:
    class Clash(BaseModel):
        Name: str
        name: str
        name_: int

    grammar = json_grammar(Clash)
    assert JsonParser(grammar).accepts('{"Name": "a", "name": "b", "name_": 3}')
    assert GbnfChecker(grammar.gbnf).accepts('{"Name": "a", "name": "b", "name_": 3}')


class _Optional(BaseModel):
    value: int | None


class _Dict(BaseModel):
    counts: dict[str, int]


class _Tuple(BaseModel):
    pair: tuple[int, int]


class _Node(BaseModel):
    children: list[_Node]


class _Pattern(BaseModel):
    code: str = Field(pattern="^[A-Z]+$")


class _Bounded(BaseModel):
    age: int = Field(ge=0)


class _Deep(BaseModel):
    inner: list[_Optional]


@pytest.mark.parametrize(
    ("model", "field"),
    [
        (_Optional, "_Optional.value"),
        (_Dict, "_Dict.counts"),
        (_Tuple, "_Tuple.pair"),
        (_Node, "_Node.children[]"),
        (_Pattern, "_Pattern.code"),
        (_Bounded, "_Bounded.age"),
        (_Deep, "_Deep.inner[].value"),
    ],
)
def test_unsupported_shapes_are_refused_naming_the_field(model: type[BaseModel], field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        json_grammar(model)
    assert str(caught.value).startswith(f"{field}: ")


def test_bad_bounds_are_config_errors() -> None:
    with pytest.raises(ConfigError):
        json_grammar(Verdict, array_max=0)


# --- error labels -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("", "empty"),
        ("  \n", "empty"),
        ('{"sufficient": true, "answer": "Os', "truncated"),
        ('{"sufficient": tr', "truncated"),
        ("{", "truncated"),
        ('{"sufficient": yes}', "invalid"),
        ('{"answer": "Oslo"}', "invalid"),
        ('I think {"sufficient": true}', "invalid"),
    ],
)
def test_error_labels(text: str, label: str) -> None:
    with pytest.raises(StepParseError) as caught:
        PARSERS["verdict"].parse(text)
    assert caught.value.label == label
    assert caught.value.line >= 1 and caught.value.column >= 1


def test_errors_point_at_the_failing_place() -> None:
    with pytest.raises(StepParseError) as caught:
        PARSERS["verdict"].parse('{"sufficient": true,\n"answer": 7}')
    assert caught.value.line == 1  # a raw newline is not whitespace this grammar allows
    with pytest.raises(StepParseError) as caught:
        PARSERS["verdict"].parse('{"sufficient": true, "answer": 7, "missing": ""}')
    assert (caught.value.line, caught.value.column) == (1, 32) and "^" in caught.value.context


def test_a_text_the_grammar_accepts_but_the_model_refuses_is_a_bad_argument() -> None:
    class Meeting(BaseModel):
        when: str

        @field_validator("when")
        @classmethod
        def _not_never(cls, value: str) -> str:
            if value == "never":
                raise ValueError("never is not a time")
            return value

    parser = JsonParser(json_grammar(Meeting))
    assert parser.parse('{"when": "noon"}').when == "noon"  # type: ignore[attr-defined]
    with pytest.raises(StepParseError) as caught:
        parser.parse('{"when": "never"}')
    assert caught.value.label == "bad_argument" and "\n" not in str(caught.value)


# --- the two grammars accept the same language ----------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(MODELS))
def test_strings_generated_from_lark_are_accepted_by_the_gbnf(name: str) -> None:
    strategy = from_lark(Lark(GRAMMARS[name].lark, parser="lalr", lexer="contextual"), start="start")

    @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(strategy)
    def check(text: str) -> None:
        assert CHECKERS[name].accepts(text), repr(text)
        json.loads(text)  # every accepted text is JSON

    check()


# Strings json.dumps writes without \u escapes: no control characters other than the short-escaped ones.
_CONTROL = "".join(map(chr, range(0x20)))
_TEXT = st.characters(exclude_categories=("Cs",), exclude_characters=_CONTROL) | st.sampled_from('\n\t\r\b\f\\"[]')


def _values(node: dict[str, Any]) -> st.SearchStrategy[Any]:
    """JSON values that fit one node of a flattened schema."""
    if "enum" in node:
        return st.sampled_from(node["enum"])
    kind = node["type"]
    if kind == "object":
        return st.fixed_dictionaries({key: _values(child) for key, child in node["properties"].items()})
    if kind == "array":
        return st.lists(_values(node["items"]), min_size=node["minItems"], max_size=node["maxItems"])
    if kind == "string":
        return st.lists(_TEXT, max_size=node["maxLength"]).map("".join)
    if kind == "boolean":
        return st.booleans()
    if kind == "integer":
        return st.integers(-(10**14), 10**14)
    # Decimal fractions json.dumps writes plainly (no exponent): at most 15 digits before and after the point.
    return st.decimals(-(10**9), 10**9, places=3, allow_nan=False, allow_infinity=False).map(float)


_SEPARATORS = st.sampled_from([(",", ":"), (", ", ": "), (",", ": "), (", ", ":")])


@pytest.mark.parametrize("name", sorted(MODELS))
def test_generated_instances_round_trip_through_both_grammars(name: str) -> None:
    grammar, model = GRAMMARS[name], MODELS[name]

    @settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_values(grammar.schema).map(model.model_validate), _SEPARATORS, st.sampled_from(["", "\n", "\n\n"]))
    def check(instance: BaseModel, separators: tuple[str, str], ending: str) -> None:
        text = json.dumps(instance.model_dump(mode="json"), separators=separators, ensure_ascii=False) + ending
        assert CHECKERS[name].accepts(text), text
        assert PARSERS[name].parse(text) == instance

    check()


_PIECES = st.sampled_from(
    ['{"sufficient":', '"answer":', '"missing":', " ", "true", "false", '"', "Oslo", ",", "}", "\n", "\\", "[", "é"]
)


@settings(max_examples=250, deadline=None)
@given(st.lists(_PIECES, max_size=14).map("".join))
def test_gbnf_and_lark_agree_on_arbitrary_text(text: str) -> None:
    assert CHECKERS["verdict"].accepts(text) == PARSERS["verdict"].accepts(text), text


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=45))
def test_gbnf_and_lark_agree_on_json_strings(value: str) -> None:
    text = '{"sufficient": false, "answer": ' + json.dumps(value, ensure_ascii=False) + ', "missing": "x"}'
    assert CHECKERS["verdict"].accepts(text) == PARSERS["verdict"].accepts(text), text
