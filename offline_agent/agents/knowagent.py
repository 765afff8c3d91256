"""KnowAgent: ReAct steps that first name their move on an action graph, with the graph enforced while decoding.

In the KnowAgent paper the model is shown an action graph and writes an `ActionPath:` line before each Thought;
a move the graph forbids is only caught afterwards. Here each step's grammar (grammar.py, `action_path`) writes
`ActionPath: <last action> -> ` itself and then offers only the actions the graph allows after the last one,
each tied to its own tool line, so a forbidden move, or a tool line that does not carry out the move, cannot be
produced. A step looks like:

    ActionPath: Search -> Lookup
    Thought: The page names the year; I look for it.
    Action: lookup[born]

The graph is a TOML file (action_graph.py; the default ships in prompt_files/knowagent_graph.toml, a user's own
comes from KnowAgentOptions.action_graph, `-o action_graph=FILE`). Each step's details are KnowAgentDetails:
`action_path` (the whole path after the step), `allowed` (the moves the grammar offered) and `prevented` (how
often the model's first choice for the move was an action the graph forbids there, from the grammar's rejections).
It plugs into the ReAct loop through two hooks: `step_grammar` (the grammar of the move after the path so far) and
`review_step` (record the move, and refuse one that is not allowed).
The default graph needs the retrieve tool: runner.Session and the evaluation add it (`required_tools`), and given a
registry without it the agent makes one over the corpus session of the registry's search and lookup tools. The
agent keeps only the tools its graph calls.

Decisions:
- The grammar writes only the last `path_window` actions (default 1) before the move, not the whole path: the
  grammar then depends on the last action alone, so a run needs at most two grammars per action (an ordinary and
  a Final-only one), compiled once per process, instead of one per distinct path (each a new Lark parser and a new
  compiled matcher kept by the backend). The whole path is still on the page, one move per step, and is recorded.
  Set `path_window = None` in a subclass to have the model write the whole path, as in the paper.
- The last allowed step offers only the graph's final action(s), even where the graph has no edge to them.
- The worked examples (prompt_files/knowagent_examples.txt) use the default graph's action names; the action list
  and the graph in the instructions come from the graph in use.
- With the grammar off, a step whose ActionPath is not the real one, names a forbidden move, or whose tool line
  does not match its move is rejected by the parser with the label `invalid_move` and ends the run (stop reason
  error), like any rejected step; review_step checks the parsed path again as a second line of defence.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, ClassVar

from offline_agent.agents.action_graph import START, ActionGraph, load_action_graph
from offline_agent.agents.options import KnowAgentOptions, StrategyOptions
from offline_agent.agents.react import LoopState, ReActAgent
from offline_agent.details import KnowAgentDetails
from offline_agent.errors import ConfigError, StepParseError
from offline_agent.grammar import FINAL, GrammarSpec, StepGrammar, build_grammar
from offline_agent.grounding import Grounding
from offline_agent.parse import StepParser, parser_for
from offline_agent.prompts import PromptParts, describe_tools
from offline_agent.steps import Step, StepRecord
from offline_agent.tools.base import Tool, ToolRegistry
from offline_agent.tools.corpus import CorpusSession, LookupTool, RetrieveTool, SearchTool

# Placeholders in knowagent_system.txt, filled from the graph (the shared template fills $max_steps and $examples).
ACTIONS_MARKER = "{actions}"
GRAPH_MARKER = "{action_graph}"
_CORPUS_TOOLS: dict[str, Any] = {"search": SearchTool, "lookup": LookupTool, "retrieve": RetrieveTool}


class KnowAgent(ReActAgent):
    """ReAct over an action graph: each step names its move in an `ActionPath:` line the grammar restricts."""

    name = "knowagent"
    prompt_name = "knowagent"
    required_tools = ("retrieve",)
    details_type = KnowAgentDetails
    # How many of the last actions the grammar writes before the next move; None: the whole path.
    path_window: int | None = 1
    options_type: ClassVar[type[StrategyOptions]] = KnowAgentOptions
    options: KnowAgentOptions

    def own_tools(self, tools: ToolRegistry) -> ToolRegistry:
        self.graph: ActionGraph = load_action_graph(self.options.action_graph)
        # Only the graph's tools: the prompt, the grammar and the recorded tool list then agree with the graph.
        return ToolRegistry(self._graph_tool(tools, name) for name in self.graph.tool_names)

    def _graph_tool(self, tools: ToolRegistry, name: str) -> Tool:
        """The run's tool `name`; a built-in corpus tool the run lacks (retrieve, when the registry was built with
        the default tools) is made over the corpus session of the run's other corpus tools."""
        if name in tools:
            return tools.get(name)
        sessions = [tool.session for tool in tools if isinstance(getattr(tool, "session", None), CorpusSession)]
        if name in _CORPUS_TOOLS and sessions:
            return _CORPUS_TOOLS[name](sessions[0])
        action = next(action for action, tool in self.graph.tools if tool == name)
        raise ConfigError(
            f"action graph {self.graph.source}: action {action!r} calls {name!r}, which this run does not have; "
            f"tools: {', '.join(tools.names) or 'none'}"
        )

    @property
    def grammar_sha256(self) -> str:
        # Every step grammar follows from the base spec, the graph and the window.
        parts = f"{super().grammar_sha256}\0{self.graph.sha256}\0{self.path_window}"
        return hashlib.sha256(parts.encode()).hexdigest()

    def prompt_parts(self, question: str, *args: Any, **kwargs: Any) -> PromptParts:
        parts = super().prompt_parts(question, *args, **kwargs)
        system = parts.system.replace(ACTIONS_MARKER, self.describe_actions())
        return replace(parts, system=system.replace(GRAPH_MARKER, self.graph.describe()))

    def describe_actions(self) -> str:
        """One line per action for the prompt: the call it makes and what that does, or that it answers."""
        lines = []
        for action, tool in self.graph.tools:
            if tool == FINAL:
                lines.append(f"- {action}: Final: the answer (this ends the run)")
            else:
                lines.append(f"- {action}: {describe_tools([self.tools.get(tool)]).removeprefix('- ')}")
        return "\n".join(lines)

    # ---- the path and the moves ----------------------------------------------------------------------------
    def path_so_far(self, state: LoopState) -> tuple[str, ...]:
        """The real path: Start, then the move of every step taken (read back from the step records)."""
        for record in reversed(state.trajectory.steps):
            if isinstance(record.details, KnowAgentDetails) and record.details.action_path:
                return tuple(record.details.action_path)
        return (START,)

    def allowed_moves(self, path: Sequence[str], final_only: bool) -> tuple[str, ...]:
        """The moves the next step may make after `path` (the final action(s) alone on the last step)."""
        if final_only:
            return self.graph.final_actions
        return self.graph.next_actions(path[-1])

    def written_path(self, path: Sequence[str]) -> tuple[str, ...]:
        """The part of the path the grammar writes before the next move."""
        if self.path_window is None:
            return tuple(path)
        return tuple(path[-self.path_window :])

    def move_spec(self, path: Sequence[str], final_only: bool, answer: bool = True) -> GrammarSpec:
        """The grammar spec of the step after `path`; with `answer` False, without the moves that answer."""
        moves = tuple((action, self.graph.tool_of(action)) for action in self.allowed_moves(path, final_only))
        if not answer:
            moves = tuple(move for move in moves if move[1] != FINAL)
        has_tool_move = any(tool != FINAL for _, tool in moves)
        return replace(
            self.spec,
            allow_action=has_tool_move,
            allow_final=any(tool == FINAL for _, tool in moves),
            allowed_tools=None,
            action_path=self.written_path(path),
            next_actions=moves,
        )

    def offered_spec(self, state: LoopState, final_only: bool) -> tuple[GrammarSpec, Grounding | None]:
        """The spec of the next move and, for a grounded run, what its Final is built from. While nothing read can
        be an answer, the moves that answer are not offered and the run goes on reading, as ReAct's does; where
        only they are left (the last step, or a node whose only edges answer), the answer is free, as on ReAct's
        last step."""
        path = self.path_so_far(state)
        spec = self.move_spec(path, final_only)
        grounding = self.final_grounding(state, final_only) if spec.grounded else None
        if grounding is None or not spec.allow_final or not grounding.is_empty:
            return spec, grounding
        if spec.allow_action:
            return self.move_spec(path, final_only, answer=False), None
        return replace(spec, grounded=False), None

    def step_grammar(self, state: LoopState, index: int, final_only: bool) -> tuple[StepGrammar, StepParser]:
        # parser_for caches by spec, and with path_window 1 a spec depends only on (last action, final_only); a
        # grounded Final, or spent calls, make a grammar of this step's own on the same parser.
        spec, grounding = self.offered_spec(state, final_only)
        parser = parser_for(spec)
        spent = {} if final_only else self.spent_calls(state)
        if (grounding is None or not spec.allow_final) and not spent and state.reading is None:
            return parser.grammar, parser
        return build_grammar(spec, grounding, spent, state.reading), parser

    def review_step(self, state: LoopState, record: StepRecord, step: Step | None) -> Step | None:
        """Record the move (the path after it, the moves offered, the forbidden first choices), and refuse a step
        whose move the graph does not allow: a second line of defence behind the grammar, and the only one when
        the grammar is off."""
        path = self.path_so_far(state)
        spec, _ = self.offered_spec(state, record.final_only)
        allowed = tuple(action for action, _ in spec.next_actions)
        details = record.ensure_details(KnowAgentDetails)
        details.allowed = list(allowed)
        details.prevented = self._prevented(details.rejections, len(spec.path_prefix), allowed)
        if step is not None:
            problem = self._move_problem(path, step, allowed)
            if problem is not None:
                error = StepParseError(problem, label="invalid_move", line=1, column=1, context=record.raw[:60])
                record.parse_error = error.to_dict()
                state.stop("error", f"step {record.index + 1}: {problem}")
                step = None
            else:
                assert step.path is not None
                path = (*path, step.path[-1])
        details.action_path = list(path)
        return step

    def _move_problem(self, path: Sequence[str], step: Step, allowed: Sequence[str]) -> str | None:
        """Why a parsed step is not a valid move after `path` (None: it is)."""
        if step.path is None:
            return "the step has no ActionPath line"
        *written, move = step.path
        if tuple(written) != self.written_path(path):
            real = " -> ".join(self.written_path(path))
            return f"the ActionPath says {' -> '.join(written)}, but the path so far is {real}"
        if move not in allowed:
            return f"{move} may not follow {path[-1]}; allowed: {', '.join(allowed)}"
        tool = self.graph.tool_of(move)
        if (tool == FINAL) != step.is_final or (step.action is not None and step.action.tool != tool):
            return f"the move {move} must {'give the Final answer' if tool == FINAL else f'call {tool}'}"
        return None

    def _prevented(self, rejections: Sequence[Sequence[Any]], choice_at: int, allowed: Sequence[str]) -> int:
        """How many refused first choices were a forbidden move: a token over the place where the move's name
        starts that spells (the start of) an action the graph does not allow here. Other refusals there
        (spaces, a Thought written too early) are format, not moves."""
        forbidden = [action for action in self.graph.actions if action not in allowed]
        count = 0
        for offset, piece in rejections:
            offset, piece = int(offset), str(piece)
            if not offset <= choice_at < offset + max(len(piece), 1):
                continue
            named = piece[choice_at - offset :].strip()
            if named and any(action.startswith(named) or named.startswith(action) for action in forbidden):
                count += 1
        return count


__all__ = ["KnowAgent"]
