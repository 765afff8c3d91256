"""Builds the grammar of one model turn twice from one spec: GBNF for the decoder, Lark for the parser.

Both texts come from the same `GrammarSpec` walk, rule for rule, so they accept the same language: the GBNF is
what llama.cpp (or llguidance) enforces while decoding, the Lark grammar is what `parse.py` checks afterwards.
What the spec controls:
- which tools may be called (an unknown tool cannot be produced) and each tool's argument: plain text, or a JSON
  object constrained by a small JSON Schema (string, integer, number, boolean and enum properties);
- whether a `Thought:` line comes first, whether `Action:` and/or `Final:` may follow (the last allowed step is
  Final only);
- bounds on every free-text field, so a small model cannot run on until max_tokens.

Layout details that were measured, not guessed: the step may end with up to two newlines (a grammar ending right
at `]` blocks a `]\\n` token and the model keeps writing), and a line break may be one or two newlines (requiring
exactly one blocks the `\\n\\n` token).

Limits: JSON arguments are flat objects whose properties appear in schema order, with at most one space after
`{`, `:` and `,` and before `}`; strings exclude control characters and square brackets, and allow only the
escapes \\" \\\\ \\b \\f \\n \\r \\t.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from offline_agent.errors import ConfigError, GrammarError

_TOOL_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
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
    """Which step shapes one model turn may take, and the bounds on its free text (in characters)."""

    tools: tuple[ToolSpec, ...] = ()
    thought: bool = True
    allow_action: bool = True
    allow_final: bool = True
    allowed_tools: tuple[str, ...] | None = None
    thought_max: int = 300
    argument_max: int = 120
    final_max: int = 200
    string_max: int = 120

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

    @property
    def callable_tools(self) -> tuple[ToolSpec, ...]:
        if not self.allow_action:
            return ()
        if self.allowed_tools is None:
            return self.tools
        return tuple(tool for tool in self.tools if tool.name in self.allowed_tools)

    def final_only(self) -> GrammarSpec:
        """The same spec restricted to a Final answer (the last allowed step)."""
        return GrammarSpec(
            tools=self.tools,
            thought=self.thought,
            allow_action=False,
            allow_final=True,
            thought_max=self.thought_max,
            argument_max=self.argument_max,
            final_max=self.final_max,
            string_max=self.string_max,
        )


@dataclass(frozen=True)
class StepGrammar:
    """The pair of grammars for one spec, and a hash that identifies them in a trajectory."""

    spec: GrammarSpec
    gbnf: str
    lark: str
    sha256: str = field(default="")


def build_grammar(spec: GrammarSpec) -> StepGrammar:
    """Build the GBNF and Lark grammars of one step from `spec`."""
    gbnf = _render(spec, "gbnf")
    lark = _render(spec, "lark")
    digest = hashlib.sha256((gbnf + "\0" + lark).encode("utf-8")).hexdigest()
    return StepGrammar(spec=spec, gbnf=gbnf, lark=lark, sha256=digest)


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
        return json.dumps(text, ensure_ascii=False)

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


def _render(spec: GrammarSpec, dialect: str) -> str:
    w = _Writer(dialect)
    newline = w.literal("\n")
    line_break = w.rule("nl", f"{newline} {w.optional(newline)}")
    step_end = w.rule("end", w.optional(f"{newline} {w.optional(newline)}"))

    parts: list[str] = []
    if spec.thought:
        thought_text = w.line("thought_text", _TEXT_FIRST, _TEXT_REST, spec.thought_max)
        parts.append(w.rule("thought", f"{w.literal('Thought: ')} {thought_text} {line_break}"))

    choices: list[str] = []
    tools = spec.callable_tools
    if tools:
        calls = []
        argument = None
        for tool in tools:
            if tool.schema is None:
                if argument is None:
                    argument = w.line("argument", _ARG_FIRST, _ARG_REST, spec.argument_max)
                inner = argument
            else:
                inner = _json_object(w, tool, spec)
            calls.append(w.rule(f"call_{tool.name}", f"{w.literal(tool.name + '[')} {inner} {w.literal(']')}"))
        call = w.rule("call", " | ".join(calls))
        choices.append(w.rule("action", f"{w.literal('Action: ')} {call} {step_end}"))
    if spec.allow_final:
        final_text = w.line("final_text", _TEXT_FIRST, _TEXT_REST, spec.final_max)
        choices.append(w.rule("final", f"{w.literal('Final: ')} {final_text} {step_end}"))

    ending = choices[0] if len(choices) == 1 else f"({' | '.join(choices)})"
    return w.text(" ".join([*parts, ending]))


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
