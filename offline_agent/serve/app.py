"""The HTTP side of `offline-agent serve`: the OpenAI-style routes, the web page, the passages and trajectories,
and the guard in front of them all, as one Starlette application.

Routes (each behind the guard):
  GET  /                               the web page (page/index.html, with its app.js and style.css; nothing else)
  GET  /v1/models, /v1/models/{id}     one model per served index; `offline_agent.default` marks the default
  POST /v1/chat/completions            the agent answers (openai_api.py says what a request may hold)
  GET  /v1/trajectories/{id}           a finished run's whole trajectory (the last KEPT_TRAJECTORIES of them)
  GET  /v1/passages/{index}/{id}       one passage of a served index, by its number (what a source cites)
  GET  /health                         {"status": "ok", "waiting": questions queued, and the runs answered,
                                       cancelled and failed so far}

The guard (guard.py) checks the API key and the Host, and marks every reply nosniff; a POST must be JSON (guard.py
says why); the page forbids any script, style or connection from elsewhere (PAGE_POLICY).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from offline_agent.agents import RunConfig
from offline_agent.errors import ConfigError, OfflineAgentError
from offline_agent.serve import openai_api as api
from offline_agent.serve.guard import Guard
from offline_agent.serve.runs import Events, Job, QueueFullError, RunCancelled, RunQueue, ShuttingDownError

PAGE = Path(__file__).parent / "page"
ASSETS = {"app.js": "text/javascript", "style.css": "text/css"}
MAX_BODY = 1 << 20  # a question with its history: far under a megabyte
# A stream sends the model's text at most this often: the tokens of the pause go in one chunk. A wake-up and a chunk
# per token took the model thread's turn at the interpreter lock a few hundred times a question; a reader cannot
# tell 20 chunks a second from 60.
TOKEN_PAUSE_SECONDS = 0.05
PAGE_POLICY = "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"


@dataclass
class Served:
    """What the server answers from: the sessions by index name (the first is the default), the scope each
    index's runs are checked against, and the run config of the command line."""

    sessions: dict[str, Any]
    config: RunConfig
    scopes: dict[str, str | None]
    show_sources: bool = False

    @property
    def names(self) -> list[str]:
        return list(self.sessions)


