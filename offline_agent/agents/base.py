"""The strategy seam: what every agent strategy is, the run it works on, and the hooks it may fill in.

A strategy is built as `strategy(backend, tools, config, callbacks, options)` (runner.Session and the evaluation
call it so; agents.AgentSettings.build does it from names): `config` is the run's RunConfig (run.py: limits,
sampling, the grammar switch, what every strategy obeys alike), `options` the strategy's own, of its
`options_type` (options.py; None: their defaults). A strategy does not override the constructor: it may bound the
run config (`bound_config`), keep some of the tools (`own_tools`) and build what its runs need (`setup`). It
answers with `run(question, history) -> Trajectory`.
`Strategy.run` is the same for all of them:

    context_for(question, history)   which earlier turns of a chat to show
    prompt_parts(question, turns)    the system and user messages (their hash is recorded)
    new_trajectory(...)              the empty trajectory with what makes the run reproducible
    new_state(trajectory, parts, deadline)   the run's state (a strategy keeps its own things in a subclass)
    begin(state)                     before the first step: may end the run (state.finish / state.stop)
    loop(state)                      the steps, until the state says the run stopped

Every model call goes through `self.runner` (step_runner.StepRunner), which books its cost and turns a context
overflow, an interrupted call or an unparseable step into the run's stop reason: a strategy never calls the backend
itself. The Thought/Action/Final loop with its own hooks (each step's grammar, what the next prompt shows, what
happens after an Observation) is `react.ReActAgent`; the planner graph fills in `loop` itself.

A run ends when a hook calls `state.finish(answer)` (stop reason `final`) or `state.stop(reason)`; the reasons are
steps.STOP_REASONS, and a strategy may add its own with steps.add_stop_reason.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any, ClassVar

from offline_agent._version import __version__
from offline_agent.agents.options import StrategyOptions
from offline_agent.agents.run import AgentCallbacks, RunConfig, RunState
from offline_agent.agents.step_runner import StepRunner
from offline_agent.answer_form import AnswerForm, answer_form
from offline_agent.backends.base import Backend
from offline_agent.details import StepDetails
from offline_agent.errors import ConfigError
from offline_agent.grounding import Grounding
from offline_agent.prompts import PromptParts, agent_prompt, render_chat
from offline_agent.steps import StepRecord, Trajectory, Turn
from offline_agent.tools.base import ToolRegistry

# Earlier answered turns a chat shows by default (Strategy.context_for).
CONTEXT_TURNS = 3


class Strategy:
    """The base of every strategy: the run, the step runner, the prompt, and the hooks a strategy fills in."""

    name = "strategy"
    # The files of its instructions and examples in prompt_files/ ("<prompt_name>_system.txt", "..._examples.txt").
    prompt_name = "react"
    # Whether steps carry a Thought line, and whether the strategy calls tools at all.
    uses_thought = True
    uses_tools = True
    # Built-in tools the strategy needs beyond the run's tools (runner.Session and the evaluation add them).
    required_tools: tuple[str, ...] = ()
    # The type of its steps' details (details.py); agents.register_strategy registers it for reading back.
    details_type: ClassVar[type[StepDetails]] = StepDetails
    # The type of its options (options.py): what it chooses for itself, beyond the run config every strategy has.
    options_type: ClassVar[type[StrategyOptions]] = StrategyOptions
    # Which of a profile's option values the strategy takes (settings.py); None: every one it has. A strategy whose
    # reading is its definition (rag: one search, its top passages) takes only the answer's grounding from one.
    profile_options: ClassVar[frozenset[str] | None] = None

    def __init__(
        self,
        backend: Backend,
        tools: ToolRegistry,
        config: RunConfig | None = None,
        callbacks: AgentCallbacks | None = None,
        options: StrategyOptions | None = None,
    ) -> None:
        self.backend = backend
        self.options = self.options_type() if options is None else options
        if type(self.options) is not self.options_type:
            raise ConfigError(
                f"strategy {self.name} takes {self.options_type.__name__}, not {type(self.options).__name__}"
            )
        self.config = self.bound_config(config or RunConfig())
        self.tools = self.own_tools(tools)
        self.callbacks = callbacks or AgentCallbacks()
        self.runner = StepRunner(backend, self.config, self.callbacks)
        self.setup()

    # --- what a strategy may change when it is built ------------------------------------------------------------------

    def bound_config(self, config: RunConfig) -> RunConfig:
        """The run config this strategy runs under (cot and standard take one step, the critic at most 4 rounds)."""
        return config

    def own_tools(self, tools: ToolRegistry) -> ToolRegistry:
        """The tools this strategy runs with, of the run's (KnowAgent keeps those its graph calls)."""
        return tools

    def setup(self) -> None:
        """Build what the strategy needs for every run (its grammars, its JSON calls), once the seam is built."""

    @classmethod
    def check_options(cls, options: StrategyOptions) -> None:
        """A ConfigError for option values this strategy cannot run with, said before a model loads (each value's
        own type and range are checked by its options type)."""

    # --- what identifies the run ------------------------------------------------------------------------------------

    @property
    def grammar_sha256(self) -> str:
        """One hash over every grammar the strategy may use (recorded on the trajectory and in eval's config)."""
        return hashlib.sha256(b"").hexdigest()

    def prompt_parts(self, question: str, history: Sequence[Turn] = ()) -> PromptParts:
        """The system message (instructions, tools, examples) and the user message (earlier turns, the question)."""
        tools = list(self.tools) if self.uses_tools else []
        return agent_prompt(
            self.prompt_name,
            question,
            tools,
            max_steps=self.config.max_steps,
            history=history,
            abstain=self.options.abstain,
        )

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
            grounded=self.options.grounded,
            options=self.options.to_dict(),
        )

    # --- the run ------------------------------------------------------------------------------------------------------

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
        state = self.new_state(trajectory, parts, started + c.max_seconds if c.max_seconds else None)
        try:
            self.begin(state)
            if not state.stopped:
                self.loop(state)
        finally:
            trajectory.seconds = round(time.monotonic() - started, 3)
        return trajectory

    def new_state(self, trajectory: Trajectory, parts: PromptParts, deadline: float | None) -> RunState:
        """The state of a new run; a strategy that carries more from step to step returns its own subclass."""
        return RunState(trajectory, deadline=deadline)

    def new_form(self, question: str) -> AnswerForm | None:
        """The form `question`'s answer takes (answer_form.py), or None when answer_form is off."""
        return answer_form(question) if self.options.answer_form else None

    def new_grounding(self, trajectory: Trajectory, form: AnswerForm | None = None) -> Grounding | None:
        """What a grounded run may answer from before it reads anything (None: the run is not grounded): the
        question and yes/no, or with an answer form, what that form allows (a choice's options, yes/no, or nothing)."""
        if not self.options.grounded:
            return None
        return form.grounding() if form is not None else Grounding([trajectory.question])

    def begin(self, state: RunState) -> None:
        """Before the first step: a strategy may end the run here (a refusal, say) with state.finish or state.stop."""

    def loop(self, state: RunState) -> None:
        """The steps of the run, until one of them ends it (every strategy fills this in)."""
        raise NotImplementedError(f"{type(self).__name__} does not define its loop")

    # --- helpers for strategies --------------------------------------------------------------------------------------

    def details(self, record: StepRecord) -> StepDetails:
        """The step's details, of this strategy's type, made on first use."""
        return record.ensure_details(self.details_type)

    def step_done(self, record: StepRecord) -> None:
        """Tell the live view that a step is recorded."""
        if self.callbacks.on_step:
            self.callbacks.on_step(record)

    def fit_observation(self, text: str, budget: int | None = None) -> str:
        """Cut an Observation to the token budget (default: observation_tokens) at a word boundary, marking the cut."""
        text = text.strip()
        budget = budget or self.options.observation_tokens
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


def call_key(tool: str, argument: str | dict[str, Any]) -> str:
    """What makes two tool calls the same call: the tool, and the argument with case and spacing ignored."""
    if isinstance(argument, str):
        return f"{tool}\0{' '.join(argument.lower().split())}"
    return f"{tool}\0{json.dumps(argument, sort_keys=True)}"


__all__ = ["CONTEXT_TURNS", "AgentCallbacks", "RunConfig", "RunState", "Strategy", "call_key"]
