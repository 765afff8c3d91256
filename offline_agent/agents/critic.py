"""The critic agent (`--agent critic`): a ReAct search loop that keeps a memory of facts instead of raw Observations.

Why: a small model loses the thread in a long scratchpad of search results. Here, after every Observation, two
grammar-constrained JSON calls condense it:
- extraction `{"useful", "facts"}`: up to four short facts from the Observation that bear on the question, added to
  the memory (normalised and deduplicated; only when `useful` is true);
- critic `{"sufficient", "answer", "missing"}`: whether the memory answers the question. When it does (with a
  non-empty answer) the run stops with the critic's answer, stop reason `final`. Grounded (the product's default),
  the answer must also be one the step grammar's Final could be (a span of the Observations read, in the form the
  question asks for, or yes/no where allowed); another counts as not sufficient, and the rounds go on.
Otherwise the next step's prompt shows the question, the numbered facts, the calls already made and what is missing,
in place of the Observations, and the model writes the next step under the usual step grammar (Thought, then Action
or Final; Final only on the last round, as in ReActAgent). A Final the model writes itself is the answer.

Prompt layout, for llama.cpp's prefix cache: every call shares one system message (the step instructions and
examples, then the extraction and critic instructions with their examples: the same for every question) and begins
its user message with the question and the facts, which only grow; the part that differs per call comes last.

Each round is one StepRecord: the search step as ReActAgent records it (the tool's details, such as the search
titles the evaluation reads, are kept), with CriticDetails: the `extraction` and `critic` calls and the `memory`
after the round; the JSON calls' tokens, times and seconds are added to the step's. A JSON reply that fails its
parser (possible with the grammar off) is recorded there: the round goes on without its facts, or counts as not
sufficient. It plugs into the ReAct loop through two hooks: `step_prompt` (the memory in place of the scratchpad)
and `after_observation` (the two calls).

Limits: rounds are min(`max_rounds` = 4, `max_steps`); an Observation that is a tool error is not extracted, and the
critic is asked only when the memory gained a fact (its input would be unchanged otherwise); the memory keeps at most
24 facts (further ones are counted in the extraction's `dropped`). Chat history is shown as ReActAgent shows it.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from string import Template
from typing import Annotated, TypeVar

from pydantic import BaseModel, Field

from offline_agent.agents.base import RunConfig
from offline_agent.agents.react import LoopState, ReActAgent
from offline_agent.agents.step_runner import JsonCall, TurnResult
from offline_agent.details import CallDetails, CriticDetails, CritiqueDetails, ExtractionDetails
from offline_agent.prompts import PromptParts, describe_tools, history_text, prompt_text, with_abstention
from offline_agent.steps import Action, Step, StepRecord, Trajectory, Turn

FACT_MAX = 160
MEMORY_MAX = 24
JSON_TOKENS = 160
E = TypeVar("E", bound=CallDetails)


class Extraction(BaseModel):
    """The extraction call's reply: whether the Observation helps, and the facts it gives."""

    useful: bool
    facts: list[Annotated[str, Field(max_length=FACT_MAX)]] = Field(max_length=4)


class Critique(BaseModel):
    """The critic's reply: whether the known facts answer the question, the answer, and what is still missing."""

    sufficient: bool
    answer: str = Field(max_length=120)
    missing: str = Field(max_length=160)


@dataclass
class Memory:
    """The facts gathered so far, the calls made, and what the critic last said is missing."""

    facts: list[str] = field(default_factory=list)
    tried: list[str] = field(default_factory=list)
    missing: str = ""
    _seen: set[str] = field(default_factory=set, repr=False)

    def add(self, facts: Sequence[str]) -> tuple[list[str], int]:
        """Add new facts (whitespace and case, and a final full stop, do not make a fact new); returns the facts
        added and how many new ones did not fit."""
        added, dropped = [], 0
        for fact in facts:
            text = " ".join(fact.split())
            key = text.lower().rstrip(". ")
            if not key or key in self._seen:
                continue
            if len(self.facts) >= MEMORY_MAX:
                dropped += 1
                continue
            self._seen.add(key)
            self.facts.append(text)
            added.append(text)
        return added, dropped

    def render(self) -> str:
        if not self.facts:
            return "Known facts: none yet."
        return "Known facts:\n" + "\n".join(f"{number}. {fact}" for number, fact in enumerate(self.facts, start=1))


@dataclass
class CriticState(LoopState):
    """A critic run: the user message's head (earlier turns and the question) and the memory."""

    head: str = ""
    memory: Memory = field(default_factory=Memory)


