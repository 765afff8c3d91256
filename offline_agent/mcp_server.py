"""The user's indexes as a Model Context Protocol server, so desktop assistants and other agents can search
private files (and ask the local agent about them) without the files leaving the machine.

`offline-agent mcp` serves over stdio only (no port is opened), with the official `mcp` SDK (the optional `mcp`
extra). Three tools:
- `search(query, k, index)`: ranked passages with title, source, score and text;
- `ask(question, index)`: the agent answers with the session's model and strategy; the answer (or `abstained`:
  the documents do not say), the stop reason,
  the passages the answer rests on (`sources`: file, heading path, line or page, sentence) and the whole
  trajectory come back;
- `list_indexes()`: the indexes this server exposes, with their sizes.

The model loads on the first `ask`, never before, so a client that only searches never pays for it; one question
runs at a time (llama.cpp holds one context). Indexes open on first use and stay open. Errors a user can act on
(an unknown index, an empty query) come back as tool errors with one line, and the server goes on.

While the SDK serves, file descriptor 1 points at stderr, so stray output of llama.cpp or a library cannot
corrupt the protocol stream. Each line from the client is checked before the SDK sees it (`CheckedLines`): text
that is not valid Unicode is replaced (incoming.py), and a line that is not a JSON-RPC message gets a JSON-RPC
error back instead of silence.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import sys
import threading
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from offline_agent import incoming
from offline_agent._version import __version__
from offline_agent.errors import ConfigError, OfflineAgentError

if TYPE_CHECKING:
    from offline_agent.agents import AgentSettings

INSTALL_HINT = "pip install 'offline-agent[mcp]'"
SAMPLE = "sample"
MAX_K = 50


def require_mcp() -> Any:
    """The SDK's MCPServer class, or a ConfigError that says how to install it."""
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError:
        raise ConfigError(
            f"the MCP server needs the `mcp` package (version 2), which is not installed: {INSTALL_HINT}"
        ) from None
    return MCPServer


class IndexSet:
    """The indexes a server exposes: those named with --index (names or paths), else every named index under
    OFFLINE_AGENT_HOME (read again on each call, so an index built while the server runs appears), or the sample
    corpus when there is none. Each opens on first use and stays open."""

    def __init__(self, chosen: Sequence[str] = ()) -> None:
        self.chosen = list(dict.fromkeys(chosen))
        self._open: dict[str, Any] = {}
        self._lock = threading.Lock()
        for name in self.chosen:
            self._check(name)

    @staticmethod
    def _check(name: str) -> None:
        from offline_agent.retrieval import storage
        from offline_agent.retrieval.catalog import indexes_dir

        if Path(name).expanduser().exists():
            return
        if "/" not in name and storage.is_index_dir(indexes_dir() / name):
            return
        raise ConfigError(f"index not found: {name!r} (a name from `offline-agent index list`, or a folder)")

    def names(self) -> list[str]:
        if self.chosen:
            return list(self.chosen)
        from offline_agent.retrieval import list_indexes

        entries = list_indexes()
        # One that cannot be read is listed last with its error (never first: the default is the first), and a
        # search of it says why; it hides none of the others.
        broken = [entry["name"] for entry in entries if "error" in entry]
        return ([entry["name"] for entry in entries if "error" not in entry] or [SAMPLE]) + broken

    def describe(self) -> list[dict[str, Any]]:
        """Name, passages and where each exposed index lives (opening it if it was not open)."""
        out = []
        for name in self.names():
            try:
                index = self.open(name)
                out.append({"name": name, "passages": len(index), "location": self._target(name)})
            except Exception as exc:  # noqa: BLE001 - one index that cannot be opened never hides the others
                out.append({"name": name, "error": one_line(exc)})
        return out

    def _target(self, name: str) -> str:
        if name == SAMPLE and not self.chosen:
            from offline_agent.resources import sample_corpus

            return str(sample_corpus())
        return name

    def resolve(self, name: str | None) -> str:
        names = self.names()
        if name in (None, ""):
            return names[0]
        if name not in names:
            raise ConfigError(f"unknown index {name!r}; choose from {names}")
        return name

    def open(self, name: str | None) -> Any:
        """The index called `name` (None: the first one), opened on first use."""
        name = self.resolve(name)
        with self._lock:
            if name not in self._open:
                from offline_agent.retrieval import open_corpus

                self._open[name] = open_corpus(self._target(name))
            return self._open[name]


@dataclass
class ServerSettings:
    """What `ask` runs with: the model and its backend (built on the first ask), and the strategy with its run
    config and options (agents.AgentSettings; None: AgentSettings(), react under the `plain` profile)."""

    model: str | None = None
    backend: Any = None  # a cli.options.BackendChoice (None: the default backend and model)
    settings: AgentSettings | None = None


