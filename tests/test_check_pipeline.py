"""The answer-check seam: checks as an ordered list behind one protocol, documents through a public protocol that a
user's own search tool can implement, and a strategy's own list of checks."""

from __future__ import annotations

import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import make_agent

from offline_agent.agents.options import VerifyOptions, option_infos
from offline_agent.agents.settings import agent_settings
from offline_agent.agents.verify import VerifyAgent
from offline_agent.backends import ScriptedBackend
from offline_agent.checks import DEFAULT_CHECKS, DEFAULT_REWRITES, AnswerRewrite, Candidate, Check, FinalCheck, Refusal
from offline_agent.checks.pipeline import CheckPipeline, check_keys, checks_table
from offline_agent.runner import Session
from offline_agent.tools import build_tools
from offline_agent.tools.base import ToolRegistry
from offline_agent.tools.corpus import CorpusSession, SearchTool
from offline_agent.tools.documents import DocumentSource, Shown, documents_of

SETTINGS = {"grounded": True, "answer_form": True, "search_k": 4}


def run(agent_type: type, tools: ToolRegistry, outputs: list[str], question: str, **config: Any):
    backend = ScriptedBackend(outputs)
    agent = make_agent(agent_type, backend, tools, **{**SETTINGS, **config})
    return agent.run(question), backend


class PlainSearch:
    """A user's own search tool that knows nothing of documents by title: a search and nothing else."""

    name = "search"
    description = "finds passages"
    schema = None
    example = "Marie Curie"

    def __init__(self, index: Any) -> None:
        self.index = index

    def __call__(self, query: str) -> str:
        result = self.index.search(query, k=4)
        return "\n".join(f"[{rank}] {p.title}: {p.text}" for rank, p in enumerate(result.passages, 1))


class TitledSearch(PlainSearch):
    """The same tool with the document lookups of `DocumentSource`, written by the user over the index."""

    def _titled(self, name: str) -> list[Any]:
        return [self.index.passage(int(i)) for i in self.index.ids() if self.index.passage(int(i)).title == name]

    def document(self, name: str, prefer: Callable[[str, str], bool] | None = None, place: bool = False) -> str | None:
        found = self._titled(name.strip())
        return found[0].text if found else None

    def named_document(self, text: str, prefer: Any = frozenset()) -> tuple[str, str] | None:
        return None

    def open_named(self, name: str, exclude: Any = frozenset(), place: bool = False) -> Shown | None:
        found = [p for p in self._titled(name.strip()) if p.title not in exclude]
        if not found:
            return None
        return Shown(f"[1] {found[0].title}: {found[0].text}", [found[0].title], [int(found[0].id)], [None])

    def open_found(self, text: str, exclude: Any = frozenset()) -> Shown | None:
        return None

    def open_mentioned(self, text: str, exclude: Any = frozenset()) -> Shown | None:
        return None


OUTPUTS = ["Thought: a\nAction: search[Marie Curie]", "Thought: b\nFinal: Warsaw", "Thought: c\nFinal: Warsaw"]
QUESTION = "Which river flows through the birth city of Marie Curie?"


def test_the_built_in_search_tool_is_a_document_source(tiny_index) -> None:
    tools = build_tools(tiny_index)
    assert isinstance(tools.get("search"), DocumentSource)
    assert documents_of(tools) is tools.get("search")
    assert documents_of([PlainSearch(tiny_index)]) is None


def test_a_users_own_search_tool_gets_the_document_checks_through_the_protocol(tiny_index) -> None:
    trajectory, backend = run(VerifyAgent, ToolRegistry([TitledSearch(tiny_index)]), OUTPUTS, QUESTION)
    refused = trajectory.steps[1]
    assert refused.details.refusal.reason == "asks_for"  # Warsaw's own document says it is a capital, no river
    assert refused.details.seen_titles == ["Warsaw"]
    assert "[1] Warsaw: " in backend.calls[2].prompt


