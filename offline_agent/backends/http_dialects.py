"""What each model server calls things: the request body, the reply, the streamed events and the tokenizer.

One `Dialect` per server kind, pure functions of dicts (no I/O), so every dialect is testable against canned
replies and the transport in `http.py` is written once:
- llama-server (llama.cpp's own server): `POST /completion` with `grammar` (GBNF), `cache_prompt`, `n_probs`;
  the reply reports prompt tokens evaluated and reused from its cache; `POST /tokenize`; `GET /props` gives the
  chat template, the special tokens and the context size.
- llama-cpp-python's server (`python -m llama_cpp.server`): OpenAI `POST /v1/completions` with a `grammar` field;
  `POST /extras/tokenize`. It reuses its cache but does not report how much.
- vLLM: OpenAI `POST /v1/completions` with `structured_outputs: {"grammar": ...}` (vLLM 0.12 removed the older
  `guided_grammar` field); `POST /tokenize`; `GET /v1/models` gives max_model_len.
- SGLang: OpenAI `POST /v1/completions` with an `ebnf` field (its grammar backend reads GBNF-style EBNF).
  No tokenize endpoint is relied on: token counts are an estimate (the capability says so).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar


@dataclass
class ServerReply:
    """One completion as the server reported it (fields the server does not report stay None)."""

    text: str = ""
    finish_reason: str | None = None  # "stop" or "length"; None while a stream is still going
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    generated_tokens: int | None = None
    prompt_s: float | None = None
    generate_s: float | None = None
    pieces: list[str] = field(default_factory=list)


class Dialect:
    """The OpenAI `/v1/completions` shape; subclasses change the grammar field and what else differs."""

    kind = "openai"
    completion_path = "/v1/completions"
    tokenize_path: str | None = None
    reports_cached_tokens = False
    streams = True
    # Fields every completion request to this server carries as they are (each server's own name for the
    # repetition penalty, at 1.0: off), after the grammar's.
    fixed_fields: ClassVar[dict[str, Any]] = {}

    def completion_body(
        self,
        *,
        model: str | None,
        prompt: str,
        grammar: str | None,
        max_tokens: int,
        stop: list[str],
        temperature: float,
        seed: int | None,
        stream: bool,
        sampling: dict[str, float],
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "prompt": prompt,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "top_k": int(sampling["top_k"]),
            "top_p": sampling["top_p"],
            "min_p": sampling["min_p"],
            "stop": stop,
            "stream": stream,
        }
        if model:
            body["model"] = model
        if seed is not None:
            body["seed"] = seed
        if grammar is not None:
            body.update(self.grammar_fields(grammar))
        body.update(self.fixed_fields)
        return body

    def grammar_fields(self, grammar: str) -> dict[str, Any]:
        raise NotImplementedError

    def reply(self, data: dict[str, Any]) -> ServerReply:
        """A whole (non-streamed) reply."""
        choice = (data.get("choices") or [{}])[0]
        reply = ServerReply(text=_text(choice.get("text")), finish_reason=_finish(choice.get("finish_reason")))
        self._usage(reply, data.get("usage"))
        return reply

    def event(self, data: dict[str, Any], reply: ServerReply) -> None:
        """Fold one streamed event into `reply`."""
        choices = data.get("choices") or []
        if choices:
            piece = _text(choices[0].get("text"))
            if piece:
                reply.pieces.append(piece)
                reply.text += piece
            finish = _finish(choices[0].get("finish_reason"))
            if finish:
                reply.finish_reason = finish
        self._usage(reply, data.get("usage"))

    def _usage(self, reply: ServerReply, usage: dict[str, Any] | None) -> None:
        if not usage:
            return
        reply.prompt_tokens = usage.get("prompt_tokens", reply.prompt_tokens)
        reply.generated_tokens = usage.get("completion_tokens", reply.generated_tokens)
        details = usage.get("prompt_tokens_details") or {}
        if details.get("cached_tokens") is not None:
            reply.cached_tokens = details["cached_tokens"]

    def stream_fields(self) -> dict[str, Any]:
        """Extra fields of a streamed request (vLLM: ask for the usage in the last event)."""
        return {}

    def tokenize_body(self, text: str, model: str | None) -> dict[str, Any]:
        raise NotImplementedError

    def tokens(self, data: dict[str, Any]) -> list[int]:
        tokens = data.get("tokens")
        if not isinstance(tokens, list):
            raise ValueError(f"its tokens are not a list: {str(tokens)[:40]}")
        return tokens


class LlamaServerDialect(Dialect):
    """llama.cpp's llama-server, on its native `/completion` endpoint."""

    kind = "llama-server"
    completion_path = "/completion"
    tokenize_path = "/tokenize"
    reports_cached_tokens = True
    # cache_prompt: keep the prompt's cache, the agent's next prompt extends this one
    fixed_fields = {"cache_prompt": True, "n_probs": 0, "repeat_penalty": 1.0}

    def completion_body(self, **kwargs: Any) -> dict[str, Any]:
        body = super().completion_body(**kwargs)
        body["n_predict"] = body.pop("max_tokens")
        body.pop("model", None)
        return body

    def grammar_fields(self, grammar: str) -> dict[str, Any]:
        return {"grammar": grammar}

    def reply(self, data: dict[str, Any]) -> ServerReply:
        reply = ServerReply(text=_text(data.get("content")))
        self._stats(reply, data)
        return reply

    def event(self, data: dict[str, Any], reply: ServerReply) -> None:
        piece = _text(data.get("content"))
        if piece:
            reply.pieces.append(piece)
            reply.text += piece
        if data.get("stop"):
            self._stats(reply, data)

    def _stats(self, reply: ServerReply, data: dict[str, Any]) -> None:
        stop_type = data.get("stop_type")
        if stop_type is not None or data.get("stop"):
            reply.finish_reason = "length" if stop_type == "limit" or data.get("truncated") else "stop"
        timings = data.get("timings") or {}
        prompt = data.get("tokens_evaluated")
        if prompt is not None:
            reply.prompt_tokens = prompt
            if timings.get("cache_n") is not None:
                reply.cached_tokens = timings["cache_n"]
            elif timings.get("prompt_n") is not None:
                reply.cached_tokens = max(prompt - timings["prompt_n"], 0)
        if data.get("tokens_predicted") is not None:
            reply.generated_tokens = data["tokens_predicted"]
        if timings.get("prompt_ms") is not None:
            reply.prompt_s = timings["prompt_ms"] / 1000
        if timings.get("predicted_ms") is not None:
            reply.generate_s = timings["predicted_ms"] / 1000

    def tokenize_body(self, text: str, model: str | None) -> dict[str, Any]:
        return {"content": text, "add_special": False}


