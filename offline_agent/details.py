"""Typed step details: what a step records beyond its text, one dataclass per strategy.

Every step may carry the grammar's refusals of the model's first choice (`rejections`), what its tool reported
about the call (`ToolDetails`: the passages' ids, titles and scores), the grounded grammar it was written under
(`GroundingDetails`), whether the agent wrote it (`opening`: first_search), which self-consistency run it belongs to
(`sample`), the scope check that refused the question (`ScopeDetails`), and an answer check's refusal and what it
found (`RefusalDetails`, `checked`). Strategies add their own: KnowAgent
the action path and the moves it offered (`KnowAgentDetails`), the critic its extraction, verdict and memory
(`CriticDetails`), the planner graph the node's role, calls and results (`PlanDetails`). Readers ask the typed
object (`details.seen_titles`, `details.rejections`, `details.prevented_moves`) instead of looking keys up by string.

The JSON form is one flat object per step with the keys trajectories have always had (`titles`, `rejections`,
`action_path`, `role`, ...), so results.jsonl written by earlier versions reads back, and anything that reads the
JSON (the evaluation's scoring, reports) sees no change. A trajectory's `agent` picks the type its steps' details
decode to (`details_type`); a strategy this module does not know (a user's own, not registered) decodes to
`StepDetails`, which keeps every key it does not type in `tool.extra`, so a round trip loses nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, TypeVar

from offline_agent.jsonio import fields_dict

Rejection = tuple[int, str]  # (offset in the step's text, the refused token's text)


def _present(obj: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """The named attributes of `obj` that are not None, as a dict in that order."""
    return {name: getattr(obj, name) for name in names if getattr(obj, name) is not None}


class _PlainFields:
    """The JSON form of a detail of plain values: its fields that are not None, in their order."""

    def to_dict(self) -> dict[str, Any]:
        return fields_dict(self, skip_none=True)


def _present_json(obj: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """`_present`, each value in its JSON form: a typed detail (or a list of them) as dicts, a list or dict copied."""
    return {name: _json_form(value) for name, value in _present(obj, names).items()}


def _json_form(value: Any) -> Any:
    if isinstance(value, _PlainFields):
        return value.to_dict()
    if isinstance(value, list):
        return [_json_form(item) for item in value]
    return dict(value) if isinstance(value, dict) else value


@dataclass
class ToolDetails:
    """What a tool reported about its call (`last_details`): the corpus tools give the passages' ids, titles and
    scores (retrieve also how the title matched); any other key a tool reports is kept in `extra` as it came."""

    ids: list[int] | None = None
    titles: list[str] | None = None
    scores: list[float] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    KEYS: ClassVar[tuple[str, ...]] = ("ids", "titles", "scores")

    @property
    def match(self) -> str | None:
        """How retrieve matched the title ("exact", "closest"; None when nothing matched or another tool ran)."""
        return self.extra.get("match")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> ToolDetails | None:
        """The typed form of a tool's report (None for an empty one)."""
        if not data:
            return None
        typed = {key: list(data[key]) for key in cls.KEYS if isinstance(data.get(key), list)}
        extra = {key: value for key, value in data.items() if key not in typed}
        return cls(**typed, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        return {**_present(self, self.KEYS), **self.extra}


@dataclass
class GroundingDetails(_PlainFields):
    """A step written under a grounded grammar: how many sentences it was built from, how long the build took, and
    (on a Final) how often the grammar refused the model's first choice inside the answer."""

    sentences: int
    build_s: float
    refused: int | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GroundingDetails:
        return cls(int(data["sentences"]), float(data["build_s"]), data.get("refused"))


@dataclass
class RefusalDetails(_PlainFields):
    """A Final the strategy's answer check refused (agents/verify.py): why, and the answer it refused."""

    reason: str
    answer: str

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RefusalDetails:
        return cls(str(data["reason"]), str(data["answer"]))


@dataclass
class ScopeDetails(_PlainFields):
    """The scope check before the first step (agents/scope.py): the scope, the vocabulary rule's counts and verdict,
    and whether the rule or the model decided (with the model's reply)."""

    scope: str
    rule: dict[str, Any]
    decided_by: str | None = None
    reply: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScopeDetails:
        return cls(data["scope"], dict(data["rule"]), data.get("decided_by"), data.get("reply"))


@dataclass
class StepDetails:
    """The details any step may carry; react, act, cot and standard record only these.

    Subclasses add their own fields; `OWN` names them, in the order of the JSON form, and `_own_from_dict` reads
    them back (the default takes plain values as they are).
    """

    rejections: list[Rejection] = field(default_factory=list)
    tool: ToolDetails | None = None
    grounding: GroundingDetails | None = None
    # The step the agent wrote itself (first_search's search for the question), not the model.
    opening: bool | None = None
    # Which self-consistency run the step belongs to (agents/consistency.py); None for a single run.
    sample: int | None = None
    scope: ScopeDetails | None = None
    # A Final that an answer check refused (the run then went on).
    refusal: RefusalDetails | None = None
    # What an answer check found for each of the two things a yes/no or choice question names (verify.py's
    # `sides`: the model's "yes" or "no" on that document alone; `same`: the year read), by document title,
    # whether it refused or not.
    checked: dict[str, str] | None = None

    OWN: ClassVar[tuple[str, ...]] = ()

    @property
    def seen_titles(self) -> list[str]:
        """Titles of the passages this step read (what the evaluation's support recall counts)."""
        return list(self.tool.titles or []) if self.tool is not None else []

    @property
    def prevented_moves(self) -> int:
        """Moves the grammar refused because the strategy's action graph forbids them (KnowAgent only)."""
        return 0

    def to_dict(self) -> dict[str, Any]:
        """The flat JSON form: `rejections` when there were any, the tool's keys, then the strategy's own."""
        data: dict[str, Any] = {}
        if self.rejections:
            data["rejections"] = [list(rejection) for rejection in self.rejections]
        if self.tool is not None:
            data.update(self.tool.to_dict())
        data.update(_present_json(self, ("grounding", "opening", "sample", "scope", "refusal", "checked")))
        data.update(self._own_to_dict())
        return data

    @classmethod
    def from_dict(cls: type[D], data: Mapping[str, Any]) -> D:
        """Read the flat JSON form; keys neither the grammar nor the strategy claims are the tool's."""
        rest = dict(data)
        rejections = [(int(offset), str(piece)) for offset, piece in rest.pop("rejections", None) or ()]
        grounding, scope = rest.pop("grounding", None), rest.pop("scope", None)
        opening, sample = rest.pop("opening", None), rest.pop("sample", None)
        refusal, checked = rest.pop("refusal", None), rest.pop("checked", None)
        own = cls._own_from_dict({key: rest.pop(key) for key in cls.OWN if key in rest})
        return cls(
            rejections=rejections,
            tool=ToolDetails.from_dict(rest),
            grounding=GroundingDetails.from_dict(grounding) if grounding is not None else None,
            opening=opening,
            sample=sample,
            scope=ScopeDetails.from_dict(scope) if scope is not None else None,
            refusal=RefusalDetails.from_dict(refusal) if refusal is not None else None,
            checked={str(key): str(value) for key, value in checked.items()} if checked is not None else None,
            **own,
        )

    def _own_to_dict(self) -> dict[str, Any]:
        return _present_json(self, self.OWN)

    @classmethod
    def _own_from_dict(cls, data: dict[str, Any]) -> dict[str, Any]:
        return data


D = TypeVar("D", bound=StepDetails)


@dataclass
class KnowAgentDetails(StepDetails):
    """KnowAgent's step: the whole action path after the step, the moves the grammar offered, and how often the
    model's first choice for the move was one the graph forbids there."""

    # None on a step that made no move (first_search's opening search, a self-consistency run's mark).
    action_path: list[str] | None = None
    allowed: list[str] | None = None
    prevented: int | None = None

    OWN: ClassVar[tuple[str, ...]] = ("allowed", "prevented", "action_path")

    @property
    def prevented_moves(self) -> int:
        return self.prevented or 0


@dataclass
class CallDetails(_PlainFields):
    """What the trajectory keeps of one JSON call: its text, attempts, parse error (when its value is missing),
    or why it was skipped."""

    raw: str | None = None
    attempts: int | None = None
    parse_error: dict[str, Any] | None = None
    skipped: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Any:
        if data is None:
            return None
        names = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in names})


