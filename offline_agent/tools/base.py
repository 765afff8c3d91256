"""The Tool protocol and the registry that runs tools for the agent loop.

A tool is any object with `name`, `description`, `schema` (None for a plain text argument, else a JSON Schema
object) and `__call__(argument) -> str` (a `Notice` where it says only that it found nothing). The registry turns
a tool's failure (a ToolError, or any exception a user's tool raises) into an Observation marked as an error, so
the loop never stops on a tool.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from offline_agent.errors import ConfigError, ToolError
from offline_agent.grammar import ToolSpec, check_json_argument


@runtime_checkable
class Tool(Protocol):
    """What the agent needs from a tool; user objects fit without subclassing."""

    name: str
    description: str
    schema: dict[str, Any] | None

    def __call__(self, argument: Any) -> str: ...


class Notice(str):
    """What a tool says about the call itself ("No passage matches 'X'.", "No more sentences in 'Y' contain
    'born'."), not text it found. The model reads it as its Observation like any other, but a grounded run takes no
    answer from it: a tool returns a Notice (a str) where it found nothing to show."""


@dataclass(frozen=True)
class ToolResult:
    """What one call returned: the observation text, whether it reports a failure, and whether it is a Notice."""

    observation: str
    is_error: bool = False
    notice: bool = False

    @property
    def evidence(self) -> bool:
        """Whether the observation is text the tool found (not a Notice or an error): a grounded run may answer
        from it."""
        return not (self.is_error or self.notice)


class ToolRegistry:
    """The tools of one run, by name, in the order the prompt and the grammar list them."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        if not isinstance(tool, Tool):
            raise ConfigError(f"{tool!r} is not a tool: it needs name, description, schema and __call__")
        if tool.name in self._tools:
            raise ConfigError(f"tool {tool.name!r} is registered twice")
        self._tools[tool.name] = tool

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def get(self, name: str) -> Tool:
        try:
            return self._tools[name]
        except KeyError:
            raise ConfigError(f"unknown tool {name!r}; choose from {sorted(self._tools)}") from None

    def specs(self) -> tuple[ToolSpec, ...]:
        """The grammar's view of these tools."""
        return tuple(
            ToolSpec(name=t.name, description=t.description, schema=t.schema, example=getattr(t, "example", ""))
            for t in self
        )

    def run(self, name: str, argument: Any) -> ToolResult:
        """Call a tool; any failure becomes an error Observation instead of an exception."""
        if name not in self._tools:
            return ToolResult(f"Error: there is no tool {name!r}; tools: {', '.join(self._tools)}.", True)
        tool = self._tools[name]
        try:
            if tool.schema is not None:
                argument = check_json_argument(ToolSpec(name, schema=tool.schema), argument)
            output = tool(argument)
            return ToolResult(str(output), notice=isinstance(output, Notice))
        except ToolError as exc:
            return ToolResult(f"Error: {exc}", True)
        except ValueError as exc:
            return ToolResult(f"Error: bad argument for {name}: {exc}", True)
        except Exception as exc:  # a user's tool must not stop the agent; the error is shown to the model
            return ToolResult(f"Error: {name} failed: {type(exc).__name__}: {exc}", True)