class LlamaCppPythonDialect(Dialect):
    """llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`)."""

    kind = "llama-cpp-python"
    tokenize_path = "/extras/tokenize"
    fixed_fields = {"repeat_penalty": 1.0}

    def grammar_fields(self, grammar: str) -> dict[str, Any]:
        return {"grammar": grammar}

    def tokenize_body(self, text: str, model: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {"input": text}
        if model:
            body["model"] = model
        return body


class VllmDialect(Dialect):
    """vLLM's OpenAI-compatible server (0.12 and later: `structured_outputs`)."""

    kind = "vllm"
    tokenize_path = "/tokenize"
    fixed_fields = {"repetition_penalty": 1.0, "skip_special_tokens": True}

    def grammar_fields(self, grammar: str) -> dict[str, Any]:
        return {"structured_outputs": {"grammar": grammar}}

    def stream_fields(self) -> dict[str, Any]:
        return {"stream_options": {"include_usage": True}}

    def tokenize_body(self, text: str, model: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {"prompt": text, "add_special_tokens": False}
        if model:
            body["model"] = model
        return body


class SglangDialect(Dialect):
    """SGLang's OpenAI-compatible server, with its `ebnf` grammar field."""

    kind = "sglang"
    fixed_fields = {"repetition_penalty": 1.0}

    def grammar_fields(self, grammar: str) -> dict[str, Any]:
        return {"ebnf": grammar}

    def stream_fields(self) -> dict[str, Any]:
        return {"stream_options": {"include_usage": True}}


DIALECTS: dict[str, type[Dialect]] = {
    "llama-server": LlamaServerDialect,
    "llama-cpp-python": LlamaCppPythonDialect,
    "vllm": VllmDialect,
    "sglang": SglangDialect,
}


def _text(value: Any) -> str:
    """Text the server sent, "" for none; ValueError for anything else (the backend makes it one error line)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"text that is not a string: {str(value)[:40]}")
    return value


def _finish(value: Any) -> str | None:
    if value in (None, ""):
        return None
    return "length" if value == "length" else "stop"


__all__ = ["DIALECTS", "Dialect", "ServerReply"]