class OfflineAgentTools:
    """The tools' behaviour, apart from the SDK (so it is testable without a transport)."""

    def __init__(self, indexes: IndexSet, settings: ServerSettings, *, backend: Any = None) -> None:
        self.indexes = indexes
        self.settings = settings
        self._backend = backend
        self._model_lock = threading.Lock()

    def search(self, query: str, k: int = 5, index: str | None = None) -> dict[str, Any]:
        if not query or not query.strip():
            raise ConfigError("the query is empty")
        if not 1 <= k <= MAX_K:
            raise ConfigError(f"k must be between 1 and {MAX_K}, not {k}")
        name = self.indexes.resolve(index)
        result = self.indexes.open(name).search(query, k=k)
        hits = [
            {
                "rank": rank,
                "title": passage.title,
                "source": passage.source or passage.doc_id,
                "score": round(float(score), 4),
                "text": passage.text,
                "doc_id": passage.doc_id,
                "passage_id": int(passage.id),
            }
            for rank, (passage, score) in enumerate(zip(result.passages, result.scores.tolist(), strict=True), 1)
        ]
        return {"index": name, "query": query, "hits": hits}

    def ask(self, question: str, index: str | None = None) -> dict[str, Any]:
        from offline_agent.agents import AgentSettings
        from offline_agent.runner import Session
        from offline_agent.sources import attach_sources

        if not question or not question.strip():
            raise ConfigError("the question is empty")
        name = self.indexes.resolve(index)
        corpus = self.indexes.open(name)
        with self._model_lock:  # one question at a time: llama.cpp holds one context
            chosen = self.settings.settings or AgentSettings()
            session = Session.from_settings(chosen, backend=self._load(), index=corpus, corpus=name)
            trajectory = attach_sources(session.ask(question, chosen.config), corpus)
        return {
            "answer": trajectory.answer,
            "abstained": trajectory.abstained,  # the documents do not say: no answer, sources the nearest passages
            "stop_reason": trajectory.stop_reason,
            "index": name,
            "sources": trajectory.sources,
            "trajectory": trajectory.to_dict(),
        }

    def list_indexes(self) -> list[dict[str, Any]]:
        return self.indexes.describe()

    @property
    def model_loaded(self) -> bool:
        return self._backend is not None

    def _load(self) -> Any:
        if self._backend is None:
            from offline_agent.runner import load_backend

            print(f"offline-agent mcp: loading the model ({self.settings.model or 'default'})", file=sys.stderr)
            from offline_agent.backends.registry import setup_time_limit

            choice = self.settings.backend
            chosen = self.settings.settings
            limit = chosen.config.max_seconds if chosen is not None else None
            with setup_time_limit(limit):  # a model server must answer within --max-seconds
                self._backend = choice.build() if choice is not None else load_backend(None, self.settings.model)
        return self._backend


def build_server(tools: OfflineAgentTools) -> Any:
    """An MCPServer with the three tools; OfflineAgentErrors become tool errors with their one-line message."""
    server_class = require_mcp()
    from mcp.server.mcpserver.exceptions import ToolError

    server = server_class(
        name="offline-agent",
        log_level="WARNING",  # the SDK logs every failed call at INFO; the client gets the error anyway
        version=__version__,
        instructions="Search the user's local document indexes (BM25) and ask a local agent about them. "
        "Nothing leaves the machine. Call list_indexes to see what can be searched.",
    )

    def search(query: str, k: int = 5, index: str | None = None) -> dict[str, Any]:
        """Ranked passages of a local index for a query: rank, title, source, score, text (best first).

        query: keywords or a question; k: how many passages (1-50); index: which index (default: the first)."""
        with tool_errors(ToolError, "search"):
            return tools.search(query, k, index)

    def ask(question: str, index: str | None = None) -> dict[str, Any]:
        """Answer a question with the local agent, which searches a local index step by step.

        Returns the answer (null when the agent stopped without one), `abstained` (true when the documents do not
        say: the answer is null and the sources are the nearest passages found), the stop reason (final,
        abstained, max_steps, timeout, error), the sources (the passages the answer was taken from: path, title,
        heading path, line or page, and the sentence; empty when the answer is written in none of them) and the
        trajectory (every step: thought, action, observation, final). The first call loads the model."""
        with tool_errors(ToolError, "ask"):
            return tools.ask(question, index)

    def list_indexes() -> dict[str, Any]:
        """The local indexes this server can search, with their passage counts."""
        with tool_errors(ToolError, "list_indexes"):
            return {"indexes": tools.list_indexes()}

    server.add_tool(search, name="search")
    server.add_tool(ask, name="ask")
    server.add_tool(list_indexes, name="list_indexes")
    return server