def build_app(served: Served, runs: RunQueue, *, api_key: str | None, loopback: bool, cors: tuple[str, ...] = ()):
    """The Starlette application over `served`, running questions through `runs`."""
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.middleware import Middleware
    from starlette.middleware.cors import CORSMiddleware
    from starlette.requests import Request
    from starlette.responses import FileResponse, JSONResponse, Response
    from starlette.routing import Route

    def error(message: str, status: int, kind: str = "invalid_request_error", **fields: Any) -> Response:
        headers = fields.pop("headers", None)
        return JSONResponse(api.error_body(message, kind, **fields), status_code=status, headers=headers)

    async def page(request: Request) -> Response:
        return FileResponse(
            PAGE / "index.html", media_type="text/html", headers={"Content-Security-Policy": PAGE_POLICY}
        )

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ASSETS:  # a fixed list: no path from the request reaches the file system
            return error(f"no such file: {name}", 404, code="not_found")
        return FileResponse(PAGE / name, media_type=ASSETS[name])

    def model_entry(name: str) -> dict[str, Any]:
        session = served.sessions[name]
        return {
            "id": name,
            "object": "model",
            "created": 0,
            "owned_by": "offline-agent",
            "offline_agent": {
                "default": name == served.names[0],
                "passages": len(session.index),
                "location": session.corpus,
            },
        }

    async def models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [model_entry(name) for name in served.names]})

    async def one_model(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in served.sessions:
            return error(f"the model {name!r} does not exist; choose from {served.names}", 404, code="model_not_found")
        return JSONResponse(model_entry(name))

    async def chat(request: Request) -> Response:
        if not _is_json(request.headers.get("content-type", "")):
            return error("send the request as JSON (Content-Type: application/json)", 415)
        try:
            body = await _body(request)
            asked = api.read_chat(body, served.names, served.config, show_sources=served.show_sources)
            config = dataclasses.replace(asked.config, scope=served.scopes.get(asked.model))
            job = Job(asked.question, asked.model, config, asked.history, stream=asked.stream)
            events = job.attach(asyncio.get_running_loop())
            runs.submit(job)
        except api.RequestError as exc:
            return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)
        except QueueFullError as exc:
            return error(
                f"the server is busy ({runs.limit} questions are waiting); retry after {exc.retry_after} s",
                503,
                "server_overloaded",
                code="queue_full",
                headers={"Retry-After": str(exc.retry_after)},
            )
        except ShuttingDownError as exc:
            return error(str(exc), 503, "server_error", code="shutting_down")
        if asked.stream:
            return EventStream(_stream(job, events, asked, runs), on_gone=job.cancel)
        if not await _finished(job, events, request):
            job.cancel()  # the client went away: its run stops at its next step
            return Response(status_code=499)
        if job.trajectory is None:
            message, status, kind = _failure(job, runs)
            return error(message, status, kind)
        return JSONResponse(api.completion(job.trajectory, job.id, asked, api.now()))

    async def trajectory(request: Request) -> Response:
        found = runs.trajectory(request.path_params["id"])
        if found is None:
            return error("no trajectory with that id (ids come from chat completions; the newest are kept)", 404)
        return JSONResponse(found.to_dict())

    async def passage(request: Request) -> Response:
        name, number = request.path_params["index"], request.path_params["id"]
        if name not in served.sessions:
            return error(f"the index {name!r} is not served; choose from {served.names}", 404, code="model_not_found")
        try:
            if number >= 1 << 62:
                raise KeyError(number)
            found = served.sessions[name].index.passage(number)
        except KeyError:
            return error(f"the index {name!r} has no passage {number}", 404, code="not_found")
        return JSONResponse(
            {
                "index": name,
                "passage_id": int(found.id),
                "doc_id": found.doc_id,
                "title": found.title,
                "path": found.source or found.doc_id,
                "heading": list(found.heading),
                "line": found.line,
                "page": found.page,
                "text": found.text,
            }
        )

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "waiting": runs.waiting, **runs.counts})

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        code = "not_found" if exc.status_code == 404 else None
        return error(f"{request.method} {request.url.path}: {exc.detail}", exc.status_code, code=code)

    routes = [
        Route("/", page),
        Route("/static/{name}", asset),
        Route("/v1/models", models),
        Route("/v1/models/{name:path}", one_model),
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/v1/trajectories/{id}", trajectory),
        Route("/v1/passages/{index}/{id:int}", passage),
        Route("/health", health),
    ]
    middleware = [Middleware(Guard, api_key=api_key, loopback=loopback)]
    if cors:  # outside the guard: a preflight carries no key
        middleware.insert(
            0,
            Middleware(
                CORSMiddleware,
                allow_origins=list(cors),
                allow_methods=["GET", "POST"],
                allow_headers=["Authorization", "Content-Type"],
            ),
        )
    return Starlette(routes=routes, middleware=middleware, exception_handlers={HTTPException: http_error})


def _is_json(content_type: str) -> bool:
    return content_type.split(";")[0].strip().lower() == "application/json"


async def _body(request: Any) -> bytes:
    """The request's body, refused past MAX_BODY."""
    chunks, size = [], 0
    async for piece in request.stream():
        size += len(piece)
        if size > MAX_BODY:
            raise api.RequestError(f"the request is larger than {MAX_BODY // 1024} KiB", status=413)
        chunks.append(piece)
    return b"".join(chunks)


async def _finished(job: Job, events: Events, request: Any) -> bool:
    """Wait for the job's run to end (True), or for its client to go away first (False)."""
    gone = asyncio.ensure_future(_disconnect(request.receive))
    try:
        while True:
            getter = asyncio.ensure_future(events.get())
            done, _ = await asyncio.wait({getter, gone}, return_when=asyncio.FIRST_COMPLETED)
            if getter not in done:
                getter.cancel()
                return False
            if getter.result()[0] == "done":
                return True
    finally:
        gone.cancel()


async def _disconnect(receive: Any) -> None:
    """Return once the client has gone away (the request's body was read before)."""
    while (await receive())["type"] != "http.disconnect":
        pass