@dataclass
class ExtractionDetails(CallDetails):
    """The critic's extraction call: whether the Observation helped, the facts it gave, those new to the memory,
    and how many new ones did not fit."""

    useful: bool | None = None
    facts: list[str] | None = None
    added: list[str] | None = None
    dropped: int | None = None


@dataclass
class CritiqueDetails(CallDetails):
    """The critic's verdict: sufficient or not, its answer, what is missing, and a note where it was overruled."""

    sufficient: bool | None = None
    answer: str | None = None
    missing: str | None = None
    note: str | None = None


@dataclass
class CriticDetails(StepDetails):
    """A critic round: the search step's details plus the extraction, the verdict and the memory after the round."""

    extraction: ExtractionDetails | None = None
    critic: CritiqueDetails | None = None
    memory: list[str] | None = None

    OWN: ClassVar[tuple[str, ...]] = ("extraction", "critic", "memory")

    @classmethod
    def _own_from_dict(cls, data: dict[str, Any]) -> dict[str, Any]:
        return {
            "extraction": ExtractionDetails.from_dict(data.get("extraction")),
            "critic": CritiqueDetails.from_dict(data.get("critic")),
            "memory": data.get("memory"),
        }


@dataclass
class PlannedCall(_PlainFields):
    """One tool call the planner wrote."""

    tool: str
    argument: str


