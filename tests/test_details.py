"""Typed step details: each strategy's type, its flat JSON form, and results.jsonl lines written before the types."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from offline_agent.details import (
    DETAILS,
    CallResult,
    CriticDetails,
    CritiqueDetails,
    ExtractionDetails,
    KnowAgentDetails,
    PlanDetails,
    PlannedCall,
    StepDetails,
    ToolDetails,
    details_type,
)
from offline_agent.eval.datasets import QARecord
from offline_agent.eval.runner import trajectory_of
from offline_agent.eval.scoring import result_row, titles_seen
from offline_agent.steps import StepRecord, Trajectory

OLD_ROWS = Path(__file__).parent / "golden" / "results_before_typed_details.jsonl"


@pytest.mark.parametrize(
    "details",
    [
        StepDetails(),
        StepDetails(rejections=[(3, "x"), (9, " Final")]),
        StepDetails(tool=ToolDetails(ids=[4, 1], titles=["A", "B"], scores=[2.5, 1.25])),
        StepDetails(tool=ToolDetails(titles=["Only"])),  # lookup reports the page's title alone
        StepDetails(tool=ToolDetails(ids=[], titles=[], scores=[], extra={"match": None})),  # retrieve, no match
        StepDetails(tool=ToolDetails(extra={"rows": 3, "source": "a user's tool"})),
        KnowAgentDetails(action_path=["Start", "Search"], allowed=["Search", "Retrieve"], prevented=2),
        KnowAgentDetails(
            rejections=[(21, "Lookup")],
            tool=ToolDetails(ids=[0], titles=["T"], scores=[1.0], extra={"match": "exact"}),
            action_path=["Start", "Retrieve"],
            allowed=["Search", "Retrieve"],
        ),
        CriticDetails(memory=[]),
        CriticDetails(
            tool=ToolDetails(ids=[1], titles=["Warsaw"], scores=[0.5]),
            extraction=ExtractionDetails(raw="{}", attempts=2, useful=True, facts=["a", "b"], added=["b"], dropped=1),
            critic=CritiqueDetails(raw="x", attempts=1, parse_error={"label": "invalid"}, sufficient=False),
            memory=["b"],
        ),
        CriticDetails(extraction=ExtractionDetails(skipped="the tool failed"), critic=CritiqueDetails(skipped="no")),
        PlanDetails(role="respond"),
        PlanDetails(role="planner", iteration=1),
        PlanDetails(role="planner", iteration=2, calls=[PlannedCall("search", "x")], dropped=[], results=[]),
        PlanDetails(
            role="planner",
            iteration=1,
            calls=[PlannedCall("search", "x"), PlannedCall("search", "X")],
            dropped=[PlannedCall("search", "X")],
            results=[CallResult("search", "x", "[1] T: text", False)],
            titles=["T"],
        ),
        PlanDetails(role="evaluator", sufficient=False, missing=""),
    ],
    ids=lambda details: type(details).__name__,
)
def test_details_round_trip_through_json(details: StepDetails) -> None:
    data = json.loads(json.dumps(details.to_dict()))
    again = type(details).from_dict(data)
    assert again == details and again.to_dict() == data


def test_the_json_form_is_flat_with_the_keys_readers_have_always_used() -> None:
    details = KnowAgentDetails(
        rejections=[(21, "Lookup")],
        tool=ToolDetails(ids=[7], titles=["Warsaw"], scores=[1.5]),
        action_path=["Start", "Search"],
        allowed=["Search", "Retrieve"],
        prevented=1,
    )
    assert details.to_dict() == {
        "rejections": [[21, "Lookup"]],
        "ids": [7],
        "titles": ["Warsaw"],
        "scores": [1.5],
        "allowed": ["Search", "Retrieve"],
        "prevented": 1,
        "action_path": ["Start", "Search"],
    }
    assert StepDetails().to_dict() == {}
    assert PlanDetails(role="planner", iteration=1).to_dict() == {"role": "planner", "iteration": 1}


def test_what_readers_ask_the_typed_details() -> None:
    assert StepDetails(tool=ToolDetails(titles=["A"])).seen_titles == ["A"] and StepDetails().seen_titles == []
    assert PlanDetails(role="planner", titles=["B"]).seen_titles == ["B"]
    assert KnowAgentDetails(prevented=3).prevented_moves == 3 and CriticDetails().prevented_moves == 0
    assert ToolDetails(extra={"match": "closest"}).match == "closest" and ToolDetails().match is None


def test_a_strategy_picks_the_type_its_steps_read_back_as() -> None:
    assert details_type("knowagent") is KnowAgentDetails and details_type("critic") is CriticDetails
    assert details_type("plan") is PlanDetails and details_type("react") is StepDetails
    assert details_type("someone-elses") is StepDetails
    assert "knowagent" in DETAILS


def test_an_unknown_strategy_keeps_every_key() -> None:
    data = {"rejections": [[1, "a"]], "titles": ["T"], "role": "mine", "depth": 3}
    trajectory = Trajectory.from_dict({"question": "q", "agent": "not-registered", "steps": [step_json(data)]})
    details = trajectory.steps[0].details
    assert type(details) is StepDetails and details.tool.extra == {"role": "mine", "depth": 3}
    assert trajectory.to_dict()["steps"][0]["details"] == data


def step_json(details: dict | None) -> dict:
    return StepRecord(index=0, raw="Thought: x\nFinal: y").to_dict() | {"details": details}


def test_ensure_details_makes_them_on_first_use_and_checks_the_type() -> None:
    record = StepRecord(index=0, raw="")
    assert record.details is None and record.to_dict()["details"] is None
    made = record.ensure_details(KnowAgentDetails)
    assert record.details is made and record.ensure_details(KnowAgentDetails) is made
    with pytest.raises(TypeError, match="KnowAgentDetails"):
        record.ensure_details(PlanDetails)


NEWER_FIELDS = {
    "abstained": False,
    "grounded": False,
    "samples": [],
    "votes": {},
    "scope": None,
    "profile": None,
    "options": {},
}


def project(new: Any, old: Any) -> Any:
    """`new` with only the keys `old` has, at every level (what a reader of the old form sees)."""
    if isinstance(new, dict) and isinstance(old, dict):
        return {key: project(new[key], old[key]) if key in new else None for key in old}
    if isinstance(new, list) and isinstance(old, list) and len(new) == len(old):
        return [project(a, b) for a, b in zip(new, old, strict=True)]
    return new


def old_rows() -> list[str]:
    return OLD_ROWS.read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize("line", old_rows(), ids=lambda line: json.loads(line)["id"])
def test_results_written_before_typed_details_read_back_unchanged(line: str) -> None:
    """Lines of results.jsonl as the version before typed details wrote them: they read back with typed details,
    write back byte for byte, and score the same."""
    row = json.loads(line)
    trajectory = trajectory_of(row)
    assert Trajectory.from_json(json.dumps(row["trajectory"])) == trajectory
    kind = details_type(trajectory.agent)
    assert all(step.details is None or type(step.details) is kind for step in trajectory.steps)
    written = json.loads(trajectory.to_json())
    # Fields added since (grounded, samples, votes, scope; a step's compile_s) are written with their defaults; the
    # rest is unchanged.
    assert project(written, row["trajectory"]) == row["trajectory"]
    assert {key: written[key] for key in written if key not in row["trajectory"]} == NEWER_FIELDS
    assert all(step["timings"]["compile_s"] == 0.0 for step in written["steps"])
    record = QARecord(
        id=row["id"],
        question=row["question"],
        answer=row["gold"],
        supporting_titles=tuple(row["supporting_titles"]),
        type=row["type"],
        level=row["level"],
    )
    again = json.loads(json.dumps(result_row(record, trajectory)))
    # The row's own fields score the same; fields added since (the supporting-fact scores) come on top.
    assert project(again, row) == row
    assert titles_seen(trajectory.steps) == titles_seen(row["trajectory"]["steps"]) == row["seen_titles"]


def test_the_old_rows_cover_every_typed_strategy() -> None:
    agents = {json.loads(line)["trajectory"]["agent"] for line in old_rows()}
    assert {"react", "knowagent", "critic", "plan"} <= agents
    knowagent = next(trajectory_of(json.loads(line)) for line in old_rows() if '"knowagent"' in line)
    first = knowagent.steps[0].details
    assert isinstance(first, KnowAgentDetails) and first.action_path == ["Start", "Search"] and first.prevented == 2
