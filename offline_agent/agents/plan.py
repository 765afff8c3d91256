"""The planner graph: planner -> executor -> evaluator -> (planner | respond), on the shared backend, tools, steps.

Each node is one grammar-constrained model call except the executor, which is plain code:
- planner: a JSON object `{"thought", "calls": [{"tool", "argument"}, ...]}` (zero calls: answer from what is known);
  the grammar lists only the tools that can run side by side (stateful ones such as lookup are left out);
- executor: drops calls already made (same tool, argument compared case- and space-insensitively) and runs the rest
  in parallel threads; every result becomes numbered evidence;
- evaluator: `{"sufficient", "missing"}`: enough evidence goes to respond, else `missing` goes back to the planner;
- respond: one `Final:` line (streamed through on_token), after at most `max_iterations` rounds (default 4);
  grounded (the product's default), its grammar is built as a ReAct step's is, from the answer form and what the
  calls returned, so the answer is a span of the evidence, one of a choice's options, or yes/no.
In chat, a follow-up question gets the previous turn only when a rule (pronouns, "and ...", "what about ...") and, when
the rule is unsure, a one-word model call say it needs it.

Every model call is a StepRecord whose PlanDetails name the node (`role`); the planner's record also holds the calls
it made, the calls it dropped, the results and the titles the searches returned (the evaluation's support recall reads
them). The graph is not a ReAct loop, so it fills in the strategy seam's `loop` itself (base.Strategy); its model
calls go through the same step runner. Limits: tools with a JSON argument take part only when their schema has a
single string property (the planner writes that string); results are cut to `observation_tokens // 2` each so four
rounds fit the context.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from offline_agent.agents.base import RunState, Strategy, call_key
from offline_agent.agents.react import refused_in_final
from offline_agent.agents.step_runner import JsonCall
from offline_agent.details import CallResult, GroundingDetails, PlanDetails, PlannedCall, ToolDetails
from offline_agent.grammar import GrammarSpec, StepGrammar, build_grammar
from offline_agent.grounding import Grounding
from offline_agent.parse import StepParser, parser_for
from offline_agent.prompts import PromptParts, agent_prompt, prompt_text, with_abstention
from offline_agent.steps import StepRecord, Trajectory, Turn

_MAX_CALLS = 3
_PARALLEL = 4


class Verdict(BaseModel):
    """The evaluator's judgement of the evidence so far."""

    sufficient: bool
    missing: str = Field(max_length=160)


class FollowUp(BaseModel):
    """Whether a chat question needs the previous turn to be understood."""

    needs_previous: bool


@lru_cache(maxsize=32)
def plan_model(tools: tuple[str, ...]) -> type[BaseModel]:
    """The planner's JSON shape for a tool set: a thought and up to three calls of those tools."""
    call = create_model(
        "PlannedCall",
        tool=(Literal[tools], ...),  # type: ignore[valid-type]
        argument=(str, Field(max_length=120)),
    )
    return create_model(
        "Plan",
        thought=(str, Field(max_length=200)),
        calls=(list[call], Field(max_length=_MAX_CALLS)),  # type: ignore[valid-type]
    )


@dataclass
class _Evidence:
    tool: str
    argument: str
    observation: str
    is_error: bool
    details: ToolDetails | None
    notice: bool = False  # the tool found nothing to show (tools/base.py Notice): no answer comes from it

    def render(self, number: int) -> str:
        return f"[{number}] {self.tool}[{self.argument}]: {self.observation}"


@dataclass
class PlanState(RunState):
    """A run of the graph: the question, the earlier turns it refers to, the evidence so far, the calls made, and
    how many model calls the run made (each call's seed follows from it)."""

    question: str = ""
    context: str = ""
    evidence: list[_Evidence] = field(default_factory=list)
    made: set[str] = field(default_factory=set)
    calls: int = 0