class CriticAgent(ReActAgent):
    """Search, condense each Observation into facts, ask a critic whether they answer the question, repeat."""

    name = "critic"
    prompt_name = "critic"
    details_type = CriticDetails
    max_rounds = 4

    def bound_config(self, config: RunConfig) -> RunConfig:
        # --max-steps lowers the round limit; the last round is Final-only through the inherited machinery.
        return replace(config, max_steps=min(config.max_steps, self.max_rounds))

    def setup(self) -> None:
        super().setup()
        self.extract_call = JsonCall(Extraction)
        self.critic_call = JsonCall(Critique)
        self._system = self.prompt_parts("").system

    @property
    def grammar_sha256(self) -> str:
        parts = [super().grammar_sha256, self.extract_call.grammar.sha256, self.critic_call.grammar.sha256]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def prompt_parts(self, question: str, history: Sequence[Turn] = ()) -> PromptParts:
        tools = list(self.tools) if self.uses_tools else []
        system = Template(with_abstention(prompt_text("critic_system.txt"), self.options.abstain)).substitute(
            tools=describe_tools(tools),
            max_steps=self.config.max_steps,
            examples=prompt_text("critic_examples.txt").strip(),
            extract=prompt_text("critic_extract.txt").strip(),
            judge=prompt_text("critic_judge.txt").strip(),
        )
        return PromptParts(system=system.strip(), user=history_text(history) + f"Question: {question.strip()}")

    def new_state(self, trajectory: Trajectory, parts: PromptParts, deadline: float | None) -> CriticState:
        # No ReAct prefix and scratchpad: each round's prompt is rebuilt from the memory (step_prompt).
        form = self.new_form(trajectory.question)
        grounding = self.new_grounding(trajectory, form)
        return CriticState(trajectory, deadline=deadline, parts=parts, grounding=grounding, form=form, head=parts.user)

    def opening_action(self, state: LoopState) -> Action | None:
        """None: the rounds start from the memory; first_search is not used (the memory would not hold its facts)."""
        return None

    # --- the hooks ------------------------------------------------------------------------------------------------

    def step_prompt(self, state: LoopState, index: int) -> str:
        """The question and the facts, the calls tried and what is missing, then the step's task."""
        assert isinstance(state, CriticState)
        return self._chat(self._user(state.head, state.memory, self._step_task(state.memory, index)))

    def after_observation(self, state: LoopState, record: StepRecord, step: Step, observation: str) -> None:
        """Condense the Observation into facts, and ask the critic whether they answer the question."""
        assert isinstance(state, CriticState) and step.action is not None
        self.read_observation(state, record, observation)
        if step.action.render() not in state.memory.tried:  # a refused repeat is listed once
            state.memory.tried.append(step.action.render())
        started = time.monotonic()
        details = record.ensure_details(CriticDetails)
        try:
            added = self._extract(state, record, details)
            if added:
                self._judge(state, record, details)
            elif added is not None:
                details.critic = CritiqueDetails(skipped="no new facts")
        finally:
            details.memory = list(state.memory.facts)
            record.seconds = round(record.seconds + time.monotonic() - started, 3)

    # --- the two calls --------------------------------------------------------------------------------------------

    def _extract(self, state: CriticState, record: StepRecord, details: CriticDetails) -> list[str] | None:
        """Facts the Observation added to the memory ([] for none; None: the run stopped)."""
        if record.tool_error:
            details.extraction = ExtractionDetails(skipped="the tool failed")
            return []
        memory = state.memory
        task = f"Tool call: {memory.tried[-1]}\nObservation: {record.observation}\nTask: EXTRACT"
        result = self._json(state, record, self.extract_call, self._user(state.head, memory, task))
        if result is None:
            return None
        entry = details.extraction = _entry(ExtractionDetails, result)
        if result.value is None:
            return []
        value: Extraction = result.value
        entry.useful, entry.facts = value.useful, list(value.facts)
        if not value.useful:
            return []
        added, dropped = memory.add(value.facts)
        entry.added = added
        if dropped:
            entry.dropped = dropped
        return added

    def _judge(self, state: CriticState, record: StepRecord, details: CriticDetails) -> None:
        """Ask the critic; a sufficient verdict with an answer ends the run with it."""
        result = self._json(state, record, self.critic_call, self._user(state.head, state.memory, "Task: JUDGE"))
        if result is None:
            return
        entry = details.critic = _entry(CritiqueDetails, result)
        if result.value is None:
            entry.sufficient = False  # an unreadable verdict counts as not sufficient
            return
        verdict: Critique = result.value
        answer = verdict.answer.strip()
        entry.sufficient, entry.answer, entry.missing = verdict.sufficient, verdict.answer, verdict.missing
        if verdict.sufficient and answer and (state.grounding is None or state.grounding.accepts(answer)):
            state.finish(answer)
            return
        if verdict.sufficient and not answer:
            entry.note = "sufficient with an empty answer: counted as not sufficient"
        elif verdict.sufficient:
            entry.note = "the answer is not a span of what was read: counted as not sufficient"
        state.memory.missing = verdict.missing.strip()

    # --- plumbing -------------------------------------------------------------------------------------------------

    def _json(self, state: CriticState, record: StepRecord, call: JsonCall, user: str) -> TurnResult | None:
        """One JSON call, its cost added to the round's step; None when the run stopped (time, context)."""
        if state.out_of_time():
            return None
        c = self.config
        index = record.index
        result = self.runner.json(state, self._chat(user), call, seed=c.seed + index, max_tokens=JSON_TOKENS)
        self.runner.add_cost(record, result)
        return None if result.stopped else result

    def _step_task(self, memory: Memory, index: int) -> str:
        lines = []
        if memory.tried:
            lines.append("Already tried: " + "; ".join(memory.tried))
        if memory.missing:
            lines.append(f"Still missing: {memory.missing}")
        note = self.budget_note(index - 1)  # what the previous Observation would have said about steps left
        lines.append("Task: STEP" + (f" ({note})" if note else ""))
        return "\n".join(lines)

    def _user(self, head: str, memory: Memory, task: str) -> str:
        """The question and the facts first (shared by every call of a round), then the task."""
        return f"{head}\n\n{memory.render()}\n{task}"

    def _chat(self, user: str) -> str:
        return self.prompt_prefix(PromptParts(system=self._system, user=user))


def _entry(kind: type[E], result: TurnResult) -> E:
    """What the trajectory keeps of one JSON call, before its parsed fields."""
    entry = kind(raw=result.text, attempts=result.attempts)
    if result.error is not None:
        entry.parse_error = result.error.to_dict()
    return entry


__all__ = ["CriticAgent", "CriticState", "Critique", "Extraction", "Memory"]
