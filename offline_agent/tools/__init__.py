"""Tools the agent can call: the Tool protocol, the registry, and the built-in search, lookup, calculator and
retrieve (not among the defaults: KnowAgent asks for it)."""

from __future__ import annotations

from offline_agent.grammar import ToolSpec
from offline_agent.tools.base import Notice, Tool, ToolRegistry, ToolResult
from offline_agent.tools.calculator import CalculatorTool
from offline_agent.tools.corpus import CorpusSession, LookupTool, RetrieveTool, SearchSettings, SearchTool

DEFAULT_TOOLS: tuple[str, ...] = ("search", "lookup", "calculator")


def default_tool_specs() -> tuple[ToolSpec, ...]:
    """The built-in tools as the grammar sees them, without a corpus (for `grammar show` and grammars/)."""
    session = CorpusSession(index=None)
    return ToolRegistry([SearchTool(session), LookupTool(session), CalculatorTool()]).specs()


def build_tools(
    index: object | None,
    names: tuple[str, ...] = DEFAULT_TOOLS,
    search: SearchSettings | None = None,
    question: str = "",
) -> ToolRegistry:
    """A fresh registry of built-in tools by name, over `index` (a new session: no state from earlier runs);
    `search` says what a search shows (default: SearchSettings()), `question` is the run's question."""
    session = CorpusSession(index=index, settings=search or SearchSettings(), question=question)
    available = {
        "search": SearchTool(session),
        "lookup": LookupTool(session),
        "calculator": CalculatorTool(),
        "retrieve": RetrieveTool(session),
    }
    unknown = [name for name in names if name not in available]
    if unknown:
        from offline_agent.errors import ConfigError

        raise ConfigError(f"unknown tool {unknown[0]!r}; choose from {sorted(available)}")
    if index is None and any(name in ("search", "lookup", "retrieve") for name in names):
        from offline_agent.errors import ConfigError

        raise ConfigError("the search, lookup and retrieve tools need a corpus")
    return ToolRegistry(available[name] for name in names)


__all__ = [
    "DEFAULT_TOOLS",
    "CalculatorTool",
    "CorpusSession",
    "LookupTool",
    "Notice",
    "RetrieveTool",
    "SearchSettings",
    "SearchTool",
    "Tool",
    "ToolRegistry",
    "ToolResult",
    "build_tools",
    "default_tool_specs",
]
