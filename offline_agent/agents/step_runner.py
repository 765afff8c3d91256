"""The one place an agent calls the model: a prompt, this turn's grammar and its parser, in; a parsed value out.

Both kinds of turn go through `StepRunner.turn`: a step (Thought, then Action or Final, under a step grammar) and a
JSON call (one object shaped by a pydantic model, under its JSON grammar: the planner's and the critic's calls).
What it guarantees for every turn:
- the grammar goes to the backend unless the run has it switched off (for measuring format errors);
- the text is checked by the parser; a turn cut off at max_tokens that does not parse is retried once with twice
  the tokens; a turn that does not parse keeps its labelled error: the runner never guesses what the model meant;
- its cost adds up over the attempts: usage, timings, and where the grammar refused the model's first choice
  (rejections, of the last attempt that had any);
- a context overflow stops the run with stop reason `error`, an interrupted call (the deadline passed while
  generating) with `timeout`;
- text streams to `on_token` when the turn asks for it.
`step` books a step turn onto its StepRecord (and stops the run when it does not parse); `json` returns the result
for the strategy to book, since a JSON reply that does not parse is a recorded outcome, not always the end of a run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from offline_agent.agents.run import AgentCallbacks, RunConfig, RunState
from offline_agent.backends.base import Backend, DecoderGrammar
from offline_agent.details import Rejection
from offline_agent.errors import ContextOverflowError, StepParseError
from offline_agent.grammar import JsonGrammar, StepGrammar, json_grammar
from offline_agent.grounding import Grounding
from offline_agent.parse import JsonParser, StepParser, WordParser, json_parser_for
from offline_agent.steps import Step, StepRecord, Timings, Usage

# A step ends before the Observation the loop writes; a JSON reply ends at a blank line.
STOP_SEQUENCES = ("\nObservation:",)
JSON_STOP = ("\n\n",)
JSON_MAX_TOKENS = 256


class JsonCall:
    """A pydantic model with its grammar pair and parser, built once per model."""

    def __init__(self, model: type[BaseModel]) -> None:
        self.model = model
        self.grammar: JsonGrammar = json_grammar(model)
        self.parser: JsonParser = json_parser_for(self.grammar)


@dataclass
class TurnResult:
    """What one turn produced: the parsed value (None: it did not parse, or the run stopped), the text, the cost."""

    value: Any = None
    text: str = ""
    finish_reason: str = "stop"
    attempts: int = 0
    usage: Usage = field(default_factory=Usage)
    last_usage: Usage = field(default_factory=Usage)  # the last attempt's own (its prompt is the turn's prompt)
    timings: Timings = field(default_factory=Timings)
    rejections: list[Rejection] = field(default_factory=list)
    # The last attempt's own rejections (empty when it had none, even if an earlier attempt had some).
    last_rejections: list[Rejection] = field(default_factory=list)
    # The last attempt's parse error (None when it parsed), and the error of a cut-off first attempt that was retried.
    error: StepParseError | None = None
    retried_error: StepParseError | None = None
    # The run stopped during this turn: "error" (context overflow) or "timeout" (interrupted); None: it goes on.
    stopped: str | None = None
    seconds: float = 0.0

    @property
    def rejected(self) -> StepParseError | None:
        """The parse error a step record keeps: the final attempt's, else that of a retried first attempt."""
        return self.error or self.retried_error


