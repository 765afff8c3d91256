"""The ReAct loop: one grammar-constrained model turn per step, a tool call per Action, until a Final answer.

What the loop guarantees:
- every turn goes through the step runner (step_runner.py): generated under the step grammar (unless the grammar
  is switched off, for measuring format errors) and checked by the Lark parser; a step the parser rejects is
  recorded with its labelled error, retried once with twice the tokens if it was cut off at max_tokens, and
  otherwise ends the run with stop reason `error`: the loop never guesses what the model meant;
- on the last allowed step the grammar allows only `Final` (early_stopping "generate"), or the step is an ordinary
  one and a run without a Final stops with stop reason `max_steps` (early_stopping "force");
- after each Observation the model is told how many steps it has left (budget_hint), appended to that line only;
- a tool failure becomes the Observation; a repeated identical call is not run again, nor a stateful call (lookup)
  that returns what it returned last time;
- Observations are cut to a token budget; the prompt only grows, so llama.cpp reuses its cache, and the part of it
  every question shares is warmed first (`Backend.warm`);
- with `grounded`, each step's grammar allows only a Final read in the question or an Observation; with
  `min_searches`, only a search may be written until that many searches succeeded; with `first_search`, the run
  opens with a search for the question, written by the agent;
- it stops on Final, max steps, or max seconds, and records why;
- earlier turns of a chat are shown before the question; `context_for` picks which.

The hooks a strategy built on this loop fills in (all public; react, act, cot and standard are settings of it):
`step_grammar` (the grammar of each step, from the run so far), `step_prompt` (what the model is shown for the
next step), `review_step` (check and annotate a parsed step; may refuse it), `check_final` (accept or refuse a
Final), `final_answer` (the answer a Final that stands gives), `after_observation` (what happens once a tool has
answered; may end the run), `opening_action` (the Action the agent opens the run with, if any), and
`budget_note` (what an Observation says about the steps left).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar

from offline_agent import injection
from offline_agent.agents.base import RunState, Strategy, call_key
from offline_agent.agents.options import ReActOptions, StrategyOptions
from offline_agent.agents.step_runner import StepRunner, TurnResult
from offline_agent.answer_form import AnswerForm, answer_form
from offline_agent.backends.base import aside
from offline_agent.checks.support import Support
from offline_agent.details import GroundingDetails, RefusalDetails, ToolDetails
from offline_agent.grammar import ABSTAIN, GrammarSpec, StepGrammar, build_grammar
from offline_agent.grounding import YES_NO, Grounding
from offline_agent.hops import READING_TOOLS, SEARCH_TOOLS
from offline_agent.parse import StepParser, WordParser, parser_for
from offline_agent.prompts import PromptParts, scratchpad_entry
from offline_agent.steps import Action, Step, StepRecord, Trajectory, Usage
from offline_agent.tools.documents import documents_of

# The Thought of the first_search step.
OPENING_THOUGHT = "First I search for the question itself."
# Tokens around an Observation in the scratchpad ("Observation: ", line breaks, a budget note), with room to spare.
OBSERVATION_FRAME = 48


@dataclass
class LoopState(RunState):
    """A run of the step loop: its prompt parts, the chat-template prompt up to the first step, the scratchpad of
    steps and Observations after it, the tool calls made (by their call_key, with the step that made them), what
    each stateful call last returned, what the run has read (grounded runs), and the index of the next step."""

    parts: PromptParts | None = None
    prefix: str = ""
    scratchpad: str = ""
    calls: dict[str, int] = field(default_factory=dict)
    returned: dict[str, tuple[int, str]] = field(default_factory=dict)
    grounding: Grounding | None = None
    # With search_spans: the question and every Observation found, with nothing excluded (what a search may name).
    reading: Grounding | None = None
    form: AnswerForm | None = None
    next_index: int = 0
    last_turn: Usage = field(default_factory=Usage)  # the token counts of the last step's own model call
    found: bool = True  # whether the last tool result was text the tool found (ToolResult.evidence)


class ReActAgent(Strategy):
    """Thought, then Action or Final, step after step, over a backend and a tool registry."""

    name = "react"
    prompt_name = "react"
    uses_thought = True
    uses_tools = True
    options_type: ClassVar[type[StrategyOptions]] = ReActOptions
    options: ReActOptions

    def setup(self) -> None:
        c = self.config
        self.spec = GrammarSpec(
            tools=self.tools.specs(),
            thought=self.uses_thought,
            allow_action=self.uses_tools and len(self.tools) > 0,
            allow_final=True,
            thought_max=c.thought_max,
            argument_max=c.argument_max,
            final_max=c.final_max,
            grounded=self.options.grounded,
            abstain=self.options.abstain,
            span_arguments=READING_TOOLS if self.spans_only else (),
        )
        self.grammar: StepGrammar = build_grammar(self.spec)
        self.final_grammar: StepGrammar = build_grammar(self.spec.final_only())
        self.parser: StepParser = parser_for(self.spec)
        self.final_parser: StepParser = parser_for(self.spec.final_only())
        # A step before min_searches successful searches: a search only (when the strategy can search).
        finders = tuple(t.name for t in self.spec.callable_tools if t.name in SEARCH_TOOLS)
        self.search_spec = replace(self.spec, allow_final=False, allowed_tools=finders) if finders else self.spec
        self.search_grammar: StepGrammar = build_grammar(self.search_spec)
        self.search_parser: StepParser = parser_for(self.search_spec)
        # A grounded step before anything allows an answer (an open question, nothing read yet): no Final; the
        # last step then answers under the ungrounded grammar (there is nothing to ground it in).
        self.no_final_spec = replace(self.spec, allow_final=False) if self.spec.callable_tools else self.spec
        free_final = replace(self.spec.final_only(), grounded=False)
        self.free_final_grammar: StepGrammar = build_grammar(free_final)
        self.free_final_parser: StepParser = parser_for(free_final)

    @property
    def spans_only(self) -> bool:
        """Whether search, lookup and retrieve may only name a span of what the run has read (search_spans)."""
        return self.options.search_spans

    @property
    def grammar_sha256(self) -> str:
        return hashlib.sha256(f"{self.grammar.sha256}\0{self.final_grammar.sha256}".encode()).hexdigest()

    def new_state(self, trajectory: Trajectory, parts: PromptParts, deadline: float | None) -> LoopState:
        form = self.new_form(trajectory.question)
        return LoopState(
            trajectory,
            deadline=deadline,
            parts=parts,
            prefix=self.prompt_prefix(parts),
            grounding=self.new_grounding(trajectory, form),
            reading=Grounding([trajectory.question], yes_no=False) if self.spans_only else None,
            form=form,
        )

    # --- the loop ---------------------------------------------------------------------------------------------------

    def begin(self, state: RunState) -> None:
        """Warm the backend's cache with the prompt start every question shares, then the opening step, if any."""
        assert isinstance(state, LoopState) and state.parts is not None
        self.backend.warm(self.shared_prefix(state.parts))
        action = self.opening_action(state)
        if action is not None:
            self.open_with(state, action)

    def open_with(self, state: LoopState, action: Action) -> None:
        """Step 0 written by the agent: `action`, as if the model had written it, with its Observation."""
        thought = OPENING_THOUGHT if self.uses_thought else None
        raw = (f"Thought: {OPENING_THOUGHT}\n" if self.uses_thought else "") + f"Action: {action.render()}"
        if self.callbacks.on_step_start:
            self.callbacks.on_step_start(0, False)
        record = StepRecord(index=0, raw=raw, thought=thought)
        self.details(record).opening = True
        state.trajectory.steps.append(record)
        step = Step(thought=thought, action=action)
        observation = self.act(state, record, step)
        self.after_observation(state, record, step, observation)
        self.step_done(record)
        state.next_index = 1

    def loop(self, state: RunState) -> None:
        assert isinstance(state, LoopState)
        c = self.config
        trajectory = state.trajectory
        for index in range(state.next_index, c.max_steps):
            if state.out_of_time():
                return
            final_only = self.is_final_only(index) or (c.grammar and not self.room_after(state))
            if self.callbacks.on_step_start:
                self.callbacks.on_step_start(index, final_only)
            started = time.monotonic()
            grammar, parser = self.step_grammar(state, index, final_only)
            # What the Final is checked against: what the grammar was built from, or (a grammar built once, with
            # no Final in it) everything read.
            grounding = grammar.grounding if grammar.grounding is not None else state.grounding
            grounding = grounding if grammar.spec.grounded else None
            record = StepRecord(index=index, raw="", final_only=final_only)
            grounded = grammar.spec.grounded and c.grammar and grammar.spec.allow_final
            if grounded:
                built = round(time.monotonic() - started, 4)
                self.details(record).grounding = GroundingDetails(len(grounding or ()), built)
            prompt = self.step_prompt(state, index)
            turn = self.runner.step(
                state,
                record,
                prompt,
                grammar,
                parser,
                seed=c.seed + index,
                label=f"step {index + 1}",
                grounding=grounding,
            )
            state.last_turn = turn.last_usage
            if turn.rejections:  # where the grammar overruled the model's first choice
                self.details(record).rejections = turn.rejections
            if grounded and turn.value is not None and turn.value.is_final:
                details = self.details(record)
                assert details.grounding is not None
                details.grounding.refused = refused_in_final(record.raw, turn.last_rejections)
            step = self.review_step(state, record, turn.value)
            trajectory.steps.append(record)
            if step is None:
                self.step_done(record)
                return
            if step.is_final and step.final == ABSTAIN:  # "the documents do not say": nothing to check
                record.final = ABSTAIN
                state.abstain()
                self.step_done(record)
                return
            if step.is_final:
                assert step.final is not None
                refusal = self.dictated(state, record, step)
                refusal = refusal or (None if final_only else self.check_final(state, record, step, turn))
                if refusal is None:
                    record.final = self.final_answer(state, record, step)
                    if self.unsupported(state, record, record.final):
                        state.abstain()  # the step keeps the answer it proposed; the run gives none
                    else:
                        state.finish(record.final)
                    self.step_done(record)
                    return
                self.refuse_final(state, record, step, refusal)
                self.step_done(record)
                continue
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

    def room_after(self, state: LoopState) -> bool:
        """Whether the context window holds this step, an Observation (or a refusal) and one more step. When it does
        not, the step may only answer: an Action would leave the next step no room, and the run would end in a
        context overflow with no answer. The prompt is bounded from the last step's own model call (its prompt,
        what it wrote, an Observation at its budget), so nothing is tokenized again."""
        last = state.last_turn
        if not last.prompt_tokens:
            return True  # the first step, or one after the opening search: the backend says if the prompt fits
        c = self.config
        observation = self.options.observation_tokens + OBSERVATION_FRAME
        prompt = last.prompt_tokens + last.generated_tokens + observation
        return prompt + 2 * c.max_tokens + observation <= self.backend.context_size

    def step_grammar(self, state: LoopState, index: int, final_only: bool) -> tuple[StepGrammar, StepParser]:
        """The grammar and parser of step `index`, which may depend on the run so far (`state.trajectory`).

        Before min_searches successful searches, or where must_search says so: a search only. Grounded: the
        grammar's Final is rebuilt from what the run has read, `final_grounding` (the parser stays the same; it
        checks the span against the grammar's `grounding`).
        """
        if final_only:
            return self.final_step_grammar(state)
        spent = self.spent_calls(state)
        reading = state.reading
        if self.searches(state) < self.options.min_searches or self.must_search(state):
            fresh = spent or reading is not None
            grammar = build_grammar(self.search_spec, spent=spent, reading=reading) if fresh else self.search_grammar
            return grammar, self.search_parser
        grounding = self.final_grounding(state, False)
        if grounding is not None and grounding.is_empty:
            return build_grammar(self.no_final_spec, spent=spent, reading=reading), self.parser
        if grounding is not None or spent or reading is not None:
            return build_grammar(self.spec, grounding, spent, reading), self.parser
        return self.grammar, self.parser

    def final_step_grammar(self, state: LoopState) -> tuple[StepGrammar, StepParser]:
        """The grammar and parser of a step that may only answer: grounded in what the run has read where the run is
        grounded (with nothing read yet, the ungrounded Final: there is nothing to ground it in)."""
        grounding = self.final_grounding(state, True)
        if grounding is None:
            return self.final_grammar, self.final_parser
        if grounding.is_empty:
            return self.free_final_grammar, self.free_final_parser
        return build_grammar(self.spec.final_only(), grounding), self.final_parser

    def final_grounding(self, state: LoopState, final_only: bool) -> Grounding | None:
        """What a grounded step's Final may be written from (None: the run is not grounded). ReAct: all the run has
        read (`state.grounding`); agents/verify.py narrows a step no check sees to the answers of the kind asked."""
        return state.grounding

    def must_search(self, state: LoopState) -> bool:
        """Whether this step may only search (no Final, no other tool), over and above min_searches. ReAct: never;
        agents/verify.py after a refusal that says what to search for."""
        return False

    def spent_calls(self, state: LoopState) -> dict[str, list[str]]:
        """With fresh_calls, the calls the loop would refuse as repeats now, by tool (arguments as call_key writes
        them): every call that succeeded, and a stateful call the tool says is exhausted (a lookup keyword with no
        further match in the current document). Empty without fresh_calls."""
        spent: dict[str, list[str]] = {}
        if not self.options.fresh_calls:
            return spent
        for key in state.calls:
            tool, argument = key.split("\0", 1)
            spent.setdefault(tool, []).append(argument)
        for key in state.returned:
            tool, argument = key.split("\0", 1)
            exhausted = getattr(self.tools.get(tool), "exhausted", None)
            if exhausted is not None and exhausted(argument):
                spent.setdefault(tool, []).append(argument)
        return spent

    def searches(self, state: LoopState) -> int:
        """Searches (search or retrieve calls) of this run that succeeded."""
        steps = state.trajectory.steps
        return sum(1 for step in steps if step.action in SEARCH_TOOLS and not step.tool_error)

    def opening_action(self, state: LoopState) -> Action | None:
        """The Action the run opens with, written by the agent: with first_search, search[the question]; None when
        not configured (or there is no search tool, or only one step, which must answer)."""
        c = self.config
        if not (self.options.first_search and self.uses_tools and "search" in self.tools and c.max_steps > 1):
            return None
        return question_search(state.trajectory.question)

    def step_prompt(self, state: LoopState, index: int) -> str:
        """What the model is shown for step `index`: the prompt, then every step and Observation so far."""
        return state.prefix + state.scratchpad

    def review_step(self, state: LoopState, record: StepRecord, step: Step | None) -> Step | None:
        """Check and annotate the step just generated (None: it did not parse or the run stopped). Return None to
        refuse it, after ending the run with state.stop."""
        return step

    def check_final(self, state: LoopState, record: StepRecord, step: Step, turn: TurnResult) -> str | None:
        """Accept the Final just written (None), or refuse it with the Observation that says why; the run then goes
        on. Never asked on a step that may only answer. ReAct accepts every Final; agents/verify.py checks them."""
        return None

    def dictated(self, state: LoopState, record: StepRecord, step: Step) -> str | None:
        """Refuse a Final that only an instruction planted in a document read gives (injection.py), on every step,
        the last too (a run that ends there ends without an answer rather than with the payload); a grounded run may
        not write it again. None for every other answer."""
        assert step.final is not None
        read = [done.observation for done in state.trajectory.steps if done.action is not None and done.observation]
        planted = injection.dictated_by(step.final, read)
        if planted is None:
            return None
        if state.grounding is not None:
            state.grounding.exclude(step.final)
        self.details(record).refusal = RefusalDetails("dictated", step.final)
        return injection.refusal(step.final, planted)

    def final_answer(self, state: LoopState, record: StepRecord, step: Step) -> str:
        """The answer a Final that stands gives (checked, or on a step that may only answer): what it wrote. A
        strategy may write it out in the form the question asks for (agents/verify.py: a date in full)."""
        assert step.final is not None
        return step.final

    def unsupported(self, state: LoopState, record: StepRecord, answer: str) -> bool:
        """With the support_check option, whether what the run has read does not support `answer` to an open
        question (checks/support.py); the verdict is recorded on the step as a refusal `unsupported (why)`, and
        the judge's model call is booked on it."""
        question = state.trajectory.question
        if not self.options.support_check or answer.strip() in YES_NO:
            return False
        if (state.form or answer_form(question)).kind != "open":
            return False

        def ask(system: str, user: str, words: WordParser) -> str | None:
            prompt = self.prompt_prefix(PromptParts(system=system, user=user))
            with aside(self.backend):  # the run's own prompt stays in the cache
                result = self.runner.word(state, prompt, words, seed=self.config.seed)
            StepRunner.add_cost(record, result)
            return result.value

        def find(name: str) -> str:
            shown = source.open_found(name) if source is not None else None
            return shown.text if shown is not None else ""

        source = documents_of(self.tools)
        read = [step.observation for step in state.trajectory.steps if step.observation]
        verdict = Support().verdict(question, answer, read, ask, find if source is not None else None)
        if not verdict.supported:
            self.details(record).refusal = RefusalDetails(f"unsupported ({verdict.reason})", answer)
        return not verdict.supported

    def refuse_final(self, state: LoopState, record: StepRecord, step: Step, observation: str) -> None:
        """Record a refused Final: the step keeps its text, the refusal is its Observation, and the run goes on."""
        assert step.final is not None
        record.observation = observation
        details = self.details(record)
        if details.refusal is None:
            details.refusal = RefusalDetails("refused", step.final)
        state.scratchpad += scratchpad_entry(record.raw, observation)

    def reads(self, state: LoopState) -> bool:
        """Whether what the tools return may be a grounded run's answer (an open question, or no answer form)."""
        return state.grounding is not None and (state.form is None or state.form.reads_observations)

    def after_observation(self, state: LoopState, record: StepRecord, step: Step, observation: str) -> None:
        """What happens once the tool has answered: a grounded run reads the Observation (unless the tool failed
        or found nothing, a Notice, or the answer form takes the answer from the question), and the step and its
        Observation join the scratchpad."""
        self.read_observation(state, record, observation)
        state.scratchpad += scratchpad_entry(record.raw, observation, self.budget_note(record.index))

    def read_observation(self, state: LoopState, record: StepRecord, observation: str) -> None:
        """A grounded run reads the Observation: its spans may be the answer from now on (not when the tool failed
        or found nothing, nor when the answer form takes the answer from the question). With search_spans, they may
        be what a search looks for, whatever the answer form."""
        if record.tool_error or not state.found:
            return
        if state.grounding is not None and self.reads(state):
            state.grounding.add(observation)
        if state.reading is not None:
            state.reading.add(observation)

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
        # A stateful tool (lookup walks through matches) may rightly be called twice with the same argument; it is
        # a repeat only when it returns what it returned last time (a keyword with no further match, say).
        stateful = getattr(tool, "is_stateful", False)
        call = call_key(action.tool, action.argument)
        if not stateful and call in state.calls:
            return self.repeat(record, action, state.calls[call])
        if self.callbacks.on_tool_start:
            self.callbacks.on_tool_start(action.tool, action.argument)
        result = self.tools.run(action.tool, action.argument)
        if stateful:
            earlier = state.returned.get(call)
            state.returned[call] = (record.index, result.observation)
            if earlier is not None and earlier[1] == result.observation:
                return self.repeat(record, action, earlier[0])
        record.tool_error = result.is_error
        state.found = result.evidence
        if not stateful and not result.is_error:
            state.calls[call] = record.index
        reported = ToolDetails.from_dict(getattr(tool, "last_details", None))
        if reported is not None:
            self.details(record).tool = reported
        record.observation = self.fit_observation(result.observation)
        if self.callbacks.on_tool_end:
            self.callbacks.on_tool_end(action.tool, action.argument, record.observation, result.is_error)
        return record.observation

    def repeat(self, record: StepRecord, action: Action, earlier: int) -> str:
        """The Observation of a call that would only repeat step `earlier`'s result."""
        record.observation = (
            f"You already ran {action.render()} at step {earlier + 1}; its result is above. "
            "Use different keywords, another tool, or give the Final answer."
        )
        record.tool_error = True
        return record.observation


def question_search(question: str) -> Action:
    """search[`question`] on one line, its brackets written as parentheses (a bracket would end the argument)."""
    return Action("search", " ".join(question.replace("[", "(").replace("]", ")").split()))


def refused_in_final(raw: str, rejections: Sequence[tuple[int, str]]) -> int:
    """How often the grammar refused the model's first choice inside the Final answer (grounding at work)."""
    start = raw.find("Final: ")
    if start < 0:
        return 0
    return sum(1 for offset, _ in rejections if offset >= start + len("Final: "))


__all__ = ["OPENING_THOUGHT", "SEARCH_TOOLS", "LoopState", "ReActAgent", "question_search"]