class PlanAgent(Strategy):
    """Plan tool calls, run them in parallel, judge the evidence, repeat or answer."""

    name = "plan"
    prompt_name = "plan"
    uses_thought = False
    details_type = PlanDetails
    max_iterations = 4

    def setup(self) -> None:
        self.plannable = [tool for tool in self.tools if _plannable(tool)]
        names = tuple(tool.name for tool in self.plannable)
        self.plan_call = JsonCall(plan_model(names)) if names else None
        self.verdict_call = JsonCall(Verdict)
        self.followup_call = JsonCall(FollowUp)
        respond_spec = GrammarSpec(thought=False, allow_action=False, final_max=self.config.final_max)
        self.respond_grammar = build_grammar(respond_spec)
        self.respond_parser = parser_for(respond_spec)
        self.grounded_respond_spec = replace(respond_spec, grounded=True, abstain=self.options.abstain)
        self._system = self.prompt_parts("").system

    @property
    def iterations(self) -> int:
        """Planner rounds: the class default, or fewer when max_steps is set lower."""
        return max(1, min(self.max_iterations, self.config.max_steps))

    @property
    def grammar_sha256(self) -> str:
        parts = [self.respond_grammar.sha256, self.verdict_call.grammar.sha256, self.followup_call.grammar.sha256]
        if self.plan_call is not None:
            parts.append(self.plan_call.grammar.sha256)
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def prompt_parts(self, question: str, history: Sequence[Turn] = ()) -> PromptParts:
        return agent_prompt(
            self.prompt_name,
            question,
            self.plannable,
            max_steps=self.iterations,
            history=history,
            abstain=self.options.abstain,
        )

    # --- chat: does a follow-up need the previous turn? ---------------------------------------------------------

    def context_for(self, question: str, history: Sequence[Turn]) -> list[Turn]:
        """The previous answered turn when the question refers back to it, else nothing."""
        answered = [turn for turn in history if turn.answer]
        if not answered:
            return []
        verdict = follow_up_rule(question)
        if verdict is None:
            verdict = self._ask_follow_up(question, answered[-1])
        return [answered[-1]] if verdict else []

    def _ask_follow_up(self, question: str, turn: Turn) -> bool:
        user = (
            f"Previous question: {turn.question}\nPrevious answer: {turn.answer}\nNew question: {question}\n\n"
            "Can the new question be understood without the previous one? Reply with JSON "
            '{"needs_previous": true} if it refers to the previous question or answer, else {"needs_previous": false}.'
        )
        # Before the run starts: no state, no deadline; a prompt too long for the context counts as "needs it".
        result = self.runner.json(None, self._chat(user), self.followup_call, seed=self.config.seed, max_tokens=16)
        return bool(result.value.needs_previous) if result.value is not None else True

    # --- the graph --------------------------------------------------------------------------------------------

    def new_trajectory(self, question: str, parts: PromptParts, turns: Sequence[Turn]) -> Trajectory:
        trajectory = super().new_trajectory(question, parts, turns)
        trajectory.max_steps = self.iterations
        return trajectory

    def new_state(self, trajectory: Trajectory, parts: PromptParts, deadline: float | None) -> PlanState:
        turns = trajectory.history
        context = "".join(f"Earlier question: {t.question}\nIts answer: {t.answer}\n" for t in turns)
        return PlanState(trajectory, deadline=deadline, question=trajectory.question, context=context)

    def loop(self, state: RunState) -> None:
        """Planner, executor and evaluator rounds until the evidence suffices (or the rounds run out), then respond."""
        assert isinstance(state, PlanState)
        missing = ""
        for iteration in range(self.iterations):
            if state.out_of_time():
                return
            calls = self._plan(state, iteration, missing)
            if calls is None:
                return
            if not calls:
                break  # the planner wants to answer from what is known
            if state.out_of_time():
                return
            verdict = self._evaluate(state)
            if verdict is None:
                return
            if verdict.sufficient:
                break
            missing = verdict.missing
        self._respond(state)

    def _plan(self, state: PlanState, iteration: int, missing: str) -> list[Any] | None:
        """One planner call and the executor; returns the calls it ran ([] to answer now, None when stopped)."""
        if self.plan_call is None:
            return []
        hint = f"Still missing: {missing}\n" if missing else ""
        user = self._user(state, f"{hint}{prompt_text('plan_planner.txt').strip()}")
        record, details = self._record(state, "planner", iteration=iteration + 1)
        plan = self._json_step(state, record, self.plan_call, user)
        if plan is None:
            return None
        record.thought = plan.thought
        fresh, dropped = [], []
        for call in plan.calls:
            key = call_key(call.tool, call.argument)
            (dropped if key in state.made or any(key == k for k, _ in fresh) else fresh).append((key, call))
        details.calls = [PlannedCall(c.tool, c.argument) for c in plan.calls]
        details.dropped = [PlannedCall(c.tool, c.argument) for _, c in dropped]
        if plan.calls and not fresh:
            # Everything planned was already done: nothing new can come from another round.
            details.results = []
            return []
        results = self._execute([call for _, call in fresh])
        state.made.update(key for key, _ in fresh)
        details.results = [CallResult(e.tool, e.argument, e.observation, e.is_error) for e in results]
        details.titles = [title for e in results for title in (e.details.titles or [] if e.details else [])]
        record.observation = "\n".join(e.render(len(state.evidence) + n) for n, e in enumerate(results, start=1))
        record.tool_error = any(e.is_error for e in results)
        state.evidence.extend(results)
        self.step_done(record)
        return [call for _, call in fresh]

    def _execute(self, calls: list[Any]) -> list[_Evidence]:
        """Run independent calls side by side; results come back in plan order, callbacks fire on this thread."""
        if not calls:
            return []
        arguments = [self._argument(call) for call in calls]
        if self.callbacks.on_tool_start:
            for call, argument in zip(calls, arguments, strict=True):
                self.callbacks.on_tool_start(call.tool, argument)
        with ThreadPoolExecutor(max_workers=min(_PARALLEL, len(calls))) as pool:
            raw = list(pool.map(self._run_call, calls, arguments))
        budget = max(32, self.options.observation_tokens // 2)
        results = [replace(e, observation=self.fit_observation(e.observation, budget)) for e in raw]
        if self.callbacks.on_tool_end:
            for evidence, argument in zip(results, arguments, strict=True):
                self.callbacks.on_tool_end(evidence.tool, argument, evidence.observation, evidence.is_error)
        return results

    def _argument(self, call: Any) -> Any:
        """The planner writes every argument as text; a JSON tool gets it as its single string property."""
        tool = self.tools.get(call.tool)
        if tool.schema is None:
            return call.argument
        return {next(iter(tool.schema["properties"])): call.argument}

    def _run_call(self, call: Any, argument: Any) -> _Evidence:
        tool = self.tools.get(call.tool)
        result = self.tools.run(call.tool, argument)
        details = ToolDetails.from_dict(getattr(tool, "last_details", None))
        return _Evidence(call.tool, call.argument, result.observation, result.is_error, details, result.notice)

    def _evaluate(self, state: PlanState) -> Verdict | None:
        user = self._user(state, prompt_text("plan_evaluator.txt").strip())
        record, details = self._record(state, "evaluator")
        verdict = self._json_step(state, record, self.verdict_call, user, required=False)
        if state.stopped:
            return None
        if verdict is None:
            verdict = Verdict(sufficient=False, missing="")
        details.sufficient, details.missing = verdict.sufficient, verdict.missing
        self.step_done(record)
        return verdict

    def _respond(self, state: PlanState) -> None:
        user = self._user(state, with_abstention(prompt_text("plan_respond.txt"), self.options.abstain).strip())
        record, details = self._record(state, "respond")
        record.final_only = True
        started = time.monotonic()
        grammar, parser, grounding = self._respond_grammar(state)
        if grounding is not None:  # the grammar's cost is in eval's rows, as a ReAct step's is
            details.grounding = GroundingDetails(len(grounding), round(time.monotonic() - started, 4))
        turn = self.runner.step(
            state,
            record,
            self._chat(user),
            grammar.gbnf,  # GBNF only, as before the backend seam took a grammar's Lark form too
            parser,
            seed=self.config.seed + state.calls,
            label="respond",
            stop=("\n\n",),
            grounding=grounding,
        )
        state.calls += 1
        if turn.value is not None:
            record.final = turn.value.final
            state.finish(turn.value.final)
            if details.grounding is not None:
                details.grounding.refused = refused_in_final(record.raw, turn.last_rejections)
        self.step_done(record)

    def _respond_grammar(self, state: PlanState) -> tuple[StepGrammar, StepParser, Grounding | None]:
        """The responder's grammar, its parser and what its Final is checked against. Grounded, the Final is built
        as a ReAct step's is: from the answer form (a choice's options, yes/no) and, for an open question, what the
        calls returned (not a failed call, nor one that found nothing); with nothing to answer from, it is free,
        as on ReAct's last step."""
        grounding = self.new_grounding(state.trajectory, form := self.new_form(state.question))
        if grounding is None:
            return self.respond_grammar, self.respond_parser, None
        if form is None or form.reads_observations:
            for evidence in state.evidence:
                if not evidence.is_error and not evidence.notice:
                    grounding.add(evidence.observation)
        if grounding.is_empty:
            return self.respond_grammar, self.respond_parser, None
        spec = self.grounded_respond_spec
        return build_grammar(spec, grounding), parser_for(spec), grounding

    # --- plumbing -----------------------------------------------------------------------------------------------

    def _record(self, state: PlanState, role: str, **details: Any) -> tuple[StepRecord, PlanDetails]:
        record = StepRecord(index=len(state.trajectory.steps), raw="", details=PlanDetails(role=role, **details))
        state.trajectory.steps.append(record)
        if self.callbacks.on_step_start:
            self.callbacks.on_step_start(record.index, role == "respond")
        return record, record.ensure_details(PlanDetails)

    def _json_step(
        self, state: PlanState, record: StepRecord, call: JsonCall, user: str, *, required: bool = True
    ) -> Any:
        """One JSON node: its value, or None (recorded; the run stops when the node is required or time ran out)."""
        result = self.runner.json(state, self._chat(user), call, seed=self.config.seed + state.calls, stream=True)
        state.calls += 1
        self.runner.book(record, result)
        if result.stopped:
            self.step_done(record)
            return None
        if result.error is not None:
            if required:
                state.stop("error", f"{record.ensure_details(PlanDetails).role}: {result.error}")
                self.step_done(record)
            return None
        return result.value

    def _user(self, state: PlanState, instruction: str) -> str:
        """The user message: the question and the evidence first (a prefix shared by every call), then the task."""
        lines = [state.context + f"Question: {state.question}", ""]
        if state.evidence:
            lines += ["Evidence:", *(e.render(n) for n, e in enumerate(state.evidence, start=1)), ""]
        else:
            lines += ["Evidence: none yet.", ""]
        return "\n".join(lines) + "\n" + instruction

    def _chat(self, user: str) -> str:
        return self.prompt_prefix(PromptParts(system=self._system, user=user))


_REFERS_BACK = re.compile(
    r"^(and|but|also|what about|how about|then|so)\b|\b(he|she|it|they|him|her|his|hers|its|their|them|this|that|"
    r"these|those|there|the same|the latter|the former|the other)\b",
    re.IGNORECASE,
)
_NAME = re.compile(r"(?<!^)(?<![.?!] )\b[A-Z][a-z]+")


def follow_up_rule(question: str) -> bool | None:
    """True: clearly refers back; False: clearly stands alone; None: unsure (ask the model)."""
    words = question.split()
    refers = bool(_REFERS_BACK.search(question))
    named = bool(_NAME.search(question))
    if refers and (not named or len(words) <= 4 or re.match(r"^(and|what about|how about)\b", question, re.I)):
        return True
    if not refers and (named or len(words) >= 6):
        return False
    return None


def _plannable(tool: Any) -> bool:
    """Tools the planner may call in parallel: stateless, with a text argument (or one string property)."""
    if getattr(tool, "is_stateful", False):
        return False
    if tool.schema is None:
        return True
    properties = tool.schema.get("properties", {})
    return len(properties) == 1 and next(iter(properties.values())).get("type") == "string"


__all__ = ["FollowUp", "PlanAgent", "PlanState", "Verdict", "follow_up_rule", "plan_model"]
