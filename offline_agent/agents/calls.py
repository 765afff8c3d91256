"""One grammar-constrained JSON call to the model, as the planner and critic nodes make them.

A `JsonCall` pairs a pydantic model with the GBNF and Lark grammars built from its JSON Schema (grammar.py) and the
parser that validates a reply against the schema (parse.py). `call_json` sends a prompt under that grammar (or
unconstrained, when the agent runs with the grammar off), parses the reply, retries once with twice the tokens
when the reply was cut off, and returns the value or the labelled parse error: never an exception for model text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from offline_agent.errors import StepParseError
from offline_agent.grammar import JsonGrammar, json_grammar
from offline_agent.parse import JsonParser, json_parser_for
from offline_agent.steps import Timings, Usage

JSON_MAX_TOKENS = 256


class JsonCall:
    """A pydantic model with its grammar pair and parser, built once per model."""

    def __init__(self, model: type[BaseModel]) -> None:
        self.model = model
        self.grammar: JsonGrammar = json_grammar(model)
        self.parser: JsonParser = json_parser_for(self.grammar)


@dataclass
class JsonResult:
    """What one JSON call returned: the value (None on a parse error), the text, and the cost."""

    value: Any
    text: str
    finish_reason: str
    attempts: int
    usage: Usage = field(default_factory=Usage)
    timings: Timings = field(default_factory=Timings)
    error: StepParseError | None = None


def call_json(
    agent: Any,
    call: JsonCall,
    prompt: str,
    *,
    seed: int,
    max_tokens: int = JSON_MAX_TOKENS,
    deadline: float | None = None,
    on_token: Callable[[str], None] | None = None,
) -> JsonResult:
    """Ask `agent`'s backend for one JSON value of `call`'s shape; ContextOverflowError propagates."""
    config = agent.config
    usage, timings = Usage(), Timings()
    for attempt in (1, 2):
        completion = agent.backend.complete(
            prompt,
            grammar=call.grammar.gbnf if config.grammar else None,
            max_tokens=max_tokens,
            stop=("\n\n",),
            temperature=config.temperature,
            seed=seed,
            on_token=on_token,
            deadline=deadline,
        )
        usage += completion.usage
        timings += completion.timings
        result = JsonResult(None, completion.text, completion.finish_reason, attempt, usage, timings)
        if completion.finish_reason == "interrupted":
            return result
        try:
            result.value = call.parser.parse(completion.text)
        except StepParseError as exc:
            result.error = exc
            if completion.finish_reason == "length" and attempt == 1:
                max_tokens *= 2
                continue
        return result
    raise AssertionError("unreachable")  # pragma: no cover


__all__ = ["JSON_MAX_TOKENS", "JsonCall", "JsonResult", "call_json"]
