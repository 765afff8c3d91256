"""Builds the grammar of one model turn twice from one spec: GBNF for the decoder, Lark for the parser.

Both texts come from the same `GrammarSpec` walk, rule for rule, so they accept the same language: the GBNF is
what llama.cpp (or llguidance) enforces while decoding, the Lark grammar is what `parse.py` checks afterwards.
What the spec controls:
- which tools may be called (an unknown tool cannot be produced) and each tool's argument: plain text, or a JSON
  object constrained by a small JSON Schema (string, integer, number, boolean and enum properties);
- whether a `Thought:` line comes first, whether `Action:` and/or `Final:` may follow (the last allowed step is
  Final only);
- bounds on every free-text field, so a small model cannot run on until max_tokens;
- whether a grounded Final may also be the abstention `ABSTAIN` ("[not in the documents]"), beside its spans.

Besides the spec, `build_grammar` takes what one step of a run adds: a grounding (the spans a grounded Final may
be) and spent calls (arguments a tool may not be called with again, left out of the decoder's grammars only).

Layout details that were measured, not guessed: the step may end with up to two newlines (a grammar ending right
at `]` blocks a `]\\n` token and the model keeps writing), and a line break may be one or two newlines (requiring
exactly one blocks the `\\n\\n` token).

Limits: JSON arguments are flat objects whose properties appear in schema order, with at most one space after
`{`, `:` and `,` and before `}`; strings exclude control characters and square brackets, and allow only the
escapes \\" \\\\ \\b \\f \\n \\r \\t.

`json_grammar(model)` builds the same pair for a turn that is one JSON object shaped by a pydantic model (the
planner's and critic's calls): see the section at the end of this module for what it supports.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from offline_agent.errors import ConfigError, GrammarError
from offline_agent.literals import quoted

if TYPE_CHECKING:
    from pydantic import BaseModel

    from offline_agent.grounding import Grounding

_TOOL_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
_ACTION_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,31}$")
FINAL = "Final"  # the "tool" of a move that ends the step with `Final:` instead of `Action:`
PATH_PREFIX = "ActionPath: "
PATH_ARROW = " -> "
# The one form of "the documents do not say": a Final the grammar allows beside any answer, which the run records as
# an abstention (no answer), never as an answer string. Brackets: no span of what was read begins with one.
ABSTAIN = "[not in the documents]"
_SCHEMA_TYPES = ("string", "integer", "number", "boolean")


@dataclass(frozen=True)
class ToolSpec:
    """What the grammar needs to know about a tool: its name and the shape of its argument.

    `schema` None means a plain one-line text argument (`search[Ed Wood]`); otherwise a JSON Schema object whose
    properties are all required (`calculator[{"expression": "3*7"}]`).
    """

    name: str
    description: str = ""
    schema: dict[str, Any] | None = None
    example: str = ""

    def __hash__(self) -> int:
        return hash((self.name, self.description, json.dumps(self.schema, sort_keys=True), self.example))

    def __post_init__(self) -> None:
        if not _TOOL_NAME.match(self.name):
            raise ConfigError(f"bad tool name {self.name!r}: use lowercase letters, digits and _")
        if self.schema is not None:
            _check_schema(self.name, self.schema)


@dataclass(frozen=True)
class GrammarSpec:
    """Which step shapes one model turn may take, and the bounds on its free text (in characters).

    With `action_path` set (KnowAgent's action graph), the step opens with a line the grammar writes itself,
    `ActionPath: <action_path joined by " -> "> -> `, followed by one branch per move in `next_actions`: the
    move's name, a line break, the Thought, then the move's own tool call (or `Final:` for a move whose tool is
    FINAL). The chosen move and the tool line therefore always agree.
    """

    tools: tuple[ToolSpec, ...] = ()
    thought: bool = True
    allow_action: bool = True
    allow_final: bool = True
    allowed_tools: tuple[str, ...] | None = None
    thought_max: int = 300
    argument_max: int = 120
    final_max: int = 200
    string_max: int = 120
    action_path: tuple[str, ...] | None = None
    next_actions: tuple[tuple[str, str], ...] = ()  # (move name, tool name or FINAL), in the order offered
    # The Final may only be a span of what the run has read, or yes/no (grounding.py): the GBNF is built from a
    # Grounding handed to build_grammar, the Lark grammar leaves the line free and the parser checks the span.
    grounded: bool = False
    # Whether a grounded Final may also be ABSTAIN (a free Final line may always be): the strategies' `abstain`
    # option; never for a call that must read an answer off one document (verify's read_off).
    abstain: bool = False
    # Plain-text tools whose argument may only be a span of what the run has read, as a grounded Final is (the
    # strategies' `search_spans`): a search then looks for a name the run has read, never one a Thought made up.
    # The GBNF is built from a Grounding of its own (`reading`, handed to build_grammar); the parser checks it.
    span_arguments: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        names = [tool.name for tool in self.tools]
        if len(set(names)) != len(names):
            raise ConfigError(f"duplicate tool names in {names}")
        if self.allowed_tools is not None:
            unknown = sorted(set(self.allowed_tools) - set(names))
            if unknown:
                raise ConfigError(f"unknown tools {unknown}; choose from {sorted(names)}")
        if not (self.allow_final or (self.allow_action and self.callable_tools)):
            raise ConfigError("a step must allow Final or at least one tool")
        for name in ("thought_max", "argument_max", "final_max", "string_max"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1")
        if self.action_path is not None or self.next_actions:
            _check_moves(self)

    @property
    def callable_tools(self) -> tuple[ToolSpec, ...]:
        if not self.allow_action:
            return ()
        if self.allowed_tools is None:
            return self.tools
        return tuple(tool for tool in self.tools if tool.name in self.allowed_tools)

    def final_only(self) -> GrammarSpec:
        """The same spec restricted to a Final answer (the last allowed step); an action path keeps its Final moves."""
        return GrammarSpec(
            tools=self.tools,
            thought=self.thought,
            allow_action=False,
            allow_final=True,
            thought_max=self.thought_max,
            argument_max=self.argument_max,
            final_max=self.final_max,
            string_max=self.string_max,
            action_path=self.action_path,
            next_actions=tuple(move for move in self.next_actions if move[1] == FINAL),
            grounded=self.grounded,
            abstain=self.abstain,
            span_arguments=self.span_arguments,
        )

    @property
    def path_prefix(self) -> str:
        """The text the grammar writes before the next move's name ("" without an action path)."""
        if self.action_path is None:
            return ""
        return PATH_PREFIX + "".join(action + PATH_ARROW for action in self.action_path)


@dataclass(frozen=True)
class StepGrammar:
    """The pair of grammars for one spec, and a hash that identifies them in a trajectory."""

    spec: GrammarSpec
    gbnf: str
    lark: str
    sha256: str = field(default="")
    # The decoder's grammar in llguidance's Lark dialect, when it differs from `lark` and GBNF would be slow to
    # hand to llguidance: a grounded step (thousands of span rules: llguidance converts GBNF of that size in
    # hundreds of milliseconds, its own Lark in well under one). Engines that read GBNF use `gbnf`.
    llguidance: str | None = None
    # What a grounded step's Final was built from (None: not grounded): the parser checks the Final against it.
    grounding: Grounding | None = field(default=None, compare=False, repr=False)
    # What the span arguments were built from (None: the spec has none): the parser checks them against it.
    reading: Grounding | None = field(default=None, compare=False, repr=False)


def build_grammar(
    spec: GrammarSpec,
    grounding: Grounding | None = None,
    spent: Mapping[str, Collection[str]] | None = None,
    reading: Grounding | None = None,
) -> StepGrammar:
    """Build the GBNF and Lark grammars of one step from `spec`.

    A grounded spec's Final is built from `grounding` (the spans read so far; None: nothing read yet, so only
    yes or no). The argument of a tool in `spec.span_arguments` is a span of `reading` (everything read, the
    question included, with no answer excluded); without `reading`, or with nothing in it, a free line. `spent`
    maps a plain-text tool to arguments it may not be called with (calls the run has made and would only refuse as
    repeats); they are compared as the loop compares calls, case and spacing ignored. Only
    the decoder's grammars (GBNF, llguidance's Lark) leave them out; the parser's Lark accepts them, and the loop
    refuses a repeat that slips through another way.
    """
    given = grounding if spec.grounded else None
    if spec.grounded and grounding is None:
        from offline_agent.grounding import Grounding

        grounding = Grounding()
    spent = {tool: tuple(args) for tool, args in (spent or {}).items() if args}
    if not spec.span_arguments or (reading is not None and not len(reading)):
        reading = None
    gbnf = _render(spec, "gbnf", grounding, spent, reading)
    lark = _render(spec, "lark", parser=True)
    decoder = _render(spec, "lark", grounding, spent, reading) if spec.grounded or spent or reading else None
    digest = hashlib.sha256((gbnf + "\0" + lark).encode("utf-8")).hexdigest()
    return StepGrammar(
        spec=spec, gbnf=gbnf, lark=lark, sha256=digest, llguidance=decoder, grounding=given, reading=reading
    )


# --- one walk, two dialects -------------------------------------------------------------------------------------

# Character classes shared by both dialects (both read \n, \[ and \] inside a class the same way).
_TEXT_FIRST = r"^ \n"
_TEXT_REST = r"^\n"
_ARG_FIRST = r"^ \n\[\]"
_ARG_REST = r"^\n\[\]"
_JSON_CHAR = r'^"\\\x00-\x1f\[\]'
_DIGITS = 15


class _Writer:
    """Collects the rules of one grammar in one dialect ("gbnf" or "lark").

    GBNF has no terminals, so what Lark declares as a terminal (a regex) GBNF writes as a rule of the same shape.
    """

    def __init__(self, dialect: str) -> None:
        self.dialect = dialect
        self.rules: list[tuple[str, str]] = []
        self.terminals: list[tuple[str, str]] = []

    @property
    def is_lark(self) -> bool:
        return self.dialect == "lark"

    def literal(self, text: str) -> str:
        return quoted(text)

    def optional(self, body: str) -> str:
        if self.is_lark:
            return f"[{body}]"
        return f"({body})?"

    def rule(self, rule_id: str, body: str) -> str:
        name = rule_id if self.is_lark else rule_id.replace("_", "-")
        self.rules.append((name, body))
        return name

    def terminal(self, rule_id: str, regex: str, gbnf_body: str) -> str:
        if self.is_lark:
            name = rule_id.upper()
            self.terminals.append((name, f"/{regex}/"))
            return name
        return self.rule(rule_id, gbnf_body)

    def line(self, rule_id: str, first: str, rest: str, maximum: int) -> str:
        """A bounded run of text: one character of class `first`, then up to maximum-1 of class `rest`."""
        tail = f"[{rest}]{{0,{maximum - 1}}}" if maximum > 1 else ""
        gbnf = f"[{first}] {tail}".strip()
        return self.terminal(rule_id, f"[{first}]{tail}", gbnf)

    def text(self, root_body: str) -> str:
        root = "start" if self.is_lark else "root"
        define = "{}: {}" if self.is_lark else "{} ::= {}"
        lines = [define.format(root, root_body)]
        lines += [define.format(name, body) for name, body in self.rules]
        lines += [f"{name}: {pattern}" for name, pattern in self.terminals]
        return "\n".join(lines) + "\n"


def _render(
    spec: GrammarSpec,
    dialect: str,
    grounding: Grounding | None = None,
    spent: Mapping[str, tuple[str, ...]] | None = None,
    reading: Grounding | None = None,
    parser: bool = False,
) -> str:
    w = _Writer(dialect)
    newline = w.literal("\n")
    line_break = w.rule("nl", f"{newline} {w.optional(newline)}")
    step_end = w.rule("end", w.optional(f"{newline} {w.optional(newline)}"))
    arguments = _Arguments(w, spec, spent or {}, reading, parser)
    if spec.action_path is not None:
        return _render_moves(w, spec, line_break, step_end, arguments, grounding)

    parts: list[str] = []
    if spec.thought:
        thought_text = w.line("thought_text", _TEXT_FIRST, _TEXT_REST, spec.thought_max)
        parts.append(w.rule("thought", f"{w.literal('Thought: ')} {thought_text} {line_break}"))

    choices: list[str] = []
    tools = spec.callable_tools
    if tools:
        calls = []
        for tool in tools:
            inner = arguments.of(tool)
            calls.append(w.rule(f"call_{tool.name}", f"{w.literal(tool.name + '[')} {inner} {w.literal(']')}"))
        call = w.rule("call", " | ".join(calls))
        choices.append(w.rule("action", f"{w.literal('Action: ')} {call} {step_end}"))
    if spec.allow_final:
        final_text = _final_text(w, spec, grounding)
        choices.append(w.rule("final", f"{w.literal('Final: ')} {final_text} {step_end}"))

    ending = choices[0] if len(choices) == 1 else f"({' | '.join(choices)})"
    return w.text(" ".join([*parts, ending]))


def _final_text(w: _Writer, spec: GrammarSpec, grounding: Grounding | None) -> str:
    """The answer after `Final: `: a bounded line; for a grounded spec, the spans of `grounding` (the decoder's
    GBNF and llguidance Lark), or without it an unbounded line that the parser checks against the evidence."""
    if not spec.grounded:
        return w.line("final_text", _TEXT_FIRST, _TEXT_REST, spec.final_max)
    if grounding is None:  # the parser's Lark grammar: any line; the parser checks the span itself
        return w.terminal("final_text", f"[{_TEXT_FIRST}][{_TEXT_REST}]*", "")
    start, rules = grounding.gbnf_rules("span_" if w.is_lark else "span-")
    w.rules.extend(rules)
    if not spec.abstain:
        return start
    return w.rule("answer", f"{w.literal(ABSTAIN)} | {start}")


def _render_moves(
    w: _Writer,
    spec: GrammarSpec,
    line_break: str,
    step_end: str,
    arguments: _Arguments,
    grounding: Grounding | None = None,
) -> str:
    """An action-path step: the forced `ActionPath: ... -> ` text, then one branch per allowed move."""
    thought = None
    if spec.thought:
        thought_text = w.line("thought_text", _TEXT_FIRST, _TEXT_REST, spec.thought_max)
        thought = w.rule("thought", f"{w.literal('Thought: ')} {thought_text} {line_break}")
    tools = {tool.name: tool for tool in spec.tools}
    calls: dict[str, str] = {}  # tool -> its call rule, written once even when two moves share a tool
    final = None
    branches = []
    for number, (name, tool_name) in enumerate(spec.next_actions, start=1):
        if tool_name == FINAL:
            if final is None:
                final_text = _final_text(w, spec, grounding)
                final = w.rule("final", f"{w.literal('Final: ')} {final_text} {step_end}")
            ending = final
        else:
            if tool_name not in calls:
                inner = arguments.of(tools[tool_name])
                calls[tool_name] = w.rule(f"call_{tool_name}", f"{w.literal(tool_name + '[')} {inner} {w.literal(']')}")
            ending = f"{w.literal('Action: ')} {calls[tool_name]} {step_end}"
        body = [w.literal(name), line_break, *([thought] if thought else []), ending]
        branches.append(w.rule(f"move_{number}", " ".join(body)))
    choice = branches[0] if len(branches) == 1 else f"({' | '.join(branches)})"
    return w.text(f"{w.literal(spec.path_prefix)} {choice}")


class _Arguments:
    """The argument rule of each tool call in one grammar: a JSON object for a tool with a schema; for a plain-text
    tool, one bounded line shared by every such tool, or a line that is none of the tool's spent arguments; for a
    tool of `spec.span_arguments`, given what was read, the spans of `reading` (a spent one may be written: the
    loop refuses the repeat); in the parser's grammar, any line (the parser checks the span)."""

    def __init__(
        self,
        w: _Writer,
        spec: GrammarSpec,
        spent: Mapping[str, tuple[str, ...]],
        reading: Grounding | None = None,
        parser: bool = False,
    ) -> None:
        self.w, self.spec, self.spent, self.reading, self.parser = w, spec, spent, reading, parser
        self.shared: str | None = None
        self.spans: str | None = None

    def of(self, tool: ToolSpec) -> str:
        if tool.schema is not None:
            return _json_object(self.w, tool, self.spec)
        if self.reading is not None and tool.name in self.spec.span_arguments:
            if self.spans is None:
                start, rules = self.reading.gbnf_rules("read_" if self.w.is_lark else "read-")
                self.w.rules.extend(rules)
                self.spans = start
            return self.spans
        if self.parser and tool.name in self.spec.span_arguments:
            if self.spans is None:
                self.spans = self.w.terminal("read_argument", f"[{_ARG_FIRST}][{_ARG_REST}]*", "")
            return self.spans
        if self.spent.get(tool.name):
            return _line_except(self.w, f"argument_{tool.name}", self.spec.argument_max, self.spent[tool.name])
        if self.shared is None:
            self.shared = self.w.line("argument", _ARG_FIRST, _ARG_REST, self.spec.argument_max)
        return self.shared


def _line_except(w: _Writer, rule_id: str, maximum: int, spent: Iterable[str]) -> str:
    """An argument line (as `_Writer.line` with _ARG_FIRST / _ARG_REST) that, with case and runs of spaces ignored
    and stripped, is none of `spent`. Returns the rule's name.

    The spent texts go into a character trie (lower case, single spaces); each trie node is a rule whose
    alternatives are: end here (unless the text so far is spent), go on with a child's character (either case),
    or leave the trie with any other character and then write freely. Leaving from a spent text with a space must
    still end on a non-space (a trailing space is the same call); after a space inside the trie, no second space
    may follow (a doubled space may be the same call; a model has no use for one). Every alternative starts with
    a different character, so the choice is made on the first one, which keeps llguidance's lexer deterministic."""
    trie: dict[str, dict] = {}
    for text in spent:
        words = " ".join(text.lower().split())
        if any(char in "[]" for char in words) or len(words) > maximum:
            continue  # an argument cannot be written this way anyway
        node = trie
        for char in words:
            node = node.setdefault(char, {})
        node[""] = {}  # a spent text ends here
    names = iter(range(1_000_000))

    def visit(node: dict[str, dict], depth: int, spent_here: bool, after_space: bool) -> str | None:
        # spent_here: the text so far, stripped, is spent (it is, or a spent text followed by spaces). None: the
        # node has no way on (a spent text of the longest length an argument may have).
        name = f"{rule_id}_{next(names)}"
        left = maximum - depth  # characters this line may still take
        children = sorted(c for c in node if c)
        others = "".join(_cased(c) for c in children)
        alternatives = []
        if depth > 0 and not spent_here:
            alternatives.append('""')
        if left >= 1:
            if after_space or spent_here:
                others += " "
            if spent_here and not after_space and " " not in children and left >= 2:
                tail = f"[{_ARG_REST}]{{0,{left - 2}}}[{_ARG_FIRST}]"
                alternatives.append(w.terminal(f"{name}_space", f" {tail}", f'" " {tail}'))
            first = _ARG_FIRST if depth == 0 else _ARG_REST
            leave = f"[{first}{_class_text(others, w.is_lark)}]"
            tail = f"[{_ARG_REST}]{{0,{left - 1}}}" if left > 1 else ""
            alternatives.append(w.terminal(f"{name}_out", f"{leave}{tail}", f"{leave} {tail}".strip()))
            for number, char in enumerate(children):
                inner = visit(node[char], depth + 1, "" in node[char] or (char == " " and spent_here), char == " ")
                if inner is not None:
                    cased = f"[{_class_text(_cased(char), w.is_lark)}]"
                    alternatives.append(f"{w.terminal(f'{name}_char{number}', cased, cased)} {inner}")
        return w.rule(name, " | ".join(alternatives)) if alternatives else None

    start = visit(trie, 0, False, False)
    assert start is not None  # the root always has a way out: an argument may be up to `maximum` characters long
    return start


def _cased(char: str) -> str:
    """`char` in both cases (one character each way, else as it is)."""
    both = {char, char.lower(), char.upper()}
    return "".join(sorted(c for c in both if len(c) == 1))


def _class_text(chars: str, is_lark: bool) -> str:
    """`chars` written inside a character class: letters, digits and spaces as they are, the rest escaped by code
    point (`\\x{..}` in llguidance's regexes, `\\xHH` / `\\uHHHH` in GBNF)."""
    out = []
    for char in chars:
        if char.isalnum() or char == " ":
            out.append(char)
        elif is_lark:
            out.append(f"\\x{{{ord(char):x}}}")
        else:
            out.append(f"\\x{ord(char):02X}" if ord(char) < 0x100 else f"\\u{ord(char):04X}")
    return "".join(out)


def _check_moves(spec: GrammarSpec) -> None:
    """An action path needs at least one move, and every move a tool the step may call (or Final)."""
    if spec.action_path is None:
        raise ConfigError("next_actions needs an action_path (the path so far, e.g. ('Start',))")
    if not spec.action_path:
        raise ConfigError("the action path must hold at least the action it starts from")
    if not spec.next_actions:
        raise ConfigError("an action path needs at least one allowed next action")
    names = [name for name, _ in spec.next_actions]
    if len(set(names)) != len(names):
        raise ConfigError(f"duplicate next actions in {names}")
    for name in (*spec.action_path, *names):
        if not _ACTION_NAME.match(name):
            raise ConfigError(f"bad action name {name!r}: use letters, digits and _, starting with a letter")
    callable_tools = {tool.name for tool in spec.callable_tools}
    for name, tool in spec.next_actions:
        if tool == FINAL:
            if not spec.allow_final:
                raise ConfigError(f"action {name!r} gives the Final answer, which this step does not allow")
        elif tool not in callable_tools:
            raise ConfigError(f"action {name!r} calls {tool!r}, which this step cannot call")


def _json_object(w: _Writer, tool: ToolSpec, spec: GrammarSpec) -> str:
    """A flat JSON object with the schema's properties in order; returns the rule's name."""
    assert tool.schema is not None
    spaces = iter(range(1, 1000))

    def space() -> str:
        # A rule of its own at each place: inline optionals multiply Lark's alternatives (2^n per object), and
        # one shared rule would merge what may follow it, letting a JSON string swallow the next key.
        return w.rule(f"json_{tool.name}_sp{next(spaces)}", w.optional(w.literal(" ")))

    parts = [w.literal("{"), space()]
    for position, (key, prop) in enumerate(tool.schema["properties"].items()):
        if position:
            parts += [w.literal(","), space()]
        parts += [w.literal(json.dumps(key) + ":"), space(), _json_value(w, tool.name, key, prop, spec)]
    parts += [space(), w.literal("}")]
    return w.rule(f"json_{tool.name}", " ".join(parts))


def _json_value(w: _Writer, tool: str, key: str, prop: dict[str, Any], spec: GrammarSpec) -> str:
    rule_id = f"json_{tool}_{key}"
    if "enum" in prop:
        return w.rule(rule_id, " | ".join(w.literal(json.dumps(value)) for value in prop["enum"]))
    kind = prop["type"]
    if kind == "boolean":
        return w.rule(rule_id, f"{w.literal('true')} | {w.literal('false')}")
    if kind == "string":
        maximum = int(prop.get("maxLength", spec.string_max))
        regex = f'"([{_JSON_CHAR}]|\\\\["\\\\bfnrt]){{0,{maximum}}}"'
        gbnf = f'"\\"" ([{_JSON_CHAR}] | "\\\\" ["\\\\bfnrt]){{0,{maximum}}} "\\""'
        return w.terminal(rule_id, regex, gbnf)
    fraction_regex = f"(\\.[0-9]{{1,{_DIGITS}}})?" if kind == "number" else ""
    fraction_gbnf = f' ("." [0-9]{{1,{_DIGITS}}})?' if kind == "number" else ""
    return w.terminal(rule_id, f"-?[0-9]{{1,{_DIGITS}}}{fraction_regex}", f'"-"? [0-9]{{1,{_DIGITS}}}{fraction_gbnf}')


def _check_schema(tool: str, schema: dict[str, Any]) -> None:
    if schema.get("type") != "object" or not isinstance(schema.get("properties"), dict) or not schema["properties"]:
        raise ConfigError(f"tool {tool!r}: the argument schema must be an object with properties")
    for key, prop in schema["properties"].items():
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]{0,31}$", key):
            raise ConfigError(f"tool {tool!r}: bad property name {key!r}")
        if "enum" in prop:
            if not prop["enum"] or not all(isinstance(v, (str, int, bool)) for v in prop["enum"]):
                raise ConfigError(f"tool {tool!r}: property {key!r} needs a non-empty enum of scalars")
        elif prop.get("type") not in _SCHEMA_TYPES:
            raise ConfigError(f"tool {tool!r}: property {key!r} must have a type in {list(_SCHEMA_TYPES)}")


