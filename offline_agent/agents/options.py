"""The options a strategy chooses for itself, typed and declared by the strategy (`options_type`), and how a
command line's `-o KEY=VALUE` becomes them.

Why: one run config (run.py) holds what every strategy obeys the same way; what only some strategies read (what a
search shows, whether the Final is grounded, verify's answer checks, KnowAgent's graph) is declared once, as a
frozen dataclass whose fields carry their default and one line of help. A strategy that extends another extends
its options too (VerifyAgent extends ReActAgent, so VerifyOptions extends ReActOptions), and an option a strategy
does not declare cannot be given to it: `-o read_hop=true` with react is an error that lists react's options.

A field's metadata says what the CLI and the docs show (`help`) and what values it takes (`low`/`high`,
`choices`, `kind` "path"); the type comes from the annotation (bool, int, float, str, or one of them or None).
The values are checked when the options are made, in Python as on the command line.

These are the built-in strategies' options; a strategy of one's own declares its own dataclass (a subclass of
StrategyOptions, frozen) beside it. Named settings of these options (`answer`, `plain`) are profiles (settings.py).
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import cache
from typing import Any

from offline_agent.errors import ConfigError
from offline_agent.tools.corpus import SNIPPETS, SearchSettings

TRUE = ("true", "yes", "on", "1")
FALSE = ("false", "no", "off", "0")


def option(
    default: Any,
    help: str,
    *,
    low: float | None = None,
    high: float | None = None,
    choices: Sequence[str] = (),
    kind: str | None = None,
) -> Any:
    """A field of a strategy's options: its default, one line of help, and the values it takes."""
    metadata = {"help": help, "low": low, "high": high, "choices": tuple(choices), "kind": kind}
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class OptionInfo:
    """One option as the CLI and the docs show it: key, type, default, help, and the values it takes."""

    key: str
    type: str  # bool, int, float, str or path
    default: Any
    help: str
    optional: bool = False  # None is a value too (KEY= on the command line)
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()

    def expects(self) -> str:
        """What the option takes, in words (for errors and listings)."""
        if self.choices:
            what = f"one of {list(self.choices)}"
        elif self.type == "bool":
            what = "a bool (true/false, yes/no, on/off, 1/0)"
        elif self.type in ("int", "float"):
            what = "an int" if self.type == "int" else "a number"
            if self.low is not None and self.high is not None:
                what += f" from {_number(self.low)} to {_number(self.high)}"
            elif self.low is not None:
                what += f" of at least {_number(self.low)}"
        else:
            what = "a path" if self.type == "path" else "a string"
        return what + (" (or nothing: KEY=)" if self.optional else "")

    def parse(self, text: str, owner: str) -> Any:
        """The value `text` (from the command line) stands for, checked."""
        word = text.strip()
        if self.optional and word == "":
            return None
        value: Any = word
        try:
            if self.type == "bool":
                if word.lower() not in TRUE + FALSE:
                    raise ValueError(word)
                value = word.lower() in TRUE
            elif self.type == "int":
                value = int(word)
            elif self.type == "float":
                value = float(word)
        except ValueError:
            raise ConfigError(f"option {self.key} of {owner} takes {self.expects()}, not {text!r}") from None
        return self.check(value, owner)

    def check(self, value: Any, owner: str) -> Any:
        """`value` if it is one this option takes; otherwise a ConfigError that says what it takes."""
        if value is None and self.optional:
            return None
        wanted = {"bool": bool, "int": int, "float": (int, float), "str": str, "path": str}[self.type]
        if not isinstance(value, wanted) or (self.type != "bool" and isinstance(value, bool)):
            raise ConfigError(f"option {self.key} of {owner} takes {self.expects()}, not {value!r}")
        bad_number = self.type == "float" and not math.isfinite(value)
        below = self.low is not None and value < self.low
        above = self.high is not None and value > self.high
        if bad_number or below or above or (self.choices and value not in self.choices):
            raise ConfigError(f"option {self.key} of {owner} takes {self.expects()}, not {value!r}")
        return float(value) if self.type == "float" else value


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


@cache
def option_infos(options_type: type[StrategyOptions]) -> dict[str, OptionInfo]:
    """Every option of `options_type` by key, in the order the fields are declared."""
    hints = typing.get_type_hints(options_type)
    out = {}
    for item in fields(options_type):
        hint = hints[item.name]
        union = typing.get_origin(hint) in (typing.Union, types.UnionType)
        members = typing.get_args(hint) if union else (hint,)
        named = [member for member in members if member is not type(None)]
        base = named[0].__name__ if len(named) == 1 else "str"
        meta = item.metadata
        out[item.name] = OptionInfo(
            key=item.name,
            type=meta.get("kind") or base,
            default=item.default,
            help=meta.get("help", ""),
            optional=type(None) in members,
            low=meta.get("low"),
            high=meta.get("high"),
            choices=tuple(meta.get("choices") or ()),
        )
    return out


# The options that set a search setting of another name (an option's name says what it is among all the others).
_SEARCH_OPTIONS = {"k": "search_k", "with_question": "search_with_question"}


