"""Pure values that flow through the agent: a parsed Step, a model Completion, a recorded StepRecord, a Trajectory,
and the Turns of a chat.

They hold no behaviour beyond a JSON round trip (`to_dict` / `from_dict`), so a trajectory written to JSONL by one
version can be read back, compared and scored without a model. A step's `details` are typed per strategy
(details.py); the trajectory's `agent` says which type they read back as.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal, TypeVar

from offline_agent.details import StepDetails, details_type

StopReason = Literal["final", "abstained", "max_steps", "timeout", "error", "out_of_scope"]
# Why a run stopped. A strategy with a reason of its own adds it with add_stop_reason; the evaluation lists the
# reasons in this order, unknown ones after.
# `abstained`: the run ended on "the documents do not say" (grammar.ABSTAIN, or a support check's "no"): no answer,
# and `Trajectory.abstained` is true.
STOP_REASONS: list[str] = ["final", "abstained", "max_steps", "timeout", "error", "out_of_scope"]

D = TypeVar("D", bound=StepDetails)


def add_stop_reason(reason: str) -> None:
    """Allow a new stop reason (a plain lower-case word, such as "refused"); adding one twice is harmless."""
    if not reason.replace("_", "").isalpha() or not reason.islower():
        raise ValueError(f"a stop reason is a lower-case word with _, not {reason!r}")
    if reason not in STOP_REASONS:
        STOP_REASONS.append(reason)


@dataclass(frozen=True)
class Action:
    """A tool call: the tool's name and its argument (a string, or a dict for JSON-argument tools)."""

    tool: str
    argument: str | dict[str, Any]

    def render(self) -> str:
        """The call as the model writes it: `search[Ed Wood]` or `calculator[{"expression": "3*7"}]`."""
        arg = self.argument
        text = arg if isinstance(arg, str) else json.dumps(arg, ensure_ascii=False)
        return f"{self.tool}[{text}]"


@dataclass(frozen=True)
class Step:
    """One parsed model turn: an optional thought and exactly one of an action or a final answer.

    `path` is the ActionPath line the step wrote (KnowAgent), ending with the move it chose; None without one.
    """

    thought: str | None
    action: Action | None = None
    final: str | None = None
    path: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if (self.action is None) == (self.final is None):
            raise ValueError("a step has exactly one of action or final")

    @property
    def is_final(self) -> bool:
        return self.final is not None


@dataclass(frozen=True)
class Turn:
    """One earlier exchange of a chat: the question and the answer the agent gave (None: it gave none)."""

    question: str
    answer: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Turn:
        return cls(question=data["question"], answer=data.get("answer"))


_Summed = TypeVar("_Summed", bound="_Sums")


class _Sums:
    """A dataclass of numbers that `+=` sums field by field (Usage, Timings)."""

    def __iadd__(self: _Summed, other: _Summed) -> _Summed:
        for item in fields(self):
            setattr(self, item.name, getattr(self, item.name) + getattr(other, item.name))
        return self


@dataclass
class Usage(_Sums):
    """Token counts of one backend call (or a sum of them)."""

    prompt_tokens: int = 0
    cached_tokens: int = 0
    generated_tokens: int = 0

    @property
    def evaluated_tokens(self) -> int:
        """Prompt tokens the model actually had to evaluate (not reused from its cache)."""
        return self.prompt_tokens - self.cached_tokens


@dataclass
class Timings(_Sums):
    """Seconds spent in one backend call: evaluating the prompt, generating, inside the grammar, and compiling
    a grammar the backend had not seen (every step of a grounded run has a new one)."""

    prompt_s: float = 0.0
    generate_s: float = 0.0
    grammar_s: float = 0.0
    compile_s: float = 0.0


@dataclass
class Completion:
    """What a backend returns for one call: the text and what it cost."""

    text: str
    finish_reason: str = "stop"
    usage: Usage = field(default_factory=Usage)
    timings: Timings = field(default_factory=Timings)
    tokens: list[int] = field(default_factory=list)  # the generated token ids, when the backend has them
    masked_tokens: int = 0  # tokens for which the grammar's full mask had to be computed
    forced_tokens: int = 0  # tokens the grammar forced, appended without sampling (jump-forward)
    drafted_tokens: int = 0  # speculative decoding: tokens proposed by the drafter and evaluated
    accepted_tokens: int = 0  # ... and those of them that became part of the text
    # The model's first choice wherever the grammar refused it: (offset in the text, the refused token's text).
    rejections: list[tuple[int, str]] = field(default_factory=list)


