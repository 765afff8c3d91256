"""The reliability suite: hostile inputs, damaged files, kill -9, a full disk, no network.

Every test here carries the `reliability` marker (`pytest -m reliability` runs the suite alone; it also runs in
`make test`). Each case is recorded in a ledger by area and outcome, and the suite ends with the table

    area | cases | handled | tracebacks | hangs | lost | other failures

where "handled" is a correct result or a one-line error; "traceback" a traceback or an unexpected exception;
"hang" a run that did not end within its bound (or held a time limit far past it); "lost" an answer, an index,
an update or results that did not survive; "other failure" any other wrong outcome (a wrong exit status, a
message on several lines, a wrong answer to a hostile input). A case that is not handled also fails its test;
the table is the tally the issues asked for. `outcome_of` classifies a CLI run.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

OUTCOMES = ("handled", "traceback", "hang", "lost", "failed")
_COLUMNS = ("handled", "tracebacks", "hangs", "lost", "other failures")
_ALIASES = {"crashed": "failed"}  # the outcome older cases record for "not handled, not lost"


class Ledger:
    """Outcomes by area, for the closing table."""

    def __init__(self) -> None:
        self.areas: dict[str, Counter[str]] = {}

    def record(self, area: str, outcome: str) -> None:
        outcome = _ALIASES.get(outcome, outcome)
        assert outcome in OUTCOMES, outcome
        self.areas.setdefault(area, Counter())[outcome] += 1

    def table(self) -> list[str]:
        lines = [f"area | cases | {' | '.join(_COLUMNS)}", "--- | ---:" + " | ---:" * len(_COLUMNS)]
        total: Counter[str] = Counter()
        for area, counts in self.areas.items():
            total.update(counts)
            lines.append(f"{area} | {sum(counts.values())} | " + " | ".join(str(counts[o]) for o in OUTCOMES))
        lines.append(f"all | {sum(total.values())} | " + " | ".join(str(total[o]) for o in OUTCOMES))
        return lines


_LEDGER = Ledger()


@pytest.fixture(scope="session")
def ledger() -> Ledger:
    return _LEDGER


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.reliability)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # type: ignore[no-untyped-def]
    if not _LEDGER.areas:
        return
    terminalreporter.section("reliability: outcomes by area")
    for line in _LEDGER.table():
        terminalreporter.write_line(line)
    report = os.environ.get("OFFLINE_AGENT_RELIABILITY_TABLE")
    if report:
        Path(report).write_text("\n".join(_LEDGER.table()) + "\n", encoding="utf-8")


@pytest.fixture
def kills(request: pytest.FixtureRequest) -> int:
    """How many `index --update` runs the kill test kills (--kills N, or OFFLINE_AGENT_KILLS; default 20)."""
    value = request.config.getoption("--kills")
    if value is None:
        value = int(os.environ.get("OFFLINE_AGENT_KILLS") or 20)
    return value