def check_json_argument(tool: ToolSpec, value: Any) -> dict[str, Any]:
    """Validate a decoded JSON argument against the tool's schema; return it or raise ValueError."""
    assert tool.schema is not None
    if not isinstance(value, dict):
        raise ValueError("the argument must be a JSON object")
    properties = tool.schema["properties"]
    if list(value) != list(properties):
        raise ValueError(f"the argument must have exactly the keys {list(properties)}")
    for key, prop in properties.items():
        item = value[key]
        if "enum" in prop:
            if item not in prop["enum"]:
                raise ValueError(f"{key} must be one of {prop['enum']}")
            continue
        expected = {"string": str, "integer": int, "number": (int, float), "boolean": bool}[prop["type"]]
        if not isinstance(item, expected) or (prop["type"] != "boolean" and isinstance(item, bool)):
            raise ValueError(f"{key} must be a {prop['type']}")
    return value


# --- checking a string against the GBNF (llguidance) ------------------------------------------------------------


class GbnfChecker:
    """Checks whole strings against a GBNF grammar with llguidance, byte by byte, without a model.

    Used by tests (the Lark and GBNF grammars accept the same strings) and by `grammar check --gbnf`.
    """

    def __init__(self, gbnf: str) -> None:
        try:
            import llguidance
        except ImportError as exc:  # pragma: no cover - llguidance is a core dependency
            raise GrammarError("checking a GBNF grammar needs llguidance: pip install llguidance") from exc
        self._llg = llguidance
        self._tokenizer = llguidance.LLTokenizer(llguidance.TokenizerWrapper(_ByteTokenizer()))
        try:
            self._grammar = llguidance.grammar_from("gbnf", gbnf)
        except ValueError as exc:
            raise GrammarError(f"the GBNF grammar does not compile: {exc}") from exc
        probe = llguidance.LLMatcher(self._tokenizer, self._grammar, log_level=0)
        if probe.is_error():
            raise GrammarError(f"the GBNF grammar does not compile: {probe.get_error()}")

    def accepts(self, text: str) -> bool:
        """True if the grammar accepts exactly `text` (a complete string, not a prefix)."""
        matcher = self._walk(text)
        return matcher is not None and matcher.is_accepting()

    def is_prefix(self, text: str) -> bool:
        """True if `text` can be continued into a string the grammar accepts (a cut-off step)."""
        return self._walk(text) is not None

    def _walk(self, text: str) -> Any:
        matcher = self._llg.LLMatcher(self._tokenizer, self._grammar, log_level=0)
        for byte in text.encode("utf-8"):
            if not matcher.consume_token(byte):
                return None
        return matcher


