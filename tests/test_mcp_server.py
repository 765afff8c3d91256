"""`offline-agent mcp`: the indexes as an MCP server over stdio, talked to by the official SDK's own client.

The real test starts `offline-agent mcp` as a subprocess over an index built here, lists the tools, searches,
and asks with the small test model (it answers badly; the test checks the shape). It writes the session's
requests and responses to mcp-transcript.json in its temporary folder and prints the path.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from support import cli_env
from test_cli import assert_one_line_error, run

from offline_agent.errors import ConfigError
from offline_agent.mcp_server import IndexSet, OfflineAgentTools, ServerSettings
from offline_agent.steps import STOP_REASONS

pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install -e '.[test]'")


@pytest.fixture
def home(tmp_path: Path, tiny_corpus: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """OFFLINE_AGENT_HOME with one named index, `notes`, over the tiny corpus."""
    from offline_agent.retrieval import build_from_paths
    from offline_agent.retrieval.catalog import index_path

    home = tmp_path / "home"
    monkeypatch.setenv("OFFLINE_AGENT_HOME", str(home))
    build_from_paths([tiny_corpus]).index.save(index_path("notes"))
    return home


def test_search_and_the_index_list_without_a_model(home: Path, tiny_corpus: Path) -> None:
    tools = OfflineAgentTools(IndexSet(), ServerSettings())
    assert tools.indexes.names() == ["notes"]
    result = tools.search("Vistula river", k=2)
    assert result["index"] == "notes" and [hit["rank"] for hit in result["hits"]] == [1, 2]
    first = result["hits"][0]
    assert set(first) == {"rank", "title", "source", "score", "text", "doc_id", "passage_id"}
    assert first["title"] in ("Vistula", "Warsaw") and "Vistula" in first["text"]
    assert tools.list_indexes() == [{"name": "notes", "passages": 4, "location": "notes"}]
    assert not tools.model_loaded  # searching never loads the model
    folder = IndexSet([str(tiny_corpus)])  # a folder of documents, indexed in memory on first use
    assert OfflineAgentTools(folder, ServerSettings()).search("Gdansk", k=1)["hits"][0]["title"] == "Vistula"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda t: t.search("  "), "the query is empty"),
        (lambda t: t.search("x", k=0), "k must be between 1 and 50, not 0"),
        (lambda t: t.search("x", index="other"), "unknown index 'other'; choose from ['notes']"),
        (lambda t: t.ask(""), "the question is empty"),
    ],
)
def test_bad_calls_are_one_line_errors(home: Path, call, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        call(OfflineAgentTools(IndexSet(), ServerSettings()))
    assert str(caught.value) == message


def test_ask_with_a_scripted_backend(home: Path) -> None:
    from offline_agent.agents import AgentSettings, RunConfig
    from offline_agent.backends import ScriptedBackend

    backend = ScriptedBackend(["Thought: find it\nAction: search[Vistula sea]", "Thought: done\nFinal: the Baltic Sea"])
    tools = OfflineAgentTools(
        IndexSet(), ServerSettings(settings=AgentSettings(config=RunConfig(max_steps=3))), backend=backend
    )
    result = tools.ask("Into which sea does the Vistula flow?")
    assert (result["answer"], result["stop_reason"], result["index"]) == ("the Baltic Sea", "final", "notes")
    steps = result["trajectory"]["steps"]
    assert [step["action"] for step in steps] == ["search", None] and "Gdansk" in steps[0]["observation"]


def test_no_named_index_serves_the_sample_corpus(isolated_home: Path) -> None:
    tools = OfflineAgentTools(IndexSet(), ServerSettings())
    assert tools.indexes.names() == ["sample"] and tools.search("Joyce", k=1)["hits"]


def test_cli_refuses_bad_options_in_one_line(home: Path) -> None:
    assert_one_line_error(run("mcp", "--index", "nowhere", home=home), "index not found: 'nowhere'")
    assert_one_line_error(run("mcp", "--model", "no-such-model", home=home), "unknown model 'no-such-model'")


def test_a_missing_sdk_says_how_to_install(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from offline_agent.cli import _register, cli

    monkeypatch.setitem(sys.modules, "mcp.server.mcpserver", None)
    _register()
    result = CliRunner().invoke(cli, ["mcp"], prog_name="offline-agent")
    assert result.exit_code == 1 and result.stderr.strip() == (
        "error: the MCP server needs the `mcp` package (version 2), which is not installed: "
        "pip install 'offline-agent[mcp]'"
    )


# ---- for real: the server as a subprocess, the SDK's stdio client -------------------------------------------------
def _dump(result: Any) -> Any:
    return result.model_dump(mode="json", exclude_none=True)


@pytest.mark.model
def test_the_server_over_stdio_with_the_sdk_client(home: Path, tmp_path: Path, small_model_path: Path) -> None:
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    transcript: list[dict[str, Any]] = []
    server_log = tmp_path / "server-stderr.log"
    args = ["-m", "offline_agent.cli", "mcp", "--index", "notes", "--model", str(small_model_path)]
    args += ["--max-steps", "3", "--max-tokens", "64"]
    env = {key: value for key, value in cli_env(home).items() if key.startswith(("OFFLINE_AGENT", "PYTHON"))}
    parameters = StdioServerParameters(command=sys.executable, args=args, env=env)

    async def call(session: ClientSession, name: str, arguments: dict[str, Any]) -> Any:
        result = await session.call_tool(name, arguments)
        transcript.append({"request": {"method": "tools/call", "name": name, "arguments": arguments}})
        transcript.append({"response": _dump(result)})
        return result

    async def talk() -> dict[str, Any]:
        with open(server_log, "w", encoding="utf-8") as errlog:
            async with stdio_client(parameters, errlog=errlog) as streams, ClientSession(*streams[:2]) as session:
                initialized = await session.initialize()
                transcript.append({"request": {"method": "initialize"}})
                transcript.append({"response": _dump(initialized)})
                listed = await session.list_tools()
                transcript.append({"request": {"method": "tools/list"}})
                transcript.append({"response": _dump(listed)})
                found = await call(session, "search", {"query": "Gdansk Baltic", "k": 2})
                indexes = await call(session, "list_indexes", {})
                wrong = await call(session, "search", {"query": "river", "index": "missing"})
                loaded_before_ask = "loading the model" in server_log.read_text()
                answered = await call(session, "ask", {"question": "Which river flows through Warsaw?"})
                return {
                    "init": initialized,
                    "tools": listed,
                    "search": found,
                    "indexes": indexes,
                    "wrong": wrong,
                    "ask": answered,
                    "loaded_before_ask": loaded_before_ask,
                }

    got = anyio.run(talk)
    saved = tmp_path / "mcp-transcript.json"
    saved.write_text(json.dumps(transcript, indent=1, ensure_ascii=False), encoding="utf-8")
    print(f"\nMCP transcript: {saved}")

    assert got["init"].server_info.name == "offline-agent"
    assert sorted(tool.name for tool in got["tools"].tools) == ["ask", "list_indexes", "search"]
    search_schema = next(tool for tool in got["tools"].tools if tool.name == "search").input_schema
    assert set(search_schema["properties"]) == {"query", "k", "index"} and search_schema["required"] == ["query"]
    hits = got["search"].structured_content["hits"]
    assert not got["search"].is_error and 1 <= len(hits) <= 2 and hits[0]["title"] == "Vistula"
    assert {"rank", "title", "source", "score", "text"} <= set(hits[0])
    assert json.loads(got["search"].content[0].text) == got["search"].structured_content
    assert got["indexes"].structured_content == {"indexes": [{"name": "notes", "passages": 4, "location": "notes"}]}
    assert got["wrong"].is_error and "unknown index 'missing'; choose from ['notes']" in got["wrong"].content[0].text
    assert not got["loaded_before_ask"]  # the model loads on the first ask, not before
    answer = got["ask"].structured_content
    assert not got["ask"].is_error and answer["stop_reason"] in STOP_REASONS and answer["index"] == "notes"
    assert answer["answer"] is None or isinstance(answer["answer"], str)
    trajectory = answer["trajectory"]
    assert trajectory["question"] == "Which river flows through Warsaw?" and 1 <= len(trajectory["steps"]) <= 3
    assert all({"thought", "action", "observation", "final", "raw"} <= set(step) for step in trajectory["steps"])
    assert "loading the model" in server_log.read_text()