@dataclass
class CallResult(_PlainFields):
    """One call the executor ran, with its Observation as the model saw it."""

    tool: str
    argument: str
    observation: str
    is_error: bool


@dataclass
class PlanDetails(StepDetails):
    """A node of the planner graph: its role (planner, evaluator, respond), the planner's round, calls, the calls
    it dropped as repeats, the results and the titles its searches read; the evaluator's verdict."""

    role: str = ""
    iteration: int | None = None
    calls: list[PlannedCall] | None = None
    dropped: list[PlannedCall] | None = None
    results: list[CallResult] | None = None
    titles: list[str] | None = None
    sufficient: bool | None = None
    missing: str | None = None

    OWN: ClassVar[tuple[str, ...]] = (
        "role",
        "iteration",
        "calls",
        "dropped",
        "results",
        "titles",
        "sufficient",
        "missing",
    )

    @property
    def seen_titles(self) -> list[str]:
        return list(self.titles or [])

    @classmethod
    def _own_from_dict(cls, data: dict[str, Any]) -> dict[str, Any]:
        data = dict(data)
        for key in ("calls", "dropped"):
            if data.get(key) is not None:
                data[key] = [PlannedCall(item["tool"], item["argument"]) for item in data[key]]
        if data.get("results") is not None:
            data["results"] = [
                CallResult(item["tool"], item["argument"], item["observation"], item["is_error"])
                for item in data["results"]
            ]
        return data


# The details type of each strategy's steps, by the strategy's name (a trajectory's `agent`); strategies not named
# here record plain StepDetails. agents.register_strategy adds a user's strategy with its `details_type`.
DETAILS: dict[str, type[StepDetails]] = {
    "knowagent": KnowAgentDetails,
    "critic": CriticDetails,
    "plan": PlanDetails,
}


def details_type(agent: str) -> type[StepDetails]:
    """The details type the steps of strategy `agent` record (StepDetails for one not registered)."""
    return DETAILS.get(agent, StepDetails)


__all__ = [
    "DETAILS",
    "CallDetails",
    "CallResult",
    "CriticDetails",
    "CritiqueDetails",
    "ExtractionDetails",
    "GroundingDetails",
    "KnowAgentDetails",
    "PlanDetails",
    "PlannedCall",
    "RefusalDetails",
    "Rejection",
    "ScopeDetails",
    "StepDetails",
    "ToolDetails",
    "details_type",
]