@dataclass
class StepRecord:
    """Everything that happened in one step: the raw text, what it parsed to, what the tool returned, the cost."""

    index: int
    raw: str
    thought: str | None = None
    action: str | None = None
    argument: str | dict[str, Any] | None = None
    observation: str | None = None
    details: StepDetails | None = None
    final: str | None = None
    parse_error: dict[str, Any] | None = None
    tool_error: bool = False
    final_only: bool = False
    attempts: int = 1
    finish_reason: str = "stop"
    usage: Usage = field(default_factory=Usage)
    timings: Timings = field(default_factory=Timings)
    seconds: float = 0.0

    def ensure_details(self, kind: type[D]) -> D:
        """The step's details, made (empty, of type `kind`) on first use: a step with nothing to record keeps None."""
        if self.details is None:
            self.details = kind()
        if not isinstance(self.details, kind):
            raise TypeError(f"step {self.index} holds {type(self.details).__name__}, not {kind.__name__}")
        return self.details

    def to_dict(self) -> dict[str, Any]:
        data = asdict(replace(self, details=None))
        data["details"] = None if self.details is None else self.details.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], details: type[StepDetails] = StepDetails) -> StepRecord:
        """Read a step back; `details` is the type its details read as (the trajectory's strategy picks it)."""
        data = dict(data)
        data["usage"] = Usage(**data.get("usage", {}))
        data["timings"] = Timings(**data.get("timings", {}))
        if data.get("details") is not None:
            data["details"] = details.from_dict(data["details"])
        return cls(**data)


@dataclass
class Trajectory:
    """A whole run on one question: every step, the answer, why it stopped, and what makes it reproducible."""

    question: str
    steps: list[StepRecord] = field(default_factory=list)
    answer: str | None = None
    stop_reason: str = "error"
    # True when the run said the documents do not say (stop reason `abstained`): `answer` is then None.
    abstained: bool = False
    error: str | None = None
    seconds: float = 0.0
    agent: str = "react"
    backend: str = ""
    model: dict[str, Any] = field(default_factory=dict)
    grammar_sha256: str | None = None
    prompt_sha256: str | None = None
    seed: int | None = None
    temperature: float = 0.0
    max_steps: int = 0
    max_seconds: float | None = None
    corpus: str | None = None
    version: str = ""
    started_at: str = ""
    # The earlier turns of a chat that the prompt showed; the defaults below describe runs recorded before
    # chat and the step controls existed (no history, no budget hints, a Final-only last step).
    history: list[Turn] = field(default_factory=list)
    early_stopping: str = "generate"
    budget_hint: bool = False
    grounded: bool = False
    # Self-consistency (agents/consistency.py): each run's answer, stop reason, seed, temperature, seconds and steps,
    # and the votes per normalised answer; empty for a single run.
    samples: list[dict[str, Any]] = field(default_factory=list)
    votes: dict[str, int] = field(default_factory=dict)
    # The scope check before the first step (agents/scope.py): how it was decided, and its cost; None without one.
    scope: dict[str, Any] | None = None
    # The strategy's options (agents/options.py) and the settings profile they started from (None: a run made
    # outside a Session, or recorded before profiles); empty for runs recorded before strategies had options.
    profile: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    # The passages the answer rests on (sources.py), as the CLI, the MCP server and the evaluation found them: a
    # list (empty where the answer is written in no passage read); None where not looked for, and then not written.
    sources: list[dict[str, Any]] | None = None

    @property
    def intermediate_steps(self) -> list[tuple[Action, str]]:
        """Every tool call with its Observation, in order: LangChain's (action, observation) pairs."""
        return [
            (Action(step.action, step.argument if step.argument is not None else ""), step.observation or "")
            for step in self.steps
            if step.action is not None
        ]

    @property
    def usage(self) -> Usage:
        total = Usage()
        for step in self.steps:
            total += step.usage
        return total

    def to_dict(self) -> dict[str, Any]:
        data = asdict(replace(self, steps=[]))
        data["steps"] = [step.to_dict() for step in self.steps]
        data["usage"] = asdict(self.usage)
        if self.sources is None:
            del data["sources"]  # not looked for: written as trajectories were before sources existed
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trajectory:
        data = dict(data)
        data.pop("usage", None)
        kind = details_type(data.get("agent", "react"))
        data["steps"] = [StepRecord.from_dict(step, kind) for step in data.get("steps", [])]
        data["history"] = [Turn.from_dict(turn) for turn in data.get("history", [])]
        return cls(**data)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Trajectory:
        return cls.from_dict(json.loads(text))
