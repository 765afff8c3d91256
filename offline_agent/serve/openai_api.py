"""The OpenAI chat-completions dialect: a request's JSON read into a question, its history and its run settings, and
a trajectory written back as a completion, a stream of chunks, or an error, in the shapes OpenAI clients read.

What a request may say (everything else is ignored, as OpenAI's own servers ignore what they do not know):
- `model`: the served index to answer from (GET /v1/models lists them; left out: the default one);
- `messages`: the last must be the user's question; each earlier user message with the assistant message after it
  is a turn of the chat's history (system, developer and tool messages are not shown to the agent, which has its
  own instructions);
- `temperature`, `seed`, `max_tokens` (or `max_completion_tokens`: the most tokens of one step, 16-4096);
- `stream`, `stream_options.include_usage`; `n` may only be 1;
- `show_sources` (an extension): write the sources under the answer in the content too.

A reply carries the extension field `offline_agent`: the index, the stop reason, the answer (null when the agent
stopped without one), the sources (file, title, heading path, line or page, and the sentence) and the id and URL
of the trajectory. Streamed chunks carry the steps in `delta.reasoning_content` (the field reasoning models use),
each with an `offline_agent.event`, and then the answer in `delta.content`.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, replace
from typing import Any

from offline_agent import incoming, jsonio
from offline_agent.agents import RunConfig
from offline_agent.sources import ABSTAINED, format_sources
from offline_agent.steps import Trajectory, Turn

SOURCES_MARK = "\n\nSources:"  # where written sources start in an answer's content (cut off again in history)
NO_ANSWER = "no answer (stop reason "  # how the content of a run without an answer starts
STEP_TOKENS = (16, 4096)
ROLES = ("system", "developer", "user", "assistant", "tool", "function")


class RequestError(Exception):
    """A request the server refuses: the HTTP status and OpenAI's error fields."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        kind: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.kind, self.param, self.code = status, kind, param, code
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return error_body(str(self), self.kind, self.param, self.code)