def _failure(job: Job, runs: RunQueue) -> tuple[str, int, str]:
    """The message, status and OpenAI error type of a job that ended without a trajectory."""
    exc = job.error
    if isinstance(exc, RunCancelled):
        return "the server is shutting down: the question was not answered", 503, "server_error"
    if isinstance(exc, ConfigError):  # the question's own problem (too long for the context, say)
        return str(exc), 400, "invalid_request_error"
    if isinstance(exc, OfflineAgentError):
        return str(exc), 500, "server_error"
    return f"the run failed: {type(exc).__name__} (see the server's log)", 500, "server_error"


class EventStream:
    """A text/event-stream reply that watches its client while it sends: when the client goes away, `on_gone` is
    called and the body stops (its generator is closed). Starlette's StreamingResponse notices a client that went
    away only when a write fails, under some servers never, and a run would go on for nobody."""

    def __init__(self, body: AsyncIterator[str], *, on_gone: Any) -> None:
        self.body = body
        self.on_gone = on_gone

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache")]
        await send({"type": "http.response.start", "status": 200, "headers": [*headers, (b"x-accel-buffering", b"no")]})

        async def pump() -> None:
            async for piece in self.body:
                await send({"type": "http.response.body", "body": piece.encode("utf-8"), "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})

        sending, watching = asyncio.ensure_future(pump()), asyncio.ensure_future(_disconnect(receive))
        try:
            done, _ = await asyncio.wait({sending, watching}, return_when=asyncio.FIRST_COMPLETED)
            if sending not in done:
                self.on_gone()
        finally:
            for task in (sending, watching):
                task.cancel()
            await asyncio.gather(sending, watching, return_exceptions=True)
            aclose = getattr(self.body, "aclose", None)
            if aclose is not None:
                await aclose()
        if sending in done and sending.exception() is not None:
            raise sending.exception()  # type: ignore[misc]


async def _stream(job: Job, events: Events, asked: api.ChatRequest, runs: RunQueue):
    """The run as server-sent events: the steps as they are written, then the answer, the end and [DONE]."""
    created, model = api.now(), asked.model
    finished = False
    try:
        yield api.chunk(job.id, model, created, {"role": "assistant", "content": ""})
        async for text, event in _steps(events):
            yield api.chunk(job.id, model, created, {"reasoning_content": text}, offline_agent=event)
        finished = True
        found = job.trajectory
        if found is None:
            message, _, kind = _failure(job, runs)
            yield api.sse(api.error_body(message, kind))
        else:
            yield api.chunk(job.id, model, created, {"content": api.content(found, show_sources=asked.show_sources)})
            extension = api.extension(found, job.id, model)
            yield api.chunk(job.id, model, created, {}, finish="stop", offline_agent={"event": "end", **extension})
            if asked.include_usage:
                yield api.chunk(job.id, model, created, None, usage=api.usage(found))
        yield api.DONE
    finally:
        if not finished:
            job.cancel()  # the client went away (the response was cancelled): the run stops at its next step


async def _steps(events: Events) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """(text for reasoning_content, the event) for each of the run's events, until it is done."""
    observed = False  # this step's Observation was sent when its tool ended
    while True:
        kind, value = await events.get()
        if kind == "done":
            return
        if kind == "step_start":
            observed = False
            yield ("\n" if value else ""), {"event": "step_start", "step": value + 1}
        elif kind == "token":  # with the tokens that come meanwhile: one chunk, not one per token
            await asyncio.sleep(TOKEN_PAUSE_SECONDS)  # the worker does not wake this loop while it waits
            yield value + events.take_tokens(), {"event": "token"}
        elif kind == "tool_start":
            name, argument = value
            yield "", {"event": "tool_start", "tool": name, "argument": argument}
        elif kind == "observation":
            observed = True
            text, is_error = value
            yield f"\nObservation: {text}\n", {"event": "observation", "text": text, "error": is_error}
        elif kind == "step":
            record = value
            if record.observation is not None and not observed:  # a call refused before its tool ran
                yield (
                    f"\nObservation: {record.observation}\n",
                    {"event": "observation", "text": record.observation, "error": record.tool_error},
                )
            error = record.parse_error["message"] if record.parse_error else None
            yield "", {"event": "step_end", "step": record.index + 1, "final": record.final, "parse_error": error}


__all__ = ["Served", "build_app"]