def test_a_search_tool_without_the_protocol_keeps_the_checks_that_need_no_documents(tiny_index) -> None:
    trajectory, _ = run(VerifyAgent, ToolRegistry([PlainSearch(tiny_index)]), OUTPUTS, QUESTION)
    assert trajectory.answer == "Warsaw" and len(trajectory.steps) == 2  # no document to open: it stands
    asked_again, _ = run(
        VerifyAgent,
        ToolRegistry([PlainSearch(tiny_index)]),
        ["Thought: a\nAction: search[Marie Curie]", "Thought: b\nFinal: Marie Curie", "Thought: c\nFinal: Warsaw"],
        QUESTION,
    )
    assert asked_again.steps[1].details.refusal.reason == "in_question"


class NoRivers(Check):
    """A user's check: an answer to a question about a river must not be a city named in the corpus."""

    name = "not_a_river"
    says_search = True

    def refuse(self, candidate: Candidate) -> Refusal | None:
        if "river" in candidate.question and candidate.answer == "Warsaw":
            return Refusal(self.name, f"{candidate.answer} is a city. Find the river: {candidate.question}")
        return None


class OwnChecks(VerifyAgent):
    name = "verify-own"
    checks = (NoRivers(), *DEFAULT_CHECKS)


def test_a_strategy_runs_its_own_ordered_list_of_checks(tiny_index) -> None:
    assert isinstance(NoRivers(), FinalCheck) and all(isinstance(check, FinalCheck) for check in DEFAULT_CHECKS)
    trajectory, _ = run(OwnChecks, build_tools(tiny_index), OUTPUTS, QUESTION)
    refused = trajectory.steps[1]
    assert refused.details.refusal.reason == "not_a_river"  # first in the list: asks_for never ran
    assert refused.observation.startswith("Warsaw is a city.")
    assert refused.details.tool is None


def test_the_pipeline_derives_what_each_reason_does_from_its_checks() -> None:
    pipeline = CheckPipeline()
    assert {"unread", "one_side"}.isdisjoint(pipeline.excluding)
    assert {"in_question", "referent", "kind", "asks_for", "compare", "sides", "same", "shared"} <= pipeline.excluding
    assert pipeline.searching == {"unread", "in_question", "kind", "event", "asks_for", "described"}
    assert all(isinstance(rewrite, AnswerRewrite) for rewrite in DEFAULT_REWRITES)
    assert [rewrite.before_checks for rewrite in DEFAULT_REWRITES] == [True, False, False, False, False, False]
    assert not CheckPipeline(max_refusals=2).unchecked(1) and CheckPipeline(max_refusals=2).unchecked(2)


def test_the_checks_texts_are_package_data_with_every_key_a_check_uses() -> None:
    from offline_agent.prompts import prompt_table

    for family, keys in {
        "reading": ["unread", "found", "one_side"],
        "wording": ["in_question"],
        "referents": ["referent"],
        "kinds": ["kind", "kind_year", "asks_for", "described", "document"],
        "dates": ["event"],
        "pairs": ["compare", "sides_system", "sides_user", "sides", "same", "same_values", "shared"],
    }.items():
        table = prompt_table("answer_checks.toml", family)
        assert set(keys) <= set(table), family
    from offline_agent.errors import ConfigError

    with pytest.raises(ConfigError, match=r"has no table \[nothing\]"):
        prompt_table("answer_checks.toml", "nothing")


def test_a_search_tools_lookups_return_what_they_showed(tiny_index) -> None:
    tool = SearchTool(CorpusSession(tiny_index))
    shown = tool.open_named("Warsaw")
    assert shown is not None and shown.titles == ["Warsaw"] and shown.text.startswith("[1] Warsaw: ")
    assert shown.details() == {"ids": shown.ids, "titles": ["Warsaw"], "scores": [None]}


# A new check, as a developer writes one: a module of its own (here defined in the test) that holds its trigger
# (what it reads off the question and the answer) and its refusal, and nothing else in the package.
NEW_CHECK_MODULE = '''
"""A check of answers to a question that asks which river: a city named in the corpus is no river."""

from offline_agent.checks.base import Candidate, Check, Refusal


def asks_which_river(question: str) -> bool:
    return "which river" in question.lower()


class NoCity(Check):
    name = "no city"
    says_search = True

    def refuse(self, candidate: Candidate) -> Refusal | None:
        if not asks_which_river(candidate.question) or candidate.answer != "Warsaw":
            return None
        return Refusal(self.name, f"{candidate.answer} is a city. Find the river: {candidate.question}")
'''


