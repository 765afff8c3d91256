"""Checks one model turn against the step's Lark grammar and turns it into a typed Step.

The parser never guesses: text the grammar rejects raises StepParseError with a label, the line and column where
it failed and the context with a caret, and the agent loop records it. Labels:
`empty`, `truncated` (the text stops mid-step, e.g. cut off at max_tokens), `missing_thought`, `missing_action`,
`unknown_tool`, `too_long` (a field over its bound), `extra_text` (more after a complete step), `bad_argument`
(a JSON argument that does not fit the tool's schema), `invalid` (anything else). Steps with an ActionPath line
(KnowAgent) add `missing_path` (no `ActionPath:` line first) and `invalid_move` (a path other than the real one,
a move the action graph does not allow from there, or a tool line that does not carry out the chosen move).

`JsonParser` does the same for a turn that is one JSON object (`grammar.json_grammar`): it checks the text against
the Lark grammar (labels `empty`, `truncated`, `invalid`), then validates it with the pydantic model (`bad_argument`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from lark import Lark, Token, Transformer
from lark.exceptions import (
    LarkError,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)

from offline_agent.errors import GrammarError, StepParseError
from offline_agent.grammar import (
    ABSTAIN,
    FINAL,
    PATH_PREFIX,
    GbnfChecker,
    GrammarSpec,
    JsonGrammar,
    StepGrammar,
    build_grammar,
    check_json_argument,
)
from offline_agent.steps import Action, Step

if TYPE_CHECKING:
    from pydantic import BaseModel

    from offline_agent.grounding import Grounding


# The terminals of a plain-text argument: a bounded line, or (a tool of span_arguments) the line the parser checks.
_ARGUMENTS = ("ARGUMENT", "READ_ARGUMENT")


class _StepTransformer(Transformer):
    """Methods named after the grammar's rules; each returns the value of its subtree."""

    def __init__(self, spec: GrammarSpec) -> None:
        super().__init__()
        self._tools = {tool.name: tool for tool in spec.tools}
        self._path = spec.action_path

    def start(self, children: list[Any]) -> Step:
        move = next((c for c in children if isinstance(c, tuple) and c[0] == "move"), None)
        path = None
        if move is not None:  # an action-path step: the parts sit inside the chosen move's branch
            assert self._path is not None
            path = (*self._path, move[1])
            children = move[2]
        thought = next((c[1] for c in children if isinstance(c, tuple) and c[0] == "thought"), None)
        action = next((c for c in children if isinstance(c, Action)), None)
        final = next((c[1] for c in children if isinstance(c, tuple) and c[0] == "final"), None)
        return Step(thought=thought, action=action, final=final, path=path)

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
        if data.startswith("move_"):
            return ("move", str(children[0]), children[1:])
        if data.startswith("json_"):
            return ("json", "".join(_raw(c) for c in children))
        return children

    def _call(self, tool: str, children: list[Any]) -> Action:
        spec = self._tools[tool]
        if spec.schema is None:
            argument = next(str(c) for c in children if isinstance(c, Token) and c.type in _ARGUMENTS)
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


class _CheckedParser:
    """What the step and JSON parsers share: `accepts`, where an error is, and whether the text was cut off.

    A subclass sets `self.grammar` (with a `.gbnf`) and `self._checker = None`, and defines `parse`.
    """

    grammar: Any
    _checker: GbnfChecker | None

    def parse(self, text: str) -> Any:  # pragma: no cover - defined by each subclass
        raise NotImplementedError

    def accepts(self, text: str) -> bool:
        try:
            self.parse(text)
        except StepParseError:
            return False
        return True

    @staticmethod
    def _where(text: str, exc: UnexpectedInput) -> tuple[int, int, str]:
        """Line, column and caret context of a Lark error."""
        line = getattr(exc, "line", 1) or 1
        column = getattr(exc, "column", 1) or 1
        try:
            context = exc.get_context(text, span=30)
        except Exception:  # get_context needs a position; an EOF error may have none
            context = text[-60:]
        return line, column, context

    def _is_cut_off(self, text: str, exc: UnexpectedInput) -> bool:
        if isinstance(exc, UnexpectedEOF) or (isinstance(exc, UnexpectedToken) and exc.token.type == "$END"):
            return True
        # The GBNF accepts the same language; walking it tells whether the text is a prefix of a valid turn.
        if self._checker is None:
            self._checker = GbnfChecker(self.grammar.gbnf)
        return self._checker.is_prefix(text)


