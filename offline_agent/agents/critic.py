"""The critic agent (`--agent critic`): a ReAct search loop that keeps a memory of facts instead of raw Observations.

Why: a small model loses the thread in a long scratchpad of search results. Here, after every Observation, two
grammar-constrained JSON calls condense it:
- extraction `{"useful", "facts"}`: up to four short facts from the Observation that bear on the question, added to
  the memory (normalised and deduplicated; only when `useful` is true);
- critic `{"sufficient", "answer", "missing"}`: whether the memory answers the question. When it does (with a
  non-empty answer) the run stops with the critic's answer, stop reason `final`.
Otherwise the next step's prompt shows the question, the numbered facts, the calls already made and what is missing,
in place of the Observations, and the model writes the next step under the usual step grammar (Thought, then Action
or Final; Final only on the last round, as in ReActAgent). A Final the model writes itself is the answer.

Prompt layout, for llama.cpp's prefix cache: every call shares one system message (the step instructions and
examples, then the extraction and critic instructions with their examples: the same for every question) and begins
its user message with the question and the facts, which only grow; the part that differs per call comes last.

Each round is one StepRecord: the search step as ReActAgent records it (the tool's `details`, such as the search
titles the evaluation reads, are kept), plus `details["extraction"]`, `details["critic"]` and `details["memory"]`;
the JSON calls' tokens, times and seconds are added to the step's. A JSON reply that fails its parser (possible with
the grammar off) is recorded there: the round goes on without its facts, or counts as not sufficient.

Limits: rounds are min(`max_rounds` = 4, `max_steps`); an Observation that is a tool error is not extracted, and the
critic is asked only when the memory gained a fact (its input would be unchanged otherwise); the memory keeps at most
24 facts (further ones are counted in `details["extraction"]["dropped"]`). Chat history is shown as ReActAgent shows it.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from string import Template
from typing import Annotated, Any

from pydantic import BaseModel, Field

from offline_agent.agents.calls import JsonCall, JsonResult, call_json
from offline_agent.agents.react import AgentCallbacks, AgentConfig, ReActAgent, _RunState
from offline_agent.backends.base import Backend
from offline_agent.errors import ContextOverflowError
from offline_agent.prompts import PromptParts, describe_tools, history_text, prompt_text
from offline_agent.steps import StepRecord, Turn
from offline_agent.tools.base import ToolRegistry

FACT_MAX = 160
MEMORY_MAX = 24
JSON_TOKENS = 160


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


class CriticAgent(ReActAgent):
    """Search, condense each Observation into facts, ask a critic whether they answer the question, repeat."""

    name = "critic"
    prompt_name = "critic"
    max_rounds = 4

    def __init__(
        self,
        backend: Backend,
        tools: ToolRegistry,
        config: AgentConfig | None = None,
        callbacks: AgentCallbacks | None = None,
    ) -> None:
        config = config or AgentConfig()
        # --max-steps lowers the round limit; the last round is Final-only through the inherited machinery.
        config = replace(config, max_steps=min(config.max_steps, self.max_rounds))
        super().__init__(backend, tools, config, callbacks)
        self.extract_call = JsonCall(Extraction)
        self.critic_call = JsonCall(Critique)
        self._system = self.prompt_parts("").system

    @property
    def grammar_sha256(self) -> str:
        parts = [super().grammar_sha256, self.extract_call.grammar.sha256, self.critic_call.grammar.sha256]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def prompt_parts(self, question: str, history: Sequence[Turn] = ()) -> PromptParts:
        tools = list(self.tools) if self.uses_tools else []
        system = Template(prompt_text("critic_system.txt")).substitute(
            tools=describe_tools(tools),
            max_steps=self.config.max_steps,
            examples=prompt_text("critic_examples.txt").strip(),
            extract=prompt_text("critic_extract.txt").strip(),
            judge=prompt_text("critic_judge.txt").strip(),
        )
        return PromptParts(system=system.strip(), user=history_text(history) + f"Question: {question.strip()}")

    # --- the rounds -----------------------------------------------------------------------------------------------

    def _loop(self, state: _RunState, prefix: str) -> None:
        # `prefix` (the ReAct prompt) is not used: each round's prompt is rebuilt from the memory.
        c = self.config
        trajectory = state.trajectory
        head = self.prompt_parts(trajectory.question, trajectory.history).user
        memory = Memory()
        for index in range(c.max_steps):
            if self._out_of_time(state):
                return
            final_only = self._final_only(index)
            if self.callbacks.on_step_start:
                self.callbacks.on_step_start(index, final_only)
            prompt = self._chat(self._user(head, memory, self._step_task(memory, index)))
            record, step = self._generate_step(state, prompt, index, final_only)
            trajectory.steps.append(record)
            if step is None:
                self._done(record)
                return
            if step.is_final:
                record.final = step.final
                trajectory.answer = step.final
                trajectory.stop_reason = "final"
                self._done(record)
                return
            assert step.action is not None
            self._act(state, record, step)
            if step.action.render() not in memory.tried:  # a refused repeat is listed once
                memory.tried.append(step.action.render())
            finished = self._reflect(state, record, memory, head, index)
            self._done(record)
            if finished:
                return
        trajectory.stop_reason = "max_steps"

    def _reflect(self, state: _RunState, record: StepRecord, memory: Memory, head: str, index: int) -> bool:
        """The extraction and critic calls after one Observation; True when the run ends here."""
        started = time.monotonic()
        record.details = dict(record.details or {})
        try:
            added = self._extract(state, record, memory, head, index)
            if added is None:
                return True
            if not added:
                record.details["critic"] = {"skipped": "no new facts"}
                return False
            return self._judge(state, record, memory, head, index)
        finally:
            record.details["memory"] = list(memory.facts)
            record.seconds = round(record.seconds + time.monotonic() - started, 3)

    def _extract(self, state: _RunState, record: StepRecord, memory: Memory, head: str, index: int) -> list[str] | None:
        """Facts the Observation added to the memory ([] for none; None: the run stopped)."""
        if record.tool_error:
            record.details["extraction"] = {"skipped": "the tool failed"}
            return []
        call = memory.tried[-1]
        task = f"Tool call: {call}\nObservation: {record.observation}\nTask: EXTRACT"
        result = self._json(state, record, self.extract_call, self._user(head, memory, task), index)
        if result is None:
            return None
        entry = _entry(result)
        record.details["extraction"] = entry
        if result.value is None:
            return []
        value: Extraction = result.value
        entry.update(useful=value.useful, facts=list(value.facts))
        if not value.useful:
            return []
        added, dropped = memory.add(value.facts)
        entry["added"] = added
        if dropped:
            entry["dropped"] = dropped
        return added

    def _judge(self, state: _RunState, record: StepRecord, memory: Memory, head: str, index: int) -> bool:
        """Ask the critic; True when the run ends (answered, or stopped)."""
        result = self._json(state, record, self.critic_call, self._user(head, memory, "Task: JUDGE"), index)
        if result is None:
            return True
        entry = _entry(result)
        record.details["critic"] = entry
        if result.value is None:
            entry["sufficient"] = False  # an unreadable verdict counts as not sufficient
            return False
        verdict: Critique = result.value
        answer = verdict.answer.strip()
        entry.update(sufficient=verdict.sufficient, answer=verdict.answer, missing=verdict.missing)
        if verdict.sufficient and answer:
            state.trajectory.answer = answer
            state.trajectory.stop_reason = "final"
            return True
        if verdict.sufficient:
            entry["note"] = "sufficient with an empty answer: counted as not sufficient"
        memory.missing = verdict.missing.strip()
        return False

    # --- plumbing -------------------------------------------------------------------------------------------------

    def _json(self, state: _RunState, record: StepRecord, call: JsonCall, user: str, index: int) -> JsonResult | None:
        """One JSON call, its cost added to the round's step; None when the run stopped (time, context)."""
        if self._out_of_time(state):
            return None
        c = self.config
        try:
            result = call_json(
                self, call, self._chat(user), seed=c.seed + index, max_tokens=JSON_TOKENS, deadline=state.deadline
            )
        except ContextOverflowError as exc:
            state.trajectory.stop_reason = "error"
            state.trajectory.error = str(exc)
            return None
        record.usage += result.usage
        record.timings += result.timings
        if result.finish_reason == "interrupted":
            state.trajectory.stop_reason = "timeout"
            return None
        return result

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

    def _done(self, record: StepRecord) -> None:
        if self.callbacks.on_step:
            self.callbacks.on_step(record)


def _entry(result: JsonResult) -> dict[str, Any]:
    """What the trajectory keeps of one JSON call, before its parsed fields."""
    entry: dict[str, Any] = {"raw": result.text, "attempts": result.attempts}
    if result.error is not None:
        entry["parse_error"] = result.error.to_dict()
    return entry


__all__ = ["CriticAgent", "Critique", "Extraction", "Memory"]