def new_check_module() -> types.ModuleType:
    module = types.ModuleType("offline_agent.checks.no_city")
    exec(compile(NEW_CHECK_MODULE, "no_city.py", "exec"), module.__dict__)
    return module


def test_a_new_check_is_its_module_and_one_line_in_the_ordered_list(tiny_index, monkeypatch) -> None:
    no_city = new_check_module().NoCity()
    # The one line: the check in its place in the ordered list (before in_question, so before asks_for).
    checks = (*DEFAULT_CHECKS[:5], no_city, *DEFAULT_CHECKS[5:])
    monkeypatch.setattr(VerifyAgent, "checks", checks)

    def ask(options: dict[str, str]) -> Any:
        settings = agent_settings("verify", "answer", {"read_hop": "false", **options})
        session = Session.from_settings(settings, backend=ScriptedBackend(OUTPUTS), index=tiny_index, corpus="tiny")
        return session.ask(QUESTION)

    trajectory = ask({})
    refused = trajectory.steps[1]
    assert refused.details.refusal.reason == "no city"
    assert refused.observation.startswith("Warsaw is a city. Find the river:")
    # What the package derives from the list follows with nothing else touched: the pipeline's rules (its
    # Observation says what to find, and it excludes), the -o without= key, the table of checks.
    assert {"no city"} <= VerifyAgent(ScriptedBackend([]), build_tools(tiny_index)).pipeline.searching
    assert "no_city" in check_keys(checks)
    assert "| 6 | `no_city` | check | open | excluded | no_city |" in checks_table(checks).splitlines()
    left_out = ask({"without": "no_city"})
    assert left_out.steps[1].details.refusal.reason == "asks_for"  # the list's next check that refuses Warsaw


def test_the_new_check_refuses_through_the_ask_command(tiny_corpus: Path, monkeypatch) -> None:
    """The same check, one line in the list, seen from `offline-agent ask` with the scripted backend."""
    from click.testing import CliRunner

    from offline_agent.cli import _register, cli

    checks = (*DEFAULT_CHECKS[:5], new_check_module().NoCity(), *DEFAULT_CHECKS[5:])
    monkeypatch.setattr(VerifyAgent, "checks", checks)
    backend = ScriptedBackend(OUTPUTS)
    monkeypatch.setattr("offline_agent.backends.registry.build_backend", lambda *args, **kwargs: backend)
    _register()
    arguments = ["ask", QUESTION, "--corpus", str(tiny_corpus), "--agent", "verify", "-o", "read_hop=false"]
    result = CliRunner().invoke(cli, arguments, prog_name="offline-agent", catch_exceptions=False)
    assert "Observation: Warsaw is a city. Find the river:" in result.stderr
    # the refused answer is no longer one the grounded grammar allows, and the script has no other: no answer
    assert result.exit_code == 3 and "the answer 'Warsaw' is not a span" in result.stderr


def test_the_tables_of_checks_are_the_ordered_list() -> None:
    import offline_agent.checks

    table = checks_table()
    assert len(table.splitlines()) == 2 + len(DEFAULT_CHECKS) + len(DEFAULT_REWRITES)
    assert (offline_agent.checks.__doc__ or "").endswith(table + "\n")
    lines = (Path(__file__).resolve().parents[1] / "docs" / "answers.md").read_text(encoding="utf-8").splitlines()
    header = table.splitlines()[0]
    assert header in lines, "docs/answers.md lost the table of checks; write checks_table() there:\n" + table
    rows = lines[lines.index(header) :]
    written = rows[: next((i for i, line in enumerate(rows) if not line.startswith("|")), len(rows))]
    assert "\n".join(written) == table, "docs/answers.md's table of checks is not the list; write:\n" + table
    # The options help names no list of its own: its example keys are the list's, and the table is where it points.
    help_line = option_infos(VerifyOptions)["without"].help
    assert "docs/answers.md" in help_line and {"sides", "same"} <= set(check_keys()) and "(sides,same)" in help_line