@dataclass(frozen=True)
class StrategyOptions:
    """What every strategy reads through the seam: the Final's grounding and form, what a search shows (the run's
    tools are built with it), and how long an Observation may be."""

    grounded: bool = option(
        False, "The Final may only be a span of the question or of what the run has read, or yes/no (the grammar)."
    )
    answer_form: bool = option(
        False, "With grounded: the Final takes the form the question asks for (yes/no, one of 'A or B', a span read)."
    )
    abstain: bool = option(
        False, "The Final may be [not in the documents]: the prompt says when, the grammar allows it."
    )
    support_check: bool = option(
        False, "Abstain (the documents do not say) where what was read does not support the Final (checks/support.py)."
    )
    search_k: int = option(3, "Passages per search.", low=1, high=20)
    snippet: str = option(
        "head",
        "What a search shows of a passage: head (its first 600 characters) or sentences (its first and best ones).",
        choices=SNIPPETS,
    )
    sentences: int = option(
        3, "With snippet=sentences: sentences shown per passage, its first one included.", low=1, high=20
    )
    sentences_after: int = option(
        0,
        "With snippet=sentences: also show the N sentences after each best one (its 'The default is ...').",
        low=0,
        high=5,
    )
    section_sentences_after: int = option(
        0,
        "With snippet=sentences: at least N sentences after each best one in a section below a document's title.",
        low=0,
        high=5,
    )
    section_sentences: int = option(
        0,
        "With snippet=sentences: at least N sentences per passage in a section below a document's title.",
        low=0,
        high=20,
    )
    section_defaults: bool = option(
        False,
        "With snippet=sentences: also show every sentence that says 'default' in a section below a document's title.",
    )
    search_with_question: bool = option(
        False, "Where a search finds a section of a document (a manual's), rank by its keywords and the question's."
    )
    title_boost: bool = option(False, "Put the document whose title the query names first, whatever its BM25 rank.")
    links: int = option(
        0, "Also show up to N documents the found passages name: the next hop, without another search.", low=0, high=20
    )
    observation_tokens: int = option(
        320, "An Observation longer than this many tokens is cut at a word (marked with ...).", low=16, high=4096
    )

    def __post_init__(self) -> None:
        owner = type(self).__name__
        for key, info in option_infos(type(self)).items():
            value = info.check(getattr(self, key), owner)
            object.__setattr__(self, key, value)

    def search_settings(self) -> SearchSettings:
        """What a search of this run shows (tools.corpus.SearchSettings): each of its settings is the option of the
        same name, or of the name `_SEARCH_OPTIONS` gives."""
        names = [f.name for f in fields(SearchSettings)]
        return SearchSettings(**{name: getattr(self, _SEARCH_OPTIONS.get(name, name)) for name in names})

    def to_dict(self) -> dict[str, Any]:
        """The options as JSON values, in declaration order (recorded on trajectories and in config.json)."""
        return {key: getattr(self, key) for key in option_infos(type(self))}


@dataclass(frozen=True)
class ReActOptions(StrategyOptions):
    """The options of react's step loop (react, act, cot, standard, critic, and the strategies built on them)."""

    min_searches: int = option(
        0, "Final is allowed only after this many successful searches; until then only a search.", low=0, high=10
    )
    first_search: bool = option(False, "Open the run with a search for the question itself, written by the agent.")
    search_spans: bool = option(
        False, "search, lookup and retrieve may only look for a span of the question or of what the run has read."
    )
    fresh_calls: bool = option(
        False, "Each step's grammar leaves out the tool calls the run already made (and spent lookups)."
    )


@dataclass(frozen=True)
class VerifyOptions(ReActOptions):
    """react's options and the switches of verify's answer checks."""

    exclude_refused: bool = option(
        False,
        "With grounded: a Final refused as wrong cannot be written again, nor a span it begins or that begins it.",
    )
    search_after_refusal: bool = option(
        False, "After a Final refused for want of a fact, with no document shown, the next step may only search."
    )
    read_hop: bool = option(
        False,
        "With grounded: a Final refused as the entity on the way also asks its own document (or an entry shown) alone.",
    )
    without: str = option(
        "", "Answer checks and rewrites to leave out, by name, comma-separated (sides,same): see docs/answers.md."
    )


@dataclass(frozen=True)
class KnowAgentOptions(ReActOptions):
    """react's options and KnowAgent's action graph."""

    action_graph: str | None = option(
        None, "A TOML file of the actions and which may follow which (default: the graph shipped).", kind="path"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.action_graph is not None:
            from offline_agent.agents.action_graph import load_action_graph

            load_action_graph(self.action_graph)  # a bad file fails here, before a model loads


def make_options(
    options_type: type[StrategyOptions],
    values: Mapping[str, Any],
    *,
    owner: str,
    base: StrategyOptions | None = None,
) -> StrategyOptions:
    """Options of `options_type`: `base`'s values (default: the type's defaults) with `values` on top. A value
    may be typed or a string as a command line gives it; `owner` ("strategy verify") names who takes them in
    errors: an unknown key lists the valid ones, a bad value says what the option takes."""
    infos = option_infos(options_type)
    chosen = base.to_dict() if base is not None else {}
    for key, value in values.items():
        info = infos.get(key)
        if info is None:
            raise ConfigError(f"unknown option {key!r} for {owner}; choose from {sorted(infos)}")
        if isinstance(value, str):
            chosen[key] = info.parse(value, owner)
        else:
            chosen[key] = info.check(value, owner)
    return options_type(**{key: value for key, value in chosen.items() if key in infos})


def parse_assignments(pairs: Sequence[str]) -> dict[str, str]:
    """`-o KEY=VALUE` arguments as {KEY: VALUE} (a later one wins); a pair without `=` is a ConfigError."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key.strip():
            raise ConfigError(f"-o takes KEY=VALUE, not {pair!r}")
        out[key.strip().replace("-", "_")] = value
    return out


__all__ = [
    "KnowAgentOptions",
    "OptionInfo",
    "ReActOptions",
    "StrategyOptions",
    "VerifyOptions",
    "make_options",
    "option",
    "option_infos",
    "parse_assignments",
]