def one_line(exc: BaseException) -> str:
    """An error's message on one line; for one that is not an OfflineAgentError (a bug, or a case no check
    foresaw), its type first, so that the client learns more than "Error executing tool"."""
    text = " ".join(str(exc).split())[:300]
    return text if isinstance(exc, OfflineAgentError) else f"{type(exc).__name__}: {text}".rstrip(": ")


@contextlib.contextmanager
def tool_errors(tool_error: type[Exception], tool: str) -> Iterator[None]:
    """Any failure of a tool as the SDK's `tool_error` with one line: the SDK shows an exception of its own
    type with its message, and any other as "Error executing tool NAME" only. One that is not an OfflineAgentError
    also goes to stderr whole (the server's log), as a bug to report."""
    try:
        yield
    except OfflineAgentError as exc:
        raise tool_error(one_line(exc)) from None
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        raise tool_error(f"{tool} failed: {one_line(exc)}") from None


def serve(tools: OfflineAgentTools) -> None:
    """Serve the tools over stdio until the client closes stdin; every line is checked first (`CheckedLines`)."""
    import anyio

    server = build_server(tools)
    lowlevel = getattr(server, "_lowlevel_server", None)  # what run_stdio_async runs; absent: serve unchecked
    if lowlevel is None:  # pragma: no cover - an SDK that moved it
        anyio.run(server.run_stdio_async)
        return

    async def run() -> None:
        from mcp.server.stdio import stdio_server

        lines = CheckedLines(sys.stdin.buffer)
        async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
            lines.replies = write_stream
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    anyio.run(run)


class CheckedLines:
    """The lines of stdin as the SDK's stdio transport reads them, each checked on the way in.

    The SDK drops a line it cannot read without a word: not JSON, not a JSON-RPC message, or a lone surrogate
    (`"\\ud800"`), which its parser refuses. Here bytes that are not UTF-8 and lone surrogates become U+FFFD
    (incoming.py), and a line that is still not a JSON-RPC message is answered with a JSON-RPC error (-32700 parse
    error, id null; -32600 invalid request, with the line's id where it has one) and not passed on.
    """

    def __init__(self, stream: Any) -> None:
        import anyio

        self._stream = anyio.wrap_file(stream)
        self.replies: Any = None  # the transport's write stream, once serving

    def __aiter__(self) -> CheckedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._stream.readline()
            if not line:
                raise StopAsyncIteration
            text = incoming.decode(line, "MCP messages").strip()
            if not text:
                continue
            checked, error = checked_message(text)
            if error is None:
                return checked
            if self.replies is not None:
                from mcp.shared.message import SessionMessage

                await self.replies.send(SessionMessage(error))


def checked_message(text: str) -> tuple[str, Any]:
    """(the line to pass on, None), or ("", the JSON-RPC error to answer it with)."""
    import mcp_types as types

    from offline_agent import jsonio

    try:
        value = jsonio.loads(text)
    except jsonio.JSONReadError as exc:
        return "", types.JSONRPCError(
            jsonrpc="2.0", id=None, error=types.ErrorData(code=types.PARSE_ERROR, message=f"Parse error: {exc}")
        )
    given = value.get("id") if isinstance(value, dict) else None
    try:
        types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except Exception as exc:  # noqa: BLE001 - pydantic's ValidationError, whatever the line held
        reason = str(exc).splitlines()[0][:200]
        return "", _invalid_request(types, given, f"Invalid request: {reason}")
    if isinstance(value, dict) and "method" in value and "id" in value and not _plain_id(given):
        # The SDK reads a request whose id is not a string or an integer (1.5, true, {}, null) as a notification,
        # which gets no reply: the client would wait for ever.
        return "", _invalid_request(types, given, "Invalid request: the id must be a string or an integer")
    return json.dumps(value, ensure_ascii=False), None


def _plain_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _invalid_request(types: Any, given: Any, message: str) -> Any:
    """A -32600 error answering the id `given`: as it was sent where it is a string or a number (a client that sent
    1.5 waits for 1.5), null where it is anything else (JSON-RPC's id when the request's cannot be read)."""
    number = isinstance(given, (int, float)) and not isinstance(given, bool) and math.isfinite(given)
    echoed = given if _plain_id(given) or number else None
    return _error_class(types)(
        jsonrpc="2.0", id=echoed, error=types.ErrorData(code=types.INVALID_REQUEST, message=message)
    )


@functools.cache
def _error_class(types: Any) -> Any:
    """The SDK's JSONRPCError with any number as its id (the SDK's takes an integer or a string only)."""

    class EchoedError(types.JSONRPCError):
        id: float | int | str | None

    return EchoedError