class StepParser(_CheckedParser):
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

    def parse(self, text: str, grounding: Grounding | None = None, reading: Grounding | None = None) -> Step:
        """Parse one complete step; raise StepParseError (labelled, with position) if the grammar rejects it.

        For a grounded spec, `grounding` holds what the run has read: a Final that is not one of its spans (nor
        yes/no, nor the abstention ABSTAIN) is rejected with the label `ungrounded`. With `reading`, the argument
        of a tool in the spec's `span_arguments` that is not one of its spans is rejected the same way.
        """
        if not text.strip():
            raise StepParseError("empty step: the model wrote nothing", label="empty", line=1, column=1)
        try:
            tree = self._lark.parse(text)
        except UnexpectedInput as exc:
            raise self._error(text, exc) from None
        try:
            step = self._transformer.transform(tree)
        except VisitError as exc:
            if not isinstance(exc.orig_exc, _ArgumentError):
                raise
            raise StepParseError(str(exc.orig_exc), label="bad_argument", line=1, column=1) from None
        call = step.action
        spanned = reading is not None and call is not None and call.tool in self.spec.span_arguments
        if spanned and isinstance(call.argument, str) and not reading.accepts(call.argument):
            line = text[: text.find("Action:")].count("\n") + 1
            raise StepParseError(
                f"the {call.tool} argument {call.argument!r} is not a span of anything read so far at line {line}",
                label="ungrounded",
                line=line,
                column=len(f"Action: {call.tool}[") + 1,
                context=text.strip()[-60:],
            )
        abstained = step.final == ABSTAIN and self.spec.abstain
        ungrounded = step.final is not None and grounding is not None and not grounding.accepts(step.final)
        ungrounded = ungrounded and not abstained
        if self.spec.grounded and ungrounded:
            line = text[: text.find("Final:")].count("\n") + 1
            raise StepParseError(
                f"the answer {step.final!r} is not a span of anything read so far (nor yes/no) at line {line}",
                label="ungrounded",
                line=line,
                column=len("Final: ") + 1,
                context=text.strip()[-60:],
            )
        return step

    def _error(self, text: str, exc: UnexpectedInput) -> StepParseError:
        position = getattr(exc, "pos_in_stream", None) or 0
        line, column, context = self._where(text, exc)
        label, reason = self._label(text, exc, position)
        where = f"line {line}, column {column}"
        return StepParseError(f"{reason} at {where}", label=label, line=line, column=column, context=context)

    def _label(self, text: str, exc: UnexpectedInput, position: int) -> tuple[str, str]:
        if self._is_cut_off(text, exc):
            return "truncated", "the step stops before it is complete"
        head = text[:position]
        line_start = head.rfind("\n") + 1
        current = head[line_start:]
        if self.spec.action_path is not None:
            move_error = self._move_error(text, position, line_start, current)
            if move_error is not None:
                return move_error
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

    def _move_error(self, text: str, position: int, line_start: int, current: str) -> tuple[str, str] | None:
        """The label of a failure in what an action-path step adds: its ActionPath line and the chosen move."""
        spec = self.spec
        moves = ", ".join(name for name, _ in spec.next_actions)
        if not text.startswith(PATH_PREFIX):
            return "missing_path", f"the step must start with '{spec.path_prefix}' and one of: {moves}"
        if line_start == 0:  # the failure is on the ActionPath line itself
            return "invalid_move", f"the ActionPath must be '{spec.path_prefix}' and one of: {moves}"
        chosen = text[len(spec.path_prefix) :].split("\n", 1)[0].strip()
        tool = dict(spec.next_actions).get(chosen)
        rest = text[position:]
        if spec.thought and current == "" and "\nThought: " not in text[:position]:
            return "missing_thought", "expected 'Thought: ' after the ActionPath line"
        tools = {t.name for t in spec.tools}
        wrote_tool = current.startswith("Action: ") and "[" not in current and rest.split("[", 1)[0] in tools
        at_line = current == "" and rest.startswith(("Action: ", "Final: "))
        if tool is not None and (wrote_tool or at_line):
            does = "gives the Final answer" if tool == FINAL else f"calls {tool}"
            return "invalid_move", f"the move {chosen} {does}; the step's last line must do that"
        return None

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


class JsonParser(_CheckedParser):
    """Parses turns that are one JSON object of a JsonGrammar's shape into an instance of its pydantic model."""

    def __init__(self, grammar: JsonGrammar) -> None:
        self.grammar = grammar
        try:
            self._lark = Lark(grammar.lark, parser="lalr", lexer="contextual")
        except LarkError as exc:
            raise GrammarError(f"the JSON grammar of {grammar.model.__name__} does not compile: {exc}") from exc
        self._checker: GbnfChecker | None = None

    def parse(self, text: str) -> BaseModel:
        """Parse and validate one JSON turn; raise StepParseError (labelled, with position) if it does not fit."""
        if not text.strip():
            raise StepParseError("empty reply: the model wrote nothing", label="empty", line=1, column=1)
        try:
            self._lark.parse(text)
        except UnexpectedInput as exc:
            raise self._error(text, exc) from None
        try:
            return self.grammar.model.model_validate(json.loads(text))
        except ValueError as exc:  # json.JSONDecodeError and pydantic's ValidationError are both ValueErrors
            message = f"the JSON does not fit {self.grammar.model.__name__}: {_brief(exc)}"
            raise StepParseError(message, label="bad_argument", line=1, column=1) from None

    def _error(self, text: str, exc: UnexpectedInput) -> StepParseError:
        line, column, context = self._where(text, exc)
        if self._is_cut_off(text, exc):
            label, reason = "truncated", "the JSON stops before it is complete"
        else:
            label, reason = "invalid", f"the text does not fit the JSON shape of {self.grammar.model.__name__}"
        return StepParseError(
            f"{reason} at line {line}, column {column}", label=label, line=line, column=column, context=context
        )


def _brief(exc: ValueError) -> str:
    """The first problems of a validation error, on one line (pydantic's own message spans many)."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in errors()[:3])


class WordParser:
    """Parses a reply that is one word of a few ("yes" or "no"), in any case: the word, lower-cased. The grammar
    (`gbnf`) allows exactly those words; a backend without a grammar may write more, and only the first word
    counts."""

    def __init__(self, words: Sequence[str]) -> None:
        self.words = tuple(word.lower() for word in words)
        self.gbnf = "root ::= " + " | ".join('"' + word + '"' for word in self.words) + "\n"

    def parse(self, text: str) -> str:
        written = text.split()
        word = written[0].strip(".,;:!\"'").lower() if written else ""
        if word not in self.words:
            expected = " or ".join(self.words)
            raise StepParseError(f"expected {expected}, got {text.strip()[:40]!r}", label="invalid", line=1, column=1)
        return word


@lru_cache(maxsize=64)
def json_parser_for(grammar: JsonGrammar) -> JsonParser:
    """A compiled JSON parser per grammar, built once and reused across calls and questions."""
    return JsonParser(grammar)
