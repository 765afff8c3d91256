"""The ReAct loop: one grammar-constrained model turn per step, a tool call per Action, until a Final answer.

What the loop guarantees:
- every turn is generated under the step grammar (unless the grammar is switched off, for measuring format
  errors) and checked by the Lark parser; a step the parser rejects is recorded with its labelled error, retried
  once with twice the tokens if it was cut off at max_tokens, and otherwise ends the run with stop reason `error`:
  the loop never guesses what the model meant;
- on the last allowed step the grammar allows only `Final` (early_stopping "generate"), or the step is an ordinary
  one and a run without a Final stops with stop reason `max_steps` (early_stopping "force");
- after each Observation the model is told how many steps it has left (budget_hint), appended to that line only;
- a tool failure becomes the Observation; a repeated identical call is not run again;
- Observations are cut to a token budget; the prompt only grows, so llama.cpp reuses its cache;
- it stops on Final, max steps, or max seconds, and records why;
- earlier turns of a chat are shown before the question; `context_for` picks which (a hook for strategies).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

from offline_agent import __version__
from offline_agent.backends.base import Backend
from offline_agent.errors import ConfigError, ContextOverflowError, StepParseError
from offline_agent.grammar import GrammarSpec, StepGrammar, build_grammar
from offline_agent.grounding import Grounding
from offline_agent.parse import StepParser, parser_for
from offline_agent.prompts import PromptParts, agent_prompt, render_chat, scratchpad_entry
from offline_agent.steps import Action, Step, StepRecord, Trajectory, Turn
from offline_agent.tools.base import ToolRegistry
from offline_agent.tools.corpus import SearchSettings

STOP_SEQUENCES = ("\nObservation:",)
# The Thought of the first_search step.
OPENING_THOUGHT = "First I search for the question itself."
# Tools that bring new documents into the run (min_searches counts these).
SEARCH_TOOLS = ("search", "retrieve")
EARLY_STOPPING = ("generate", "force")
# Earlier answered turns a chat shows by default (ReActAgent.context_for).
CONTEXT_TURNS = 3


@dataclass
class AgentConfig:
    """The knobs of one run; all of them are recorded on the trajectory."""

    max_steps: int = 8
    max_seconds: float | None = None
    temperature: float = 0.0
    seed: int = 0
    max_tokens: int = 192
    observation_tokens: int = 320
    grammar: bool = True
    thought_max: int = 300
    argument_max: int = 120
    final_max: int = 200
    # "generate": the last allowed step may only be Final; "force": it is an ordinary step, and a run that
    # reaches max_steps without a Final stops with no answer (LangChain's names).
    early_stopping: str = "generate"
    # Tell the model after each Observation how many steps it has left.
    budget_hint: bool = False
    # KnowAgent's action graph (a TOML file); None: the graph shipped with the package. Other agents ignore it.
    action_graph: str | None = None
    # The Final may only be a span of the question or an Observation, or yes/no (grounding.py); each step's
    # grammar is rebuilt from what the run has read.
    grounded: bool = False
    # What a search shows (tools.corpus.SearchSettings): passages per search, head or best sentences, title boost.
    search_k: int = 3
    snippet: str = "head"
    title_boost: bool = False
    # Final is allowed only once this many searches have succeeded, and until then only a search may be written
    # (the last step may still only answer): a small model answers after its first search even when the question
    # needs a second hop.
    min_searches: int = 0
    # Self-consistency: this many runs of the question (the first as configured, the others sampled) and a vote.
    samples: int = 1
    # The run opens with a search for the question itself, written by the agent, not the model: with BM25 the whole
    # question finds the supporting passages better than the keywords a small model picks.
    first_search: bool = False
    # What the corpus is about (agents/scope.py): a question outside it is refused before any search.
    scope: str | None = None

    def __post_init__(self) -> None:
        self.search_settings()  # bad search settings fail here
        if self.early_stopping not in EARLY_STOPPING:
            raise ConfigError(f"unknown early_stopping {self.early_stopping!r}; choose from {list(EARLY_STOPPING)}")
        if self.max_steps < 1:
            raise ConfigError("max_steps must be at least 1")
        if self.max_seconds is not None and not 0 < self.max_seconds < math.inf:  # nan fails both comparisons
            raise ConfigError("max_seconds must be a positive, finite number of seconds")
        if not 1 <= self.samples <= 32:
            raise ConfigError("samples must be between 1 and 32")
        if self.min_searches < 0:
            raise ConfigError("min_searches must be at least 0")
        if self.max_tokens < 16:
            raise ConfigError("max_tokens must be at least 16")
        if not 0.0 <= self.temperature <= 5.0:
            raise ConfigError("temperature must be between 0 and 5")

    def search_settings(self) -> SearchSettings:
        return SearchSettings(k=self.search_k, snippet=self.snippet, title_boost=self.title_boost)


@dataclass
class AgentCallbacks:
    """Hooks for a live view: a step starts, text streams in, a tool starts and ends, a step is recorded.

    on_tool_end gets (tool name, argument, the Observation as the model sees it, whether the tool failed).
    """

    on_step_start: Callable[[int, bool], None] | None = None
    on_token: Callable[[str], None] | None = None
    on_tool_start: Callable[[str, Any], None] | None = None
    on_step: Callable[[StepRecord], None] | None = None
    on_tool_end: Callable[[str, Any, str, bool], None] | None = None


@dataclass
class _RunState:
    trajectory: Trajectory
    scratchpad: str = ""
    calls: dict[str, int] = field(default_factory=dict)
    # What each stateful call (lookup) last returned: the same call returning the same text again is a repeat.
    returned: dict[str, tuple[int, str]] = field(default_factory=dict)
    deadline: float | None = None
    grounding: Grounding | None = None  # what the run has read, when answers must be grounded


class ReActAgent:
    """Thought, then Action or Final, step after step, over a backend and a tool registry."""

    name = "react"
    # What a strategy changes: whether steps carry a Thought line, whether they may call tools, and the files of
    # its instructions and examples in prompt_files/ ("<prompt_name>_system.txt", "<prompt_name>_examples.txt").
    uses_thought = True
    uses_tools = True
    prompt_name = "react"
    # Built-in tools the strategy needs beyond the run's tools (runner.Session and the evaluation add them).
    required_tools: tuple[str, ...] = ()

    def __init__(
        self,
        backend: Backend,
        tools: ToolRegistry,
        config: AgentConfig | None = None,
        callbacks: AgentCallbacks | None = None,
    ) -> None:
        self.backend = backend
        self.tools = tools
        self.config = config or AgentConfig()
        self.callbacks = callbacks or AgentCallbacks()
        c = self.config
        self.spec = GrammarSpec(
            tools=tools.specs(),
            thought=self.uses_thought,
            allow_action=self.uses_tools and len(tools) > 0,
            allow_final=True,
            thought_max=c.thought_max,
            argument_max=c.argument_max,
            final_max=c.final_max,
            grounded=c.grounded,
        )
        self.grammar: StepGrammar = build_grammar(self.spec)
        self.final_grammar: StepGrammar = build_grammar(self.spec.final_only())
        # A step before min_searches successful searches: a search only (when the strategy can search).
        finders = tuple(t.name for t in self.spec.callable_tools if t.name in SEARCH_TOOLS)
        self._search_spec = replace(self.spec, allow_final=False, allowed_tools=finders) if finders else self.spec
        self._search_grammar: StepGrammar = build_grammar(self._search_spec)
        self._search_parser: StepParser = parser_for(self._search_spec)
        self._parser: StepParser = parser_for(self.spec)
        self._final_parser: StepParser = parser_for(self.spec.final_only())

    @property
    def grammar_sha256(self) -> str:
        return hashlib.sha256(f"{self.grammar.sha256}\0{self.final_grammar.sha256}".encode()).hexdigest()

    def prompt_parts(self, question: str, history: Sequence[Turn] = ()) -> PromptParts:
        tools = list(self.tools) if self.uses_tools else []
        return agent_prompt(self.prompt_name, question, tools, max_steps=self.config.max_steps, history=history)

    def context_for(self, question: str, history: Sequence[Turn]) -> list[Turn]:
        """The earlier turns of a chat to show before `question`: by default the last 3 that got an answer.

        A strategy with its own rule (only turns the question refers back to, say) overrides this.
        """
        answered = [turn for turn in history if turn.answer is not None]
        return answered[-CONTEXT_TURNS:]

    def prompt_prefix(self, parts: PromptParts) -> str:
        """The chat-template part of the prompt, up to where the assistant writes its first step."""
        messages = [{"role": "system", "content": parts.system}, {"role": "user", "content": parts.user}]
        return render_chat(
            self.backend.chat_template,
            messages,
            bos_token=self.backend.bos_token,
            eos_token=self.backend.eos_token,
        )

    def shared_prefix(self, parts: PromptParts) -> str:
        """The start of the prompt that does not depend on the question: the template up to the user's message."""
        first = self.prompt_prefix(PromptParts(system=parts.system, user="A"))
        second = self.prompt_prefix(PromptParts(system=parts.system, user="B"))
        return first[: len(os.path.commonprefix([first, second]))]

    def run(self, question: str, history: Sequence[Turn] = ()) -> Trajectory:
        """Answer one question; never raises on model output or tool failures (see the stop reason).

        `history`: the earlier turns of a chat, oldest first; `context_for` picks those the prompt shows, and the
        trajectory records them.
        """
        c = self.config
        started = time.monotonic()
        turns = list(self.context_for(question, history)) if history else []
        # Without turns, call the one-argument form that strategies written before chat may override.
        parts = self.prompt_parts(question, turns) if turns else self.prompt_parts(question)
        trajectory = self.new_trajectory(question, parts, turns)
        state = _RunState(trajectory, deadline=started + c.max_seconds if c.max_seconds else None)
        if c.grounded:
            state.grounding = Grounding([question])
        prefix = self.prompt_prefix(parts)
        try:
            self.backend.warm(self.shared_prefix(parts))
            self._loop(state, prefix)
        finally:
            trajectory.seconds = round(time.monotonic() - started, 3)
        return trajectory

    def new_trajectory(self, question: str, parts: PromptParts, turns: Sequence[Turn]) -> Trajectory:
        """An empty trajectory carrying what makes the run reproducible (hashes, seed, settings, shown turns)."""
        c = self.config
        return Trajectory(
            question=question,
            agent=self.name,
            backend=self.backend.name,
            model=self.backend.describe(),
            grammar_sha256=self.grammar_sha256 if c.grammar else None,
            prompt_sha256=parts.sha256,
            seed=c.seed,
            temperature=c.temperature,
            max_steps=c.max_steps,
            max_seconds=c.max_seconds,
            version=__version__,
            started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            history=list(turns),
            early_stopping=c.early_stopping,
            budget_hint=c.budget_hint,
            grounded=c.grounded,
        )

    def _out_of_time(self, state: Any) -> bool:
        """True (and stop reason timeout) once the run's deadline has passed; `state` has deadline and trajectory."""
        if state.deadline is not None and time.monotonic() >= state.deadline:
            state.trajectory.stop_reason = "timeout"
            return True
        return False

    def _loop(self, state: _RunState, prefix: str) -> None:
        c = self.config
        trajectory = state.trajectory
        start = 1 if self._open_with_search(state) else 0
        for index in range(start, c.max_steps):
            if self._out_of_time(state):
                return
            final_only = self._final_only(index)
            if self.callbacks.on_step_start:
                self.callbacks.on_step_start(index, final_only)
            record, step = self._generate_step(state, prefix, index, final_only)
            trajectory.steps.append(record)
            if step is None:
                if self.callbacks.on_step:
                    self.callbacks.on_step(record)
                return
            if step.is_final:
                record.final = step.final
                trajectory.answer = step.final
                trajectory.stop_reason = "final"
                if self.callbacks.on_step:
                    self.callbacks.on_step(record)
                return
            observation = self._act(state, record, step)
            if state.grounding is not None and not record.tool_error:
                state.grounding.add(observation)
            state.scratchpad += scratchpad_entry(record.raw, observation, self.budget_note(index))
            if self.callbacks.on_step:
                self.callbacks.on_step(record)
        trajectory.stop_reason = "max_steps"

    def _open_with_search(self, state: _RunState) -> bool:
        """The first_search step: search[the question], as if the model had written it; False when not configured
        (or there is no search tool, or only one step, which must answer)."""
        c = self.config
        if not (c.first_search and self.uses_tools and "search" in self.tools and c.max_steps > 1):
            return False
        question = " ".join(state.trajectory.question.replace("[", "(").replace("]", ")").split())
        action = Action("search", question)
        raw = (f"Thought: {OPENING_THOUGHT}\n" if self.uses_thought else "") + f"Action: {action.render()}"
        if self.callbacks.on_step_start:
            self.callbacks.on_step_start(0, False)
        record = StepRecord(index=0, raw=raw, thought=OPENING_THOUGHT if self.uses_thought else None)
        record.details = {"opening": True}
        state.trajectory.steps.append(record)
        observation = self._act(state, record, Step(thought=record.thought, action=action))
        if state.grounding is not None and not record.tool_error:
            state.grounding.add(observation)
        state.scratchpad += scratchpad_entry(raw, observation, self.budget_note(0))
        if self.callbacks.on_step:
            self.callbacks.on_step(record)
        return True

    def _final_only(self, index: int) -> bool:
        """Whether step `index` may only be Final: the last allowed step, when early stopping generates."""
        c = self.config
        return index == c.max_steps - 1 and c.grammar and c.early_stopping == "generate"

    def budget_note(self, index: int) -> str | None:
        """What the Observation of step `index` tells the model about the steps it has left (None: nothing)."""
        c = self.config
        left = c.max_steps - index - 1
        if not c.budget_hint or left < 1:
            return None
        if left > 1:
            return f"{left} steps left"
        if self._final_only(index + 1):
            return "last step: only Final is allowed"
        return "last step: give the Final answer now"

    def step_grammar(self, state: _RunState, index: int, final_only: bool) -> tuple[StepGrammar, StepParser]:
        """The grammar and parser of step `index`; a strategy that restricts moves per step overrides this.

        Grounded: the grammar's Final is rebuilt from what the run has read (the parser stays the same; it checks
        the span against `state.grounding`).
        """
        if not final_only and self._searches(state) < self.config.min_searches:
            return self._search_grammar, self._search_parser
        if state.grounding is not None:
            spec = self.spec.final_only() if final_only else self.spec
            return build_grammar(spec, state.grounding), self._final_parser if final_only else self._parser
        if final_only:
            return self.final_grammar, self._final_parser
        return self.grammar, self._parser

    def _searches(self, state: _RunState) -> int:
        """Searches (search or retrieve calls) of this run that succeeded."""
        steps = state.trajectory.steps
        return sum(1 for step in steps if step.action in SEARCH_TOOLS and not step.tool_error)

    def _generate_step(
        self, state: _RunState, prefix: str, index: int, final_only: bool
    ) -> tuple[StepRecord, Step | None]:
        """Ask the model for one step; returns the record and the parsed step (None: the run stops)."""
        c = self.config
        started = time.monotonic()
        grammar, parser = self.step_grammar(state, index, final_only)
        record = StepRecord(index=index, raw="", final_only=final_only)
        if grammar.spec.grounded and c.grammar:
            built = {"sentences": len(state.grounding or ()), "build_s": round(time.monotonic() - started, 4)}
            record.details = {"grounding": built}
        max_tokens = c.max_tokens
        for attempt in (1, 2):
            record.attempts = attempt
            try:
                completion = self.backend.complete(
                    prefix + state.scratchpad,
                    grammar=grammar if c.grammar else None,
                    max_tokens=max_tokens,
                    stop=STOP_SEQUENCES,
                    temperature=c.temperature,
                    seed=c.seed + index,
                    on_token=self.callbacks.on_token,
                    deadline=state.deadline,
                )
            except ContextOverflowError as exc:
                state.trajectory.stop_reason = "error"
                state.trajectory.error = str(exc)
                record.seconds = round(time.monotonic() - started, 3)
                return record, None
            record.usage += completion.usage
            record.timings += completion.timings
            record.raw = completion.text
            if completion.rejections:  # where the grammar overruled the model's first choice
                record.details = {**(record.details or {}), "rejections": [list(r) for r in completion.rejections]}
            record.finish_reason = completion.finish_reason
            if completion.finish_reason == "interrupted":
                state.trajectory.stop_reason = "timeout"
                record.seconds = round(time.monotonic() - started, 3)
                return record, None
            try:
                step = parser.parse(completion.text, grounding=state.grounding)
            except StepParseError as exc:
                record.parse_error = exc.to_dict()
                if completion.finish_reason == "length" and attempt == 1:
                    max_tokens *= 2  # cut off mid-step: one retry with room to finish
                    continue
                state.trajectory.stop_reason = "error"
                state.trajectory.error = f"step {index + 1}: {exc}"
                record.seconds = round(time.monotonic() - started, 3)
                return record, None
            record.parse_error = None if attempt == 1 else record.parse_error
            record.thought = step.thought
            if step.is_final and record.details and "grounding" in record.details:
                record.details["grounding"]["refused"] = _refused_in_final(record.raw, completion.rejections)
            record.seconds = round(time.monotonic() - started, 3)
            return record, step
        raise AssertionError("unreachable")  # pragma: no cover

    def _act(self, state: _RunState, record: StepRecord, step: Step) -> str:
        """Run the step's tool (or refuse a repeat) and return the Observation, cut to the token budget."""
        assert step.action is not None
        action = step.action
        record.action = action.tool
        record.argument = action.argument
        tool = self.tools.get(action.tool) if action.tool in self.tools else None
        # A stateful tool (lookup walks through matches) may rightly be called twice with the same argument; it is
        # a repeat only when it returns what it returned last time (a keyword with no further match, say).
        stateful = getattr(tool, "is_stateful", False)
        call = _call_key(action.tool, action.argument)
        if not stateful and call in state.calls:
            return self._repeat(record, action, state.calls[call])
        if self.callbacks.on_tool_start:
            self.callbacks.on_tool_start(action.tool, action.argument)
        result = self.tools.run(action.tool, action.argument)
        if stateful:
            earlier = state.returned.get(call)
            state.returned[call] = (record.index, result.observation)
            if earlier is not None and earlier[1] == result.observation:
                return self._repeat(record, action, earlier[0])
        record.tool_error = result.is_error
        if not stateful and not result.is_error:
            state.calls[call] = record.index
        details = getattr(tool, "last_details", None)
        if details:
            record.details = {**(record.details or {}), **details}
        record.observation = self._fit(result.observation)
        if self.callbacks.on_tool_end:
            self.callbacks.on_tool_end(action.tool, action.argument, record.observation, result.is_error)
        return record.observation

    def _repeat(self, record: StepRecord, action: Any, earlier: int) -> str:
        """The Observation of a call that would only repeat step `earlier`'s result."""
        record.observation = (
            f"You already ran {action.render()} at step {earlier + 1}; its result is above. "
            "Use different keywords, another tool, or give the Final answer."
        )
        record.tool_error = True
        return record.observation

    def _fit(self, text: str, budget: int | None = None) -> str:
        """Cut an Observation to the token budget (default: observation_tokens) at a word boundary, marking the cut."""
        text = text.strip()
        budget = budget or self.config.observation_tokens
        count = self.backend.count_tokens
        if count(text) <= budget:
            return text
        low, high = 0, len(text)
        while low < high:
            middle = (low + high + 1) // 2
            if count(text[:middle]) <= budget - 2:
                low = middle
            else:
                high = middle - 1
        cut = text.rfind(" ", 0, low)
        return text[: cut if cut > low // 2 else low].rstrip() + " ..."


def _call_key(tool: str, argument: str | dict[str, Any]) -> str:
    if isinstance(argument, str):
        return f"{tool}\0{' '.join(argument.lower().split())}"
    return f"{tool}\0{json.dumps(argument, sort_keys=True)}"


def _refused_in_final(raw: str, rejections: Sequence[tuple[int, str]]) -> int:
    """How often the grammar refused the model's first choice inside the Final answer (grounding at work)."""
    start = raw.find("Final: ")
    if start < 0:
        return 0
    return sum(1 for offset, _ in rejections if offset >= start + len("Final: "))
