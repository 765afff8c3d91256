"""Checks one model turn against the step's Lark grammar and turns it into a typed Step.

The parser never guesses: text the grammar rejects raises StepParseError with a label, the line and column where
it failed and the context with a caret, and the agent loop records it. Labels:
`empty`, `truncated` (the text stops mid-step, e.g. cut off at max_tokens), `missing_thought`, `missing_action`,
`unknown_tool`, `too_long` (a field over its bound), `extra_text` (more after a complete step), `bad_argument`
(a JSON argument that does not fit the tool's schema), `invalid` (anything else).
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from lark import Lark, Token, Transformer
from lark.exceptions import (
    LarkError,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)

from offline_agent.errors import GrammarError, StepParseError
from offline_agent.grammar import GbnfChecker, GrammarSpec, StepGrammar, build_grammar, check_json_argument
from offline_agent.steps import Action, Step


class _StepTransformer(Transformer):
    """Methods named after the grammar's rules; each returns the value of its subtree."""

    def __init__(self, spec: GrammarSpec) -> None:
        super().__init__()
        self._tools = {tool.name: tool for tool in spec.tools}

    def start(self, children: list[Any]) -> Step:
        thought = next((c[1] for c in children if isinstance(c, tuple) and c[0] == "thought"), None)
        action = next((c for c in children if isinstance(c, Action)), None)
        final = next((c[1] for c in children if isinstance(c, tuple) and c[0] == "final"), None)
        return Step(thought=thought, action=action, final=final)

    def thought(self, children: list[Any]) -> tuple[str, str]:
        return ("thought", _text(children))

    def final(self, children: list[Any]) -> tuple[str, str]:
        return ("final", _text(children))

    def action(self, children: list[Any]) -> Action:
        return next(c for c in children if isinstance(c, Action))

    def call(self, children: list[Any]) -> Action:
        return children[0]

    def __default__(self, data: str, children: list[Any], meta: Any) -> Any:
        if data.startswith("call_"):
            return self._call(data[len("call_") :], children)
        if data.startswith("json_"):
            return ("json", "".join(_raw(c) for c in children))
        return children

    def _call(self, tool: str, children: list[Any]) -> Action:
        spec = self._tools[tool]
        if spec.schema is None:
            argument = next(str(c) for c in children if isinstance(c, Token) and c.type == "ARGUMENT")
            return Action(tool, argument.strip())
        raw = next(c[1] for c in children if isinstance(c, tuple) and c[0] == "json")
        try:
            value = check_json_argument(spec, json.loads(raw))
        except (ValueError, json.JSONDecodeError) as exc:
            raise _ArgumentError(f"bad argument for {tool}: {exc}") from exc
        return Action(tool, value)


class _ArgumentError(Exception):
    pass


def _text(children: list[Any]) -> str:
    return next(str(c) for c in children if isinstance(c, Token) and c.type.endswith("_TEXT")).strip()


def _raw(node: Any) -> str:
    if isinstance(node, Token):
        return str(node)
    if isinstance(node, tuple):
        return node[1]
    if isinstance(node, list):
        return "".join(_raw(child) for child in node)
    return "".join(_raw(child) for child in getattr(node, "children", []))


class StepParser:
    """Parses step texts for one grammar spec (LALR, so each parse is linear in the text)."""

    def __init__(self, grammar: StepGrammar | GrammarSpec) -> None:
        self.grammar = grammar if isinstance(grammar, StepGrammar) else build_grammar(grammar)
        self.spec = self.grammar.spec
        try:
            self._lark = Lark(self.grammar.lark, parser="lalr", lexer="contextual", keep_all_tokens=True)
        except LarkError as exc:
            raise GrammarError(f"the step grammar does not compile: {exc}") from exc
        self._transformer = _StepTransformer(self.spec)
        self._checker: GbnfChecker | None = None

    def parse(self, text: str) -> Step:
        """Parse one complete step; raise StepParseError (labelled, with position) if the grammar rejects it."""
        if not text.strip():
            raise StepParseError("empty step: the model wrote nothing", label="empty", line=1, column=1)
        try:
            tree = self._lark.parse(text)
        except UnexpectedInput as exc:
            raise self._error(text, exc) from None
        try:
            return self._transformer.transform(tree)
        except VisitError as exc:
            if not isinstance(exc.orig_exc, _ArgumentError):
                raise
            raise StepParseError(str(exc.orig_exc), label="bad_argument", line=1, column=1) from None

    def accepts(self, text: str) -> bool:
        try:
            self.parse(text)
        except StepParseError:
            return False
        return True

    def _error(self, text: str, exc: UnexpectedInput) -> StepParseError:
        position = getattr(exc, "pos_in_stream", None) or 0
        line = getattr(exc, "line", 1) or 1
        column = getattr(exc, "column", 1) or 1
        try:
            context = exc.get_context(text, span=30)
        except Exception:  # get_context needs a position; an EOF error may have none
            context = text[-60:]
        label, reason = self._label(text, exc, position)
        where = f"line {line}, column {column}"
        return StepParseError(f"{reason} at {where}", label=label, line=line, column=column, context=context)

    def _is_cut_off(self, text: str, exc: UnexpectedInput) -> bool:
        if isinstance(exc, UnexpectedEOF) or (isinstance(exc, UnexpectedToken) and exc.token.type == "$END"):
            return True
        # The GBNF accepts the same language; walking it tells whether the text is a prefix of a valid step.
        if self._checker is None:
            self._checker = GbnfChecker(self.grammar.gbnf)
        return self._checker.is_prefix(text)

    def _label(self, text: str, exc: UnexpectedInput, position: int) -> tuple[str, str]:
        if self._is_cut_off(text, exc):
            return "truncated", "the step stops before it is complete"
        head = text[:position]
        line_start = head.rfind("\n") + 1
        current = head[line_start:]
        if position == 0:
            if self.spec.thought:
                return "missing_thought", "the step must start with 'Thought: '"
            return "missing_action", "the step must start with 'Action: ' or 'Final: '"
        if current.startswith("Action: ") and "[" not in current:
            names = ", ".join(tool.name for tool in self.spec.callable_tools) or "none"
            return "unknown_tool", f"unknown or disallowed tool (tools: {names})"
        if self._is_complete(head):
            return "extra_text", "text after a complete step"
        if self._over_bound(current):
            return "too_long", "a field is longer than the grammar allows"
        if current.startswith("Action: "):
            return "bad_argument", "the argument does not fit the tool's argument grammar"
        if head.endswith("\n") and not (text[position:].startswith(("Action: ", "Final: "))):
            if self.spec.allow_action and not self.spec.allow_final:
                return "missing_action", "expected 'Action: '"
            return "missing_action", "expected 'Action: ' or 'Final: '"
        return "invalid", "the text does not fit the step grammar"

    def _is_complete(self, head: str) -> bool:
        try:
            self._lark.parse(head)
        except LarkError:
            return False
        return True

    def _over_bound(self, current: str) -> bool:
        spec = self.spec
        for prefix, bound in (("Thought: ", spec.thought_max), ("Final: ", spec.final_max)):
            if current.startswith(prefix):
                return len(current) - len(prefix) >= bound
        if current.startswith("Action: ") and "[" in current:
            return len(current) - current.index("[") - 1 >= spec.argument_max
        return False


@lru_cache(maxsize=64)
def parser_for(spec: GrammarSpec) -> StepParser:
    """A compiled parser per spec, built once and reused across steps and questions."""
    return StepParser(spec)