class _ByteTokenizer:
    """A vocabulary of the 256 bytes plus an end token, so llguidance can walk any string."""

    eos_token_id = 256
    bos_token_id = None

    def __init__(self) -> None:
        self.tokens = [bytes([i]) for i in range(256)] + [b"<eos>"]
        self.special_token_ids = [256]

    def __call__(self, data: bytes | str) -> list[int]:
        return list(data.encode("utf-8") if isinstance(data, str) else data)


# --- a whole turn that is one JSON object, from a pydantic model --------------------------------------------------
#
# What `json_grammar` supports, per field of the model (and of nested models, whose $ref are resolved):
# strings (`max_length`, else `string_max`), integers, numbers, booleans, enums and Literals of strings or integers,
# nested models, and lists of any of these (`max_length` / `min_length`, else at most `array_max` items). Every
# property is required and written in the model's field order (a field with a default is still required).
# Refused with a ConfigError naming the field: Optional and other unions, dicts, tuples, sets, recursive models,
# and constraints the grammar cannot hold (pattern, min_length on strings, numeric bounds, formats).
#
# The layout follows the step grammar's JSON: at most one space after `{ [ : ,` and before `} ]`, the turn may end
# with up to two newlines, and strings allow the escapes \" \\ \b \f \n \r \t but no \u and no raw control
# characters. Two differences, because this JSON is a whole turn rather than an argument inside `tool[...]`:
# strings may hold square brackets (facts copied from documents do), and integers have no leading zeros, so every
# text the grammar accepts is valid JSON.