def error_body(message: str, kind: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    """OpenAI's error object."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


@dataclass(frozen=True)
class ChatRequest:
    """What a chat-completions request asks for, checked."""

    model: str
    question: str
    history: tuple[Turn, ...]
    config: RunConfig
    stream: bool = False
    include_usage: bool = False
    show_sources: bool = False


def read_chat(body: bytes, models: list[str], base: RunConfig, *, show_sources: bool = False) -> ChatRequest:
    """The request in `body` against the served `models` (the first is the default) and the server's run config;
    RequestError (400, or 404 for an unknown model) says what is wrong in one line."""
    try:
        data = incoming.clean_json(jsonio.loads(body), "a request")
    except jsonio.JSONReadError as exc:
        raise RequestError(f"the body is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise RequestError("the body must be a JSON object")
    model = data.get("model")
    if model in (None, ""):
        model = models[0]
    if not isinstance(model, str):
        raise RequestError("model must be a string", param="model")
    if model not in models:
        raise RequestError(
            f"the model {model!r} does not exist; choose from {models}",
            status=404,
            param="model",
            code="model_not_found",
        )
    question, history = _messages(data.get("messages"))
    if data.get("n") not in (None, 1):
        raise RequestError("n must be 1: the agent gives one answer per request", param="n")
    changes: dict[str, Any] = {}
    temperature = _number(data, "temperature", 0.0, 5.0)
    if temperature is not None:
        changes["temperature"] = temperature
    seed = _integer(data, "seed", -(2**31), 2**31 - 1)
    if seed is not None:
        changes["seed"] = seed
    for name in ("max_completion_tokens", "max_tokens"):
        tokens = _integer(data, name, *STEP_TOKENS)
        if tokens is not None:
            changes["max_tokens"] = tokens
            break
    options = data.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise RequestError("stream_options must be an object", param="stream_options")
    return ChatRequest(
        model=model,
        question=question,
        history=history,
        config=replace(base, **changes),
        stream=_flag(data, "stream"),
        include_usage=bool(options) and _flag(options, "include_usage"),
        show_sources=show_sources if data.get("show_sources") is None else _flag(data, "show_sources"),
    )


def _messages(messages: Any) -> tuple[str, tuple[Turn, ...]]:
    """The question (the last message, the user's) and the earlier turns."""
    if not isinstance(messages, list) or not messages:
        raise RequestError("messages must be a non-empty list", param="messages")
    said: list[tuple[str, str]] = []
    for number, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            raise RequestError(
                f"messages[{number}] must be an object with a role ({', '.join(ROLES)})", param="messages"
            )
        said.append((message["role"], _text(message.get("content"), number)))
    role, question = said[-1]
    if role != "user" or not question.strip():
        raise RequestError("the last message must be the user's question, and not empty", param="messages")
    turns: list[Turn] = []
    asked: str | None = None
    for role, text in said[:-1]:
        if role == "user" and text.strip():
            asked = text.strip()
        elif role == "assistant" and asked is not None:
            answer = text.split(SOURCES_MARK)[0].strip()
            turns.append(Turn(asked, None if not answer or answer.startswith(NO_ANSWER) else answer))
            asked = None
    return question.strip(), tuple(turns)


def _text(content: Any, number: int) -> str:
    """A message's text: a string, or the text parts of a list of parts (other parts are not read)."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        parts = [part.get("text") for part in content if isinstance(part, dict) and part.get("type") == "text"]
        if all(isinstance(part, str) for part in parts):
            return "\n".join(parts)  # type: ignore[arg-type]
    raise RequestError(f"messages[{number}].content must be a string or a list of text parts", param="messages")


def _flag(data: dict[str, Any], name: str) -> bool:
    value = data.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise RequestError(f"{name} must be true or false", param=name)
    return value


def _number(data: dict[str, Any], name: str, low: float, high: float) -> float | None:
    value = data.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise RequestError(f"{name} must be a number", param=name)
    if not low <= value <= high:
        raise RequestError(f"{name} must be between {low:g} and {high:g}, not {value}", param=name)
    return float(value)


def _integer(data: dict[str, Any], name: str, low: int, high: int) -> int | None:
    value = data.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise RequestError(f"{name} must be an integer", param=name)
    if not low <= value <= high:
        raise RequestError(f"{name} must be between {low} and {high}, not {value}", param=name)
    return value


# --- replies ---------------------------------------------------------------------------------------------------------


def content(trajectory: Trajectory, *, show_sources: bool) -> str:
    """What a client that shows only the content shows: the answer (or why there is none), then the sources."""
    if trajectory.abstained:
        lines = format_sources(trajectory) if show_sources else []
        return ABSTAINED + ("\n\n" + "\n".join(lines) if lines else "")
    if trajectory.answer is None:
        why = f": {trajectory.error}" if trajectory.error else ""
        return f"{NO_ANSWER}{trajectory.stop_reason}{why})"
    lines = format_sources(trajectory) if show_sources else []
    return trajectory.answer + ("\n\n" + "\n".join(lines) if lines else "")


def extension(trajectory: Trajectory, job_id: str, index: str) -> dict[str, Any]:
    """The `offline_agent` field of a reply."""
    return {
        "index": index,
        "answer": trajectory.answer,
        "abstained": trajectory.abstained,
        "stop_reason": trajectory.stop_reason,
        "sources": trajectory.sources or [],
        "steps": len(trajectory.steps),
        "trajectory_id": job_id,
        "trajectory_url": f"/v1/trajectories/{job_id}",
    }


def usage(trajectory: Trajectory) -> dict[str, int]:
    used = trajectory.usage
    return {
        "prompt_tokens": used.prompt_tokens,
        "completion_tokens": used.generated_tokens,
        "total_tokens": used.prompt_tokens + used.generated_tokens,
    }


def completion(trajectory: Trajectory, job_id: str, request: ChatRequest, created: int) -> dict[str, Any]:
    """The whole reply of a request that did not stream."""
    return {
        "id": job_id,
        "object": "chat.completion",
        "created": created,
        "model": request.model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content(trajectory, show_sources=request.show_sources)},
                "finish_reason": "stop",
            }
        ],
        "usage": usage(trajectory),
        "offline_agent": extension(trajectory, job_id, request.model),
    }


def chunk(
    job_id: str, model: str, created: int, delta: dict[str, Any], *, finish: str | None = None, **extra: Any
) -> str:
    """One server-sent event holding a chat.completion.chunk."""
    value = {
        "id": job_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if delta is not None else [],
        **extra,
    }
    return sse(value)


def sse(value: Any) -> str:
    return f"data: {json.dumps(value, ensure_ascii=False)}\n\n"


DONE = "data: [DONE]\n\n"


def now() -> int:
    return int(time.time())


__all__ = ["ChatRequest", "RequestError", "chunk", "completion", "content", "error_body", "extension", "read_chat"]
