"""The ReAct loop: one grammar-constrained model turn per step, a tool call per Action, until a Final answer.

What the loop guarantees:
- every turn goes through the step runner (step_runner.py): generated under the step grammar (unless the grammar
  is switched off, for measuring format errors) and checked by the Lark parser; a step the parser rejects is
  recorded with its labelled error, retried once with twice the tokens if it was cut off at max_tokens, and
  otherwise ends the run with stop reason `error`: the loop never guesses what the model meant;
- on the last allowed step the grammar allows only `Final` (early_stopping "generate"), or the step is an ordinary
  one and a run without a Final stops with stop reason `max_steps` (early_stopping "force");
- after each Observation the model is told how many steps it has left (budget_hint), appended to that line only;
- a tool failure becomes the Observation; a repeated identical call is not run again;
- Observations are cut to a token budget; the prompt only grows, so llama.cpp reuses its cache;
- it stops on Final, max steps, or max seconds, and records why;
- earlier turns of a chat are shown before the question; `context_for` picks which.

The hooks a strategy built on this loop fills in (all public; react, act, cot and standard are settings of it):
`step_grammar` (the grammar of each step, from the run so far), `step_prompt` (what the model is shown for the
next step), `review_step` (check and annotate a parsed step; may refuse it), `after_observation` (what happens once
a tool has answered; may end the run), and `budget_note` (what an Observation says about the steps left).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from offline_agent.agents.base import EARLY_STOPPING, AgentCallbacks, AgentConfig, RunState, Strategy, call_key
from offline_agent.agents.step_runner import STOP_SEQUENCES
from offline_agent.backends.base import Backend
from offline_agent.details import ToolDetails
from offline_agent.grammar import GrammarSpec, StepGrammar, build_grammar
from offline_agent.parse import StepParser, parser_for
from offline_agent.prompts import PromptParts, scratchpad_entry
from offline_agent.steps import Step, StepRecord, Trajectory
from offline_agent.tools.base import ToolRegistry


@dataclass
class LoopState(RunState):
    """A run of the step loop: the chat-template prompt up to the first step, the scratchpad of steps and
    Observations after it, and the tool calls made (by their call_key, with the step that made them)."""

    prefix: str = ""
    scratchpad: str = ""
    calls: dict[str, int] = field(default_factory=dict)


class ReActAgent(Strategy):
    """Thought, then Action or Final, step after step, over a backend and a tool registry."""

    name = "react"
    prompt_name = "react"
    uses_thought = True
    uses_tools = True

    def __init__(
        self,
        backend: Backend,
        tools: ToolRegistry,
        config: AgentConfig | None = None,
        callbacks: AgentCallbacks | None = None,
    ) -> None:
        super().__init__(backend, tools, config, callbacks)
        c = self.config
        self.spec = GrammarSpec(
            tools=tools.specs(),
            thought=self.uses_thought,
            allow_action=self.uses_tools and len(tools) > 0,
            allow_final=True,
            thought_max=c.thought_max,
            argument_max=c.argument_max,
            final_max=c.final_max,
        )
        self.grammar: StepGrammar = build_grammar(self.spec)
        self.final_grammar: StepGrammar = build_grammar(self.spec.final_only())
        self.parser: StepParser = parser_for(self.spec)
        self.final_parser: StepParser = parser_for(self.spec.final_only())

    @property
    def grammar_sha256(self) -> str:
        return hashlib.sha256(f"{self.grammar.sha256}\0{self.final_grammar.sha256}".encode()).hexdigest()

    def new_state(self, trajectory: Trajectory, parts: PromptParts, deadline: float | None) -> LoopState:
        return LoopState(trajectory, deadline=deadline, prefix=self.prompt_prefix(parts))

    # --- the loop ---------------------------------------------------------------------------------------------------

    def loop(self, state: RunState) -> None:
        assert isinstance(state, LoopState)
        c = self.config
        trajectory = state.trajectory
        for index in range(c.max_steps):
            if state.out_of_time():
                return
            final_only = self.is_final_only(index)
            if self.callbacks.on_step_start:
                self.callbacks.on_step_start(index, final_only)
            record = StepRecord(index=index, raw="", final_only=final_only)
            grammar, parser = self.step_grammar(state, index, final_only)
            prompt = self.step_prompt(state, index)
            turn = self.runner.step(
                state, record, prompt, grammar, parser, seed=c.seed + index, label=f"step {index + 1}"
            )
            if turn.rejections:  # where the grammar overruled the model's first choice
                self.details(record).rejections = turn.rejections
            step = self.review_step(state, record, turn.value)
            trajectory.steps.append(record)
            if step is None:
                self.step_done(record)
                return
            if step.is_final:
                assert step.final is not None
                record.final = step.final
                state.finish(step.final)
                self.step_done(record)
                return
            observation = self.act(state, record, step)
            self.after_observation(state, record, step, observation)
            self.step_done(record)
            if state.stopped:
                return
        state.stop("max_steps")

    # --- hooks ------------------------------------------------------------------------------------------------------

    def is_final_only(self, index: int) -> bool:
        """Whether step `index` may only be Final: the last allowed step, when early stopping generates."""
        c = self.config
        return index == c.max_steps - 1 and c.grammar and c.early_stopping == "generate"

    def step_grammar(self, state: LoopState, index: int, final_only: bool) -> tuple[StepGrammar, StepParser]:
        """The grammar and parser of step `index`, which may depend on the run so far (`state.trajectory`)."""
        if final_only:
            return self.final_grammar, self.final_parser
        return self.grammar, self.parser

    def step_prompt(self, state: LoopState, index: int) -> str:
        """What the model is shown for step `index`: the prompt, then every step and Observation so far."""
        return state.prefix + state.scratchpad

    def review_step(self, state: LoopState, record: StepRecord, step: Step | None) -> Step | None:
        """Check and annotate the step just generated (None: it did not parse or the run stopped). Return None to
        refuse it, after ending the run with state.stop."""
        return step

    def after_observation(self, state: LoopState, record: StepRecord, step: Step, observation: str) -> None:
        """What happens once the tool has answered: the step and its Observation join the scratchpad."""
        state.scratchpad += scratchpad_entry(record.raw, observation, self.budget_note(record.index))

    def budget_note(self, index: int) -> str | None:
        """What the Observation of step `index` tells the model about the steps it has left (None: nothing)."""
        c = self.config
        left = c.max_steps - index - 1
        if not c.budget_hint or left < 1:
            return None
        if left > 1:
            return f"{left} steps left"
        if self.is_final_only(index + 1):
            return "last step: only Final is allowed"
        return "last step: give the Final answer now"

    # --- tools ------------------------------------------------------------------------------------------------------

    def act(self, state: LoopState, record: StepRecord, step: Step) -> str:
        """Run the step's tool (or refuse a repeat) and return the Observation, cut to the token budget."""
        assert step.action is not None
        action = step.action
        record.action = action.tool
        record.argument = action.argument
        tool = self.tools.get(action.tool) if action.tool in self.tools else None
        # A stateful tool (lookup walks through matches) may rightly be called twice with the same argument.
        key = None if getattr(tool, "is_stateful", False) else call_key(action.tool, action.argument)
        if key is not None and key in state.calls:
            record.observation = (
                f"You already ran {action.render()} at step {state.calls[key] + 1}; its result is above. "
                "Use different keywords, another tool, or give the Final answer."
            )
            record.tool_error = True
            return record.observation
        if self.callbacks.on_tool_start:
            self.callbacks.on_tool_start(action.tool, action.argument)
        result = self.tools.run(action.tool, action.argument)
        record.tool_error = result.is_error
        if key is not None and not result.is_error:
            state.calls[key] = record.index
        reported = ToolDetails.from_dict(getattr(tool, "last_details", None))
        if reported is not None:
            self.details(record).tool = reported
        record.observation = self.fit_observation(result.observation)
        if self.callbacks.on_tool_end:
            self.callbacks.on_tool_end(action.tool, action.argument, record.observation, result.is_error)
        return record.observation


# EARLY_STOPPING, STOP_SEQUENCES, AgentCallbacks and AgentConfig lived here before the strategy seam; the CLI reads them
# from here still.
__all__ = ["EARLY_STOPPING", "STOP_SEQUENCES", "AgentCallbacks", "AgentConfig", "LoopState", "ReActAgent"]