_TURN_JSON_CHAR = r'^"\\\x00-\x1f'
_SCHEMA_NOTES = frozenset({"title", "description", "default", "examples"})
_SCHEMA_KEYS = {
    "object": frozenset({"type", "properties", "required", "additionalProperties"}),
    "array": frozenset({"type", "items", "maxItems", "minItems"}),
    "string": frozenset({"type", "maxLength"}),
    "integer": frozenset({"type"}),
    "number": frozenset({"type"}),
    "boolean": frozenset({"type"}),
    "enum": frozenset({"type", "enum", "const"}),
}


@dataclass(frozen=True)
class JsonGrammar:
    """GBNF + Lark for one model turn that is a single JSON object matching a schema."""

    model: type[BaseModel]
    schema: dict[str, Any]  # the flattened schema the grammar was built from
    gbnf: str
    lark: str
    sha256: str

    def __hash__(self) -> int:
        return hash((self.model, self.sha256))


def json_grammar(model: type[BaseModel], *, string_max: int = 200, array_max: int = 8) -> JsonGrammar:
    """The grammar pair of a turn that is one JSON object of `model`'s shape; built once per model and bounds.

    `string_max` bounds strings without a `max_length`, `array_max` lists without one. Raises ConfigError, naming
    the field, for a shape the grammar cannot express.
    """
    if string_max < 1 or array_max < 1:
        raise ConfigError("string_max and array_max must be at least 1")
    return _cached_json_grammar(model, string_max, array_max)


