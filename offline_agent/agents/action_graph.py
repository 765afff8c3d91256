"""KnowAgent's action knowledge graph: which action may follow which, read from a TOML file and checked.

The file has two tables. `[actions]` maps each action to the tool it calls (`"Final"` for the action that gives
the answer and ends the run); `[edges]` lists, for `Start` and for each action, the actions that may come next:

    [actions]
    Search = "search"
    Finish = "Final"

    [edges]
    Start = ["Search"]
    Search = ["Search", "Finish"]

Everything that would leave the agent stuck is refused at load time with a ConfigError naming the file: an edge
to an undeclared action, an action without a tool, no edges from Start, an action (other than the final one)
with no way on, edges out of the final action, and a final action that Start cannot reach. Whether the run has
the tools the actions call is checked by the agent, which knows its tool registry.

Limits: one graph per run (no per-question graphs); actions are plain names (letters, digits, _), and the
order of a list in `[edges]` is the order the grammar offers the moves in.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from offline_agent import incoming
from offline_agent.errors import ConfigError
from offline_agent.grammar import FINAL

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib

START = "Start"
DEFAULT_GRAPH = Path(__file__).resolve().parent.parent / "prompt_files" / "knowagent_graph.toml"
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,31}$")
_TOOL = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


@dataclass(frozen=True)
class ActionGraph:
    """A checked action graph: each action's tool, and the actions allowed after Start and after each action."""

    source: str
    tools: tuple[tuple[str, str], ...]  # (action, tool or FINAL), in file order
    edges: tuple[tuple[str, tuple[str, ...]], ...]  # (Start or action, the actions that may follow)

    @property
    def actions(self) -> tuple[str, ...]:
        return tuple(action for action, _ in self.tools)

    def tool_of(self, action: str) -> str:
        """The tool `action` calls (FINAL for the action that answers)."""
        return dict(self.tools)[action]

    def next_actions(self, action: str) -> tuple[str, ...]:
        """The actions allowed after `action` (or after START)."""
        return dict(self.edges).get(action, ())

    @property
    def final_actions(self) -> tuple[str, ...]:
        """The actions that give the Final answer (the only moves of the last allowed step)."""
        return tuple(action for action, tool in self.tools if tool == FINAL)

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The tools the actions call, without Final, each once, in file order."""
        return tuple(dict.fromkeys(tool for _, tool in self.tools if tool != FINAL))

    @property
    def sha256(self) -> str:
        """Identifies the graph's content (not its file name)."""
        data = json.dumps({"tools": self.tools, "edges": self.edges}, sort_keys=True)
        return hashlib.sha256(data.encode("utf-8")).hexdigest()

    def describe(self) -> str:
        """The graph in words, one line per action, for the prompt."""
        lines = []
        for source, targets in self.edges:
            if source == START:
                lines.append(f"- At the start: {_or(targets)}.")
            else:
                lines.append(f"- After {source}: {_or(targets)}.")
        return "\n".join(lines)


def _or(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def load_action_graph(path: str | Path | None = None) -> ActionGraph:
    """Read and check an action graph file; None reads the graph shipped with the package."""
    source = Path(path) if path is not None else DEFAULT_GRAPH
    kind = incoming.not_a_file(source)
    if kind is not None:
        raise ConfigError(f"action graph {source}: it is {kind}, not a file")
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"action graph {source}: cannot read it: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"action graph {source}: not UTF-8 text") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"action graph {source}: not valid TOML: {exc}") from None
    return graph_from_dict(raw, str(source))


def graph_from_dict(raw: dict[str, Any], source: str = "<dict>") -> ActionGraph:
    """Check an action graph given as the parsed TOML tables; errors name `source`."""

    def fail(problem: str) -> ConfigError:
        return ConfigError(f"action graph {source}: {problem}")

    unknown_tables = sorted(set(raw) - {"actions", "edges"})
    if unknown_tables:
        raise fail(f"unknown table {unknown_tables[0]!r}; a graph has [actions] and [edges]")
    actions, edges = raw.get("actions"), raw.get("edges")
    if not isinstance(actions, dict) or not actions:
        raise fail('no [actions] table (each action = the tool it calls, or "Final")')
    if not isinstance(edges, dict):
        raise fail("no [edges] table (for Start and each action, the actions that may follow)")

    tools: list[tuple[str, str]] = []
    for action, tool in actions.items():
        if action == START:
            raise fail(f"{START!r} is where every run begins; it cannot be an action")
        if not _NAME.match(action):
            raise fail(f"bad action name {action!r}: use letters, digits and _, starting with a letter")
        if not isinstance(tool, str) or not tool.strip():
            raise fail(f'action {action!r} has no tool (give a tool name, or "Final")')
        if tool != FINAL and not _TOOL.match(tool):
            raise fail(f"action {action!r}: bad tool name {tool!r}")
        tools.append((action, tool))
    declared = dict(tools)
    finals = [action for action, tool in tools if tool == FINAL]
    if not finals:
        raise fail('no action gives the Final answer (map one to "Final")')

    links: list[tuple[str, tuple[str, ...]]] = []
    for action, targets in edges.items():
        if action != START and action not in declared:
            raise fail(f"unknown action {action!r} in [edges]; actions: {', '.join(declared)}")
        if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
            raise fail(f"edges of {action!r} must be a list of action names")
        for target in targets:
            if target not in declared:
                raise fail(f"unknown action {target!r} after {action!r}; actions: {', '.join(declared)}")
        if action in finals and targets:
            raise fail(f"{action!r} gives the Final answer and ends the run; it cannot have edges")
        links.append((action, tuple(dict.fromkeys(targets))))
    following = dict(links)
    if not following.get(START):
        raise fail(f"no edges from {START} (add e.g. {START} = [{json.dumps(tools[0][0])}])")
    for action, tool in tools:
        if tool != FINAL and not following.get(action):
            raise fail(f"action {action!r} has no edges, so a run that takes it could never go on")

    reached, frontier = {START}, [START]
    while frontier:
        for target in following.get(frontier.pop(), ()):
            if target not in reached:
                reached.add(target)
                frontier.append(target)
    if not any(final in reached for final in finals):
        raise fail(f"no path from {START} reaches {_or(tuple(finals))}, so no run could ever answer")
    ordered = [(START, following[START])] + [(a, following[a]) for a, _ in tools if following.get(a)]
    return ActionGraph(source=source, tools=tuple(tools), edges=tuple(ordered))


__all__ = ["DEFAULT_GRAPH", "START", "ActionGraph", "graph_from_dict", "load_action_graph"]