class StepRunner:
    """Calls the backend for a strategy's turns under the run's settings (config) and live view (callbacks)."""

    def __init__(self, backend: Backend, config: RunConfig, callbacks: AgentCallbacks) -> None:
        self.backend = backend
        self.config = config
        self.callbacks = callbacks

    def turn(
        self,
        state: RunState | None,
        prompt: str,
        grammar: str | DecoderGrammar,
        parser: StepParser | JsonParser | WordParser,
        *,
        max_tokens: int,
        stop: tuple[str, ...],
        seed: int,
        stream: bool,
        grounding: Grounding | None = None,
    ) -> TurnResult:
        """One model turn with its retry (see the module docstring). With a state, a stop is booked on the run.

        `grammar` goes to the backend as it is (a StepGrammar carries its Lark form too, a string is GBNF);
        `grounding` is what a grounded step's Final is checked against, and a StepGrammar's `reading` what its span
        arguments are."""
        c = self.config
        reading = grammar.reading if isinstance(grammar, StepGrammar) else None
        result = TurnResult()
        started = time.monotonic()
        for attempt in (1, 2):
            result.attempts = attempt
            result.error = None
            try:
                completion = self.backend.complete(
                    prompt,
                    grammar=grammar if c.grammar else None,
                    max_tokens=max_tokens,
                    stop=stop,
                    temperature=c.temperature,
                    seed=seed,
                    on_token=self.callbacks.on_token if stream else None,
                    deadline=state.deadline if state is not None else None,
                )
            except ContextOverflowError as exc:
                result.stopped = "error"
                if state is not None:
                    state.stop("error", str(exc))
                break
            result.usage += completion.usage
            result.last_usage = completion.usage
            result.timings += completion.timings
            result.text = completion.text
            result.finish_reason = completion.finish_reason
            result.last_rejections = [(int(offset), str(piece)) for offset, piece in completion.rejections]
            if completion.rejections:
                result.rejections = result.last_rejections
            if completion.finish_reason == "interrupted":
                result.stopped = "timeout"
                if state is not None:
                    state.stop("timeout")
                break
            try:
                if grounding is None and reading is None:
                    result.value = parser.parse(completion.text)
                else:
                    assert isinstance(parser, StepParser)
                    result.value = parser.parse(completion.text, grounding=grounding, reading=reading)
            except StepParseError as exc:
                result.error = exc
                if completion.finish_reason == "length" and attempt == 1:
                    result.retried_error = exc
                    max_tokens *= 2  # cut off mid-turn: one retry with room to finish
                    continue
            break
        result.seconds = round(time.monotonic() - started, 3)
        return result

    def step(
        self,
        state: RunState,
        record: StepRecord,
        prompt: str,
        grammar: str | DecoderGrammar,
        parser: StepParser,
        *,
        seed: int,
        label: str,
        stop: tuple[str, ...] = STOP_SEQUENCES,
        grounding: Grounding | None = None,
    ) -> TurnResult:
        """A step turn (streamed), booked onto `record`; one that does not parse ends the run as `error`, the
        message starting with `label` ("step 3"). The parsed Step is `result.value` (None: the run stopped)."""
        result = self.turn(
            state,
            prompt,
            grammar,
            parser,
            max_tokens=self.config.max_tokens,
            stop=stop,
            seed=seed,
            stream=True,
            grounding=grounding,
        )
        self.book(record, result)
        step: Step | None = result.value
        if step is not None:
            record.thought = step.thought
        elif result.stopped is None and result.error is not None:
            state.stop("error", f"{label}: {result.error}")
        return result

    def json(
        self,
        state: RunState | None,
        prompt: str,
        call: JsonCall,
        *,
        seed: int,
        max_tokens: int = JSON_MAX_TOKENS,
        stream: bool = False,
    ) -> TurnResult:
        """A JSON turn under `call`'s grammar; the strategy books it. `result.value` is the validated model."""
        return self.turn(
            state,
            prompt,
            call.grammar.gbnf,
            call.parser,
            max_tokens=max_tokens,
            stop=JSON_STOP,
            seed=seed,
            stream=stream,
        )

    def word(self, state: RunState | None, prompt: str, parser: WordParser, *, seed: int) -> TurnResult:
        """A one-word turn ("yes" or "no") under `parser`'s grammar; the strategy books it (add_cost).
        `result.value` is the word, lower-cased, or None where the reply was none of them."""
        return self.turn(state, prompt, parser.gbnf, parser, max_tokens=4, stop=(), seed=seed, stream=False)

    @staticmethod
    def book(record: StepRecord, result: TurnResult) -> None:
        """Write a turn onto the step it is: text, finish reason, attempts, parse error, cost and seconds."""
        record.raw = result.text
        record.finish_reason = result.finish_reason
        record.attempts = max(result.attempts, 1)
        rejected = result.rejected
        record.parse_error = rejected.to_dict() if rejected is not None else None
        StepRunner.add_cost(record, result)
        record.seconds = result.seconds

    @staticmethod
    def add_cost(record: StepRecord, result: TurnResult) -> None:
        """Add a turn's tokens and times to a step (a side call, such as the critic's, that is not the step)."""
        record.usage += result.usage
        record.timings += result.timings


__all__ = ["JSON_MAX_TOKENS", "JSON_STOP", "STOP_SEQUENCES", "JsonCall", "StepRunner", "TurnResult"]