@lru_cache(maxsize=128)
def _cached_json_grammar(model: type[BaseModel], string_max: int, array_max: int) -> JsonGrammar:
    name = getattr(model, "__name__", "model")
    try:
        raw = model.model_json_schema()
    except Exception as exc:  # pydantic's own refusal (a field type with no JSON Schema)
        raise ConfigError(f"{name}: no JSON Schema for this model: {exc}") from exc
    schema = _flatten(raw, raw.get("$defs", {}), name, (), string_max, array_max)
    if schema.get("type") != "object":
        raise ConfigError(f"{name}: a JSON turn must be an object")
    gbnf = _render_json_turn(schema, "gbnf")
    lark = _render_json_turn(schema, "lark")
    digest = hashlib.sha256((gbnf + "\0" + lark).encode("utf-8")).hexdigest()
    return JsonGrammar(model=model, schema=schema, gbnf=gbnf, lark=lark, sha256=digest)


def _flatten(
    node: dict[str, Any], defs: dict[str, Any], where: str, refs: tuple[str, ...], string_max: int, array_max: int
) -> dict[str, Any]:
    """Resolve $ref, check the node is supported, and return it with every bound made explicit."""
    node = {key: value for key, value in node.items() if key not in _SCHEMA_NOTES and key != "$defs"}
    if "allOf" in node and len(node["allOf"]) == 1:  # how some pydantic versions wrap a $ref with a description
        node = {**node.pop("allOf")[0], **node}
    if "$ref" in node:
        ref = node.pop("$ref")
        target = ref.rsplit("/", 1)[-1]
        if not ref.startswith("#/$defs/") or target not in defs:
            raise ConfigError(f"{where}: cannot resolve the reference {ref!r}")
        if target in refs:
            raise ConfigError(f"{where}: recursive models are not supported ({' -> '.join([*refs, target])})")
        resolved = {**defs[target], **node}
        return _flatten(resolved, defs, where, (*refs, target), string_max, array_max)
    for keyword in ("anyOf", "oneOf", "allOf", "prefixItems", "additionalProperties"):
        if keyword in node and not (keyword == "additionalProperties" and node[keyword] is False):
            kind = {"anyOf": "a union or Optional", "oneOf": "a union", "allOf": "an intersection"}.get(
                keyword, "a tuple" if keyword == "prefixItems" else "a dict"
            )
            raise ConfigError(f"{where}: {kind} is not supported in a JSON turn grammar")
    if "const" in node:
        node = {**node, "enum": [node.pop("const")]}
    kind = "enum" if "enum" in node else node.get("type")
    if kind not in _SCHEMA_KEYS:
        raise ConfigError(f"{where}: type {node.get('type')!r} is not supported in a JSON turn grammar")
    unsupported = sorted(set(node) - _SCHEMA_KEYS[kind])
    if unsupported:
        raise ConfigError(f"{where}: the grammar cannot hold the constraint(s) {unsupported}")
    if kind == "enum":
        values = node["enum"]
        if not values or not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in values):
            raise ConfigError(f"{where}: an enum must hold strings or integers")
        return {"enum": list(values)}
    if kind == "string":
        return {"type": "string", "maxLength": _bound(node.get("maxLength", string_max), where)}
    if kind == "array":
        if "items" not in node:
            raise ConfigError(f"{where}: a list needs an item type")
        maximum = _bound(node.get("maxItems", array_max), where)
        minimum = _bound(node.get("minItems", 0), where)
        if minimum > maximum:
            raise ConfigError(f"{where}: min_length {minimum} is over max_length {maximum}")
        items = _flatten(node["items"], defs, f"{where}[]", refs, string_max, array_max)
        return {"type": "array", "items": items, "minItems": minimum, "maxItems": maximum}
    if kind == "object":
        properties = node.get("properties")
        if not properties:
            raise ConfigError(f"{where}: an object needs at least one field")
        flat = {
            key: _flatten(value, defs, f"{where}.{key}", refs, string_max, array_max)
            for key, value in properties.items()
        }
        return {"type": "object", "properties": flat, "required": list(flat)}
    return {"type": kind}


def _bound(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigError(f"{where}: a length bound must be a non-negative integer, not {value!r}")
    return value


def _render_json_turn(schema: dict[str, Any], dialect: str) -> str:
    w = _Writer(dialect)
    names: set[str] = set()
    body = _json_turn_value(w, names, "json", schema)
    newline = w.literal("\n")
    end = w.rule("end", w.optional(f"{newline} {w.optional(newline)}"))
    return w.text(f"{body} {end}")


def _unique(names: set[str], rule_id: str) -> str:
    """A rule id not used yet in this grammar (field names that differ only in case or punctuation)."""
    candidate, number = rule_id, 1
    while candidate in names:
        number += 1
        candidate = f"{rule_id}{number}"
    names.add(candidate)
    return candidate


def _json_turn_value(w: _Writer, names: set[str], path: str, node: dict[str, Any]) -> str:
    """The rule (or terminal) for one value at `path`; returns its name."""
    rule_id = _unique(names, path)

    def space() -> str:
        # One rule per place, as in the step grammar's JSON: a shared one would merge what may follow it.
        return w.rule(_unique(names, f"{rule_id}_sp"), w.optional(w.literal(" ")))

    if "enum" in node:
        return w.rule(rule_id, " | ".join(w.literal(json.dumps(value)) for value in node["enum"]))
    kind = node["type"]
    if kind == "object":
        parts = [w.literal("{"), space()]
        for position, (key, child) in enumerate(node["properties"].items()):
            if position:
                parts += [w.literal(","), space()]
            key_id = re.sub(r"[^a-z0-9]+", "_", key.lower()).strip("_") or "field"
            value = _json_turn_value(w, names, f"{rule_id}_{key_id}", child)
            parts += [w.literal(json.dumps(key, ensure_ascii=False) + ":"), space(), value]
        parts += [space(), w.literal("}")]
        return w.rule(rule_id, " ".join(parts))
    if kind == "array":
        opening, closing = space(), None
        maximum, minimum = node["maxItems"], node["minItems"]
        if maximum == 0:
            return w.rule(rule_id, f"{w.literal('[')} {opening} {w.literal(']')}")
        item = _json_turn_value(w, names, f"{rule_id}_item", node["items"])
        separator = space()
        low, high = max(minimum - 1, 0), maximum - 1
        more = f"({w.literal(',')} {separator} {item})"
        if high:
            more += f" ~ {low}..{high}" if w.is_lark else f"{{{low},{high}}}"
        else:
            more = ""
        closing = space()
        items = f"{item} {more} {closing}".replace("  ", " ")
        if minimum == 0:
            items = w.optional(items)
        return w.rule(rule_id, f"{w.literal('[')} {opening} {items} {w.literal(']')}")
    if kind == "string":
        maximum = node["maxLength"]
        if maximum == 0:
            return w.rule(rule_id, w.literal('""'))
        regex = f'"([{_TURN_JSON_CHAR}]|\\\\["\\\\bfnrt]){{0,{maximum}}}"'
        gbnf = f'"\\"" ([{_TURN_JSON_CHAR}] | "\\\\" ["\\\\bfnrt]){{0,{maximum}}} "\\""'
        return w.terminal(rule_id, regex, gbnf)
    if kind == "boolean":
        return w.rule(rule_id, f"{w.literal('true')} | {w.literal('false')}")
    integer_regex = f"-?(0|[1-9][0-9]{{0,{_DIGITS - 1}}})"
    integer_gbnf = f'"-"? ("0" | [1-9] [0-9]{{0,{_DIGITS - 1}}})'
    if kind == "integer":
        return w.terminal(rule_id, integer_regex, integer_gbnf)
    fraction_regex = f"(\\.[0-9]{{1,{_DIGITS}}})?"
    fraction_gbnf = f'("." [0-9]{{1,{_DIGITS}}})?'
    return w.terminal(rule_id, integer_regex + fraction_regex, f"{integer_gbnf} {fraction_gbnf}")
