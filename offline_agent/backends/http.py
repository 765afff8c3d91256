"""The http backend: a model server (llama-server, llama-cpp-python's server, vLLM, SGLang) behind the protocol.

A user who outgrows one laptop points offline_agent at a serving engine they already run, with the same grammar
guarantee: every completion is sent with the step's GBNF in the server's own field (`http_dialects.py`), and a
server that ignores it is caught before the first question by a probe (a grammar that allows one odd string
only, which no unconstrained model would write) and refused with a GrammarError: never used silently
unconstrained. The agent still parses every completion.

Transport (`http_transport.py`): the standard library only (urllib), one connection per request, so `complete`
may be called from several threads at once (`eval --concurrency N`; servers batch). Each request waits at most the
timeout (its whole exchange, however slowly the server sends), and never past a deadline: the run's, and while the
backend is set up (detection, the probe) the one the CLI's --max-seconds sets (registry.setup_time_limit). Replies
are streamed when the caller wants the text as it comes (`on_token`) or has a deadline; leaving a stream early
closes the connection, which stops the server's work.
A reply in a shape it should not have (a list for an object, a number for text, JSON nested too deeply) is one
ModelError line; no message shows credentials from the URL.

The server kind is `--server-kind` or detected: `/props` (llama-server), `/get_model_info` (SGLang), then
`/v1/models` (owned_by "vllm" or llama-cpp-python's "me"). The chat template, special tokens and context size come
from the server when it says them (llama-server's /props; vLLM's max_model_len), else from `--model` when it names
a local registry model or GGUF (its metadata is read, not its weights), else ChatML and `--context-size` (default
4096); `describe()` records which. Token counts use the server's tokenize endpoint where it has one, else the
local model file's tokenizer, else an estimate (then `capabilities.exact_token_counts` is False).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from http.client import HTTPException
from pathlib import Path
from typing import Any

from offline_agent import jsonio
from offline_agent.backends.base import BackendCapabilities, DecoderGrammar, TokenCallback, gbnf_of
from offline_agent.backends.http_dialects import DIALECTS, Dialect, ServerReply
from offline_agent.backends.http_transport import (
    DEFAULT_TIMEOUT,
    ServerConnection,
    ServerRefusedError,
    TimeLimit,
    WatchedResponse,
    as_int,
    as_list,
    as_text,
    error_message,
)
from offline_agent.backends.registry import BackendOptions, setup_deadline
from offline_agent.errors import ConfigError, ContextOverflowError, GrammarError, ModelError
from offline_agent.prompts import Prompt
from offline_agent.steps import Completion, Timings, Usage

SERVER_KINDS = ("llama-server", "llama-cpp-python", "vllm", "sglang")
# The probe: a grammar that allows one string only, which no model writes unconstrained after this prompt.
PROBE_TEXT = "zq7-xj4"
PROBE_GRAMMAR = f'root ::= "{PROBE_TEXT}"'
PROBE_PROMPT = "Say hello in one short sentence.\n"
# The same sampling defaults as the in-process backends.
_SAMPLING = {"top_k": 40, "top_p": 0.95, "min_p": 0.05}


class HttpBackend:
    """A model server reached over HTTP; one completion per request, requests may overlap."""

    name = "http"
    bos_token: str | None
    eos_token: str | None

    def __init__(
        self,
        server_url: str,
        *,
        server_kind: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        context_size: int | None = None,
        retries: int = 3,
        backoff: float = 0.5,
        probe: bool = True,
        deadline: float | None = None,
    ) -> None:
        """Connect to `server_url`, detect its kind unless given, read what it says about its model, and probe
        that it enforces grammars (`probe=False` skips that, for tests of the transport only). All of that must be
        done by `deadline` (time.monotonic(); default: the one a caller set with registry.setup_deadline, the
        CLI's --max-seconds), else one ModelError line."""
        if server_kind is not None and server_kind not in SERVER_KINDS:
            raise ConfigError(f"unknown server kind {server_kind!r}; choose from {list(SERVER_KINDS)}")
        self.connection = ServerConnection(
            server_url, api_key=api_key, timeout=timeout, retries=retries, backoff=backoff
        )
        self.url = self.connection.shown  # what messages and trajectories show: no credentials
        self.api_key = api_key
        self.timeout = timeout
        limit = setup_deadline() if deadline is None else (deadline, None)
        try:
            self._set_up(server_kind, model, context_size, probe, limit[0])
        except TimeLimit:
            within = f"within {limit[1]:g} s (--max-seconds)" if limit[1] else "before the time limit"
            raise ModelError(f"the server at {self.url} did not answer {within}") from None

    def _set_up(
        self, server_kind: str | None, model: str | None, context_size: int | None, probe: bool, deadline: float | None
    ) -> None:
        self.kind = server_kind or self._detect_kind(deadline)
        self.connection.kind = self.kind
        self.dialect: Dialect = DIALECTS[self.kind]()
        info = self._server_info(deadline)
        self.served_model: str | None = info.get("model")
        self.model_name = self.served_model or model or "server"
        local = _local_model(model)
        self.sha256 = local.get("sha256")
        if self.sha256 and model:
            self.model_name = model
        self.chat_template, self.template_source = _first(
            (info.get("chat_template"), "server"), (local.get("chat_template"), "local model file")
        )
        if self.template_source is None:
            from offline_agent.prompts import CHATML_TEMPLATE

            self.chat_template, self.template_source = CHATML_TEMPLATE, "chatml (assumed: the server does not say)"
        self.bos_token = info.get("bos_token") or local.get("bos_token")
        self.eos_token = info.get("eos_token") or local.get("eos_token")
        self.context_size = info.get("context_size") or context_size or local.get("context_size") or 4096
        self._local_tokenize = local.get("tokenize")
        self._count_cache: dict[str, int] = {}
        self._lock = threading.Lock()
        self._exact_counts = bool(self.dialect.tokenize_path or self._local_tokenize)
        if probe:
            self.probe_grammar(deadline)

    @classmethod
    def from_options(cls, options: BackendOptions) -> HttpBackend:
        if not options.server_url:
            raise ConfigError("--backend http needs --server-url URL (or OFFLINE_AGENT_SERVER_URL)")
        return cls(
            options.server_url,
            server_kind=options.server_kind,
            model=options.model,
            api_key=options.api_key,
            timeout=options.timeout or DEFAULT_TIMEOUT,
            context_size=options.context_size,
        )

    @property
    def capabilities(self) -> BackendCapabilities:
        return BackendCapabilities(
            supports_grammar=True,
            reuses_prefix_cache=self.dialect.reports_cached_tokens,
            reports_rejections=False,
            exact_token_counts=self._exact_counts,
            concurrent_requests=True,
        )

    # ---- the protocol ------------------------------------------------------------------------------------------
    def complete(
        self,
        prompt: str,
        *,
        grammar: str | DecoderGrammar | None = None,
        max_tokens: int = 256,
        stop: Sequence[str] = (),
        temperature: float = 0.0,
        seed: int | None = None,
        on_token: TokenCallback | None = None,
        deadline: float | None = None,
    ) -> Completion:
        """One completion; streamed when `on_token` or `deadline` is given. When the deadline passes (before the
        server answers, or while it streams or stalls) the connection is closed, the server stops, and the finish
        reason is "interrupted"."""
        if isinstance(prompt, Prompt):  # the server reads special tokens anywhere: a document's must stay text
            prompt = prompt.neutralized(also=(self.bos_token, self.eos_token))
        started = time.perf_counter()
        try:
            if self._exact_counts:
                prompt_tokens = self._count(prompt, deadline)
                if prompt_tokens + max_tokens > self.context_size:
                    raise ContextOverflowError(
                        f"the prompt ({prompt_tokens} tokens) plus {max_tokens} new tokens exceed the context window "
                        f"of {self.context_size} tokens"
                    )
            stream = (on_token is not None or deadline is not None) and self.dialect.streams
            body = self.dialect.completion_body(
                model=self.served_model,
                prompt=prompt,
                grammar=None if grammar is None else gbnf_of(grammar),
                max_tokens=max_tokens,
                stop=[s for s in stop if s],
                temperature=temperature,
                seed=seed,
                stream=stream,
                sampling=_SAMPLING,
            )
            if stream:
                body.update(self.dialect.stream_fields())
                reply, first_at, interrupted = self._stream(body, on_token, deadline)
            else:
                reply = self._reply(self.connection.post(self.dialect.completion_path, body, deadline))
                first_at, interrupted = None, False
        except TimeLimit:
            reply, first_at, interrupted = ServerReply(), None, True
        ended = time.perf_counter()
        return self._completion(reply, prompt, stop, started, first_at, ended, interrupted)

    def warm(self, prefix: str) -> None:
        """Nothing to do: a server with a prompt cache (llama-server's cache_prompt) keeps the prefix itself."""

    def count_tokens(self, text: str) -> int:
        try:
            return self._count(text, None)
        except TimeLimit:  # pragma: no cover - no deadline, no time limit
            raise AssertionError("unreachable") from None

    def _count(self, text: str, deadline: float | None) -> int:
        with self._lock:
            known = self._count_cache.get(text)
        if known is not None:
            return known
        if self.dialect.tokenize_path:
            body = self.dialect.tokenize_body(text, self.served_model)
            data = self.connection.post(self.dialect.tokenize_path, body, deadline)
            count = len(self._shaped(lambda: self.dialect.tokens(data), "a tokenize reply"))
        elif self._local_tokenize is not None:
            count = len(self._local_tokenize(text))
        else:
            count = (len(text) + 3) // 4  # an estimate: about four characters a token
        with self._lock:
            if len(self._count_cache) > 4096:
                self._count_cache.clear()
            self._count_cache[text] = count
        return count

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.model_name,
            "path": None,
            "url": self.url,
            "sha256": self.sha256,
            "server_kind": self.kind,
            "served_model": self.served_model,
            "context_size": self.context_size,
            "chat_template": self.template_source,
            "token_counts": "exact" if self._exact_counts else "estimate",
            "backend": self.name,
        }

    # ---- the grammar probe ---------------------------------------------------------------------------------------
    def probe_grammar(self, deadline: float | None = None) -> None:
        """Refuse a server that does not enforce our grammars (it rejects the field, or writes past it)."""
        body = self.dialect.completion_body(
            model=self.served_model,
            prompt=PROBE_PROMPT,
            grammar=PROBE_GRAMMAR,
            max_tokens=16,
            stop=[],
            temperature=0.0,
            seed=0,
            stream=False,
            sampling=_SAMPLING,
        )
        try:
            reply = self._reply(self.connection.post(self.dialect.completion_path, body, deadline))
        except ServerRefusedError as exc:
            raise GrammarError(
                f"the {self.kind} server at {self.url} refused a grammar-constrained request ({exc}); it cannot "
                "run offline_agent's steps"
            ) from None
        if reply.text.strip() != PROBE_TEXT:
            raise GrammarError(
                f"the {self.kind} server at {self.url} ignores the grammar: asked for a completion that may only be "
                f"{PROBE_TEXT!r}, it wrote {reply.text[:60]!r}. Refusing to run unconstrained (check --server-kind, "
                "and that the server has grammar support)"
            )

    # ---- what the server says about itself -------------------------------------------------------------------
    def _detect_kind(self, deadline: float | None) -> str:
        props = self.connection.get_json("/props", deadline)
        if isinstance(props, dict) and ("default_generation_settings" in props or "chat_template" in props):
            return "llama-server"
        if isinstance(self.connection.get_json("/get_model_info", deadline), dict):
            return "sglang"
        models = self.connection.get_json("/v1/models", deadline)
        entries = as_list(models.get("data")) if isinstance(models, dict) else []
        owners = {str(m.get("owned_by")) for m in entries if isinstance(m, dict)}
        if "vllm" in owners:
            return "vllm"
        if "sglang" in owners:
            return "sglang"
        if "me" in owners:
            return "llama-cpp-python"
        if models is None and props is None:
            raise ModelError(f"no model server answers at {self.url} (tried /props and /v1/models)")
        raise ConfigError(
            f"cannot tell which kind of server runs at {self.url}; pass --server-kind ({', '.join(SERVER_KINDS)})"
        )

    def _server_info(self, deadline: float | None) -> dict[str, Any]:
        """What the server reports: model name, context size, chat template, special tokens (where it does); a
        field in a shape it should not have is left out, as if the server had not said it."""
        info: dict[str, Any] = {}
        if self.kind == "llama-server":
            props = self.connection.get_json("/props", deadline)
            props = props if isinstance(props, dict) else {}
            settings = props.get("default_generation_settings")
            settings = settings if isinstance(settings, dict) else {}
            info["context_size"] = _positive(settings.get("n_ctx")) or _positive(props.get("n_ctx"))
            info["chat_template"] = as_text(props.get("chat_template")) or None
            info["bos_token"] = as_text(props.get("bos_token")) or None
            info["eos_token"] = as_text(props.get("eos_token")) or None
            return info
        models = self.connection.get_json("/v1/models", deadline)
        data = [m for m in as_list(models.get("data") if isinstance(models, dict) else None) if isinstance(m, dict)]
        if data:
            info["model"] = as_text(data[0].get("id")) or None
            info["context_size"] = _positive(data[0].get("max_model_len"))
        return info

    # ---- replies -----------------------------------------------------------------------------------------------
    def _shaped(self, read: Any, what: str) -> Any:
        """`read()`, with a reply in a shape the dialect does not expect (a number for a list, a list for text) as one
        ModelError line."""
        try:
            return read()
        except (AttributeError, TypeError, ValueError, KeyError, IndexError) as exc:
            raise ModelError(f"the server at {self.url} sent {what} in a shape it should not have ({exc})") from None

    def _reply(self, data: dict[str, Any]) -> ServerReply:
        return self._shaped(lambda: self.dialect.reply(data), "a completion")

    def _stream(
        self, body: dict[str, Any], on_token: TokenCallback | None, deadline: float | None
    ) -> tuple[ServerReply, float | None, bool]:
        """Read a streamed completion event by event; stop early (closing the connection) at the deadline, also when
        the server stalls: each read waits at most until the deadline."""
        reply = ServerReply()
        first_at: float | None = None
        response = self.connection.open(self.dialect.completion_path, body, deadline, stream=True)
        try:
            for event in _events(response, self.url):
                if first_at is None:
                    first_at = time.perf_counter()
                before = len(reply.text)
                self._shaped(lambda event=event: self.dialect.event(event, reply), "a streamed event")
                if on_token is not None and len(reply.text) > before:
                    on_token(reply.text[before:])
                if reply.finish_reason is not None and not self.dialect.stream_fields():
                    break  # the last event (vLLM and SGLang send the usage after it)
                if deadline is not None and time.monotonic() > deadline and reply.finish_reason is None:
                    return reply, first_at, True
        except TimeoutError:
            if response.timed_out or (deadline is not None and time.monotonic() >= deadline - 0.05):
                return reply, first_at, True
            raise ModelError(f"the server at {self.url} stopped sending within {self.timeout:.0f} s") from None
        except (OSError, HTTPException, ValueError) as exc:
            if response.timed_out:  # the deadline came while the server sent a byte now and then
                return reply, first_at, True
            raise ModelError(f"the connection to {self.url} broke mid-reply ({exc})") from None
        finally:
            response.close()
        if response.timed_out and reply.finish_reason is None:
            return reply, first_at, True
        if reply.finish_reason is None:
            raise ModelError(
                f"the {self.kind} server at {self.url} ended a streamed reply without saying why (llama-cpp-python's "
                "server does that when another request arrives: start it with --interrupt_requests False)"
            )
        return reply, first_at, False

    def _completion(
        self,
        reply: ServerReply,
        prompt: str,
        stop: Sequence[str],
        started: float,
        first_at: float | None,
        ended: float,
        interrupted: bool,
    ) -> Completion:
        text = reply.text
        cut = [text.find(m) for m in stop if m and m in text]
        if cut:  # servers cut at stop strings; this catches one that left it in
            text = text[: min(cut)]
        finish = "interrupted" if interrupted else (reply.finish_reason or "stop")
        prompt_tokens = as_int(reply.prompt_tokens)
        if prompt_tokens is None:
            prompt_tokens = self.count_tokens(prompt) if not interrupted else (len(prompt) + 3) // 4
        generated = as_int(reply.generated_tokens)
        if generated is None:
            generated = len(reply.pieces) or ((self.count_tokens(text) if not interrupted else 0) if text else 0)
        prompt_s, generate_s = _seconds(reply.prompt_s), _seconds(reply.generate_s)
        if prompt_s is not None and generate_s is not None:
            timings = Timings(prompt_s=prompt_s, generate_s=generate_s)
        else:
            first = first_at or started
            timings = Timings(prompt_s=first - started if first_at else 0.0, generate_s=ended - first)
        cached = as_int(reply.cached_tokens) if self.dialect.reports_cached_tokens else None
        return Completion(
            text=text,
            finish_reason=finish,
            usage=Usage(prompt_tokens=prompt_tokens, cached_tokens=cached or 0, generated_tokens=generated),
            timings=timings,
        )


def _events(response: WatchedResponse, url: str) -> Iterator[dict[str, Any]]:
    """The JSON objects of a server-sent event stream (`data: {...}` lines), until `data: [DONE]`."""
    while True:
        line = response.readline()
        if not line:
            return
        text = line.decode("utf-8", errors="replace").strip()
        if not text.startswith("data:"):
            continue  # blank separators, comments and pings
        payload = text[5:].strip()
        if payload == "[DONE]":
            return
        try:
            data = jsonio.loads(payload)
        except jsonio.JSONReadError:
            continue
        if isinstance(data, dict):
            if "error" in data and not data.get("choices") and "content" not in data:
                raise ModelError(f"the server at {url} reported an error mid-reply: {error_message(payload)}")
            yield data


def _positive(value: Any) -> int | None:
    number = as_int(value)
    return number if number is not None and number > 0 else None


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        return None
    return float(value)


def _first(*candidates: tuple[Any, str]) -> tuple[Any, str | None]:
    for value, source in candidates:
        if value:
            return value, source
    return None, None


def _local_model(model: str | None) -> dict[str, Any]:
    """What `--model` tells about the served model when it names a local registry model or GGUF: its sha256,
    chat template, special tokens, context size and tokenizer (read from the file's vocabulary, not its
    weights). Empty when it names no local file (then it is just the served model's name)."""
    if not model:
        return {}
    from offline_agent.models import load_registry, resolve_model

    if model not in load_registry() and not (model.endswith(".gguf") and Path(model).expanduser().is_file()):
        return {}
    try:
        resolved = resolve_model(model)
        import llama_cpp

        vocab = llama_cpp.Llama(str(resolved.path), vocab_only=True, verbose=False)
    except Exception:  # noqa: BLE001 - a model we cannot read locally only means the server's word is all we have
        return {}

    def text_of(token: int) -> str | None:
        if token < 0:
            return None
        return vocab.detokenize([token], special=True).decode("utf-8", errors="replace") or None

    def tokenize(text: str) -> list[int]:
        return vocab.tokenize(text.encode("utf-8"), add_bos=False, special=False)

    from offline_agent.backends.registry import chat_format_template

    spec = resolved.spec
    template = chat_format_template(spec.chat_format if spec else None, resolved.name)
    if template == "template":
        template = vocab.metadata.get("tokenizer.chat_template")
    return {
        "sha256": resolved.sha256,
        "chat_template": template,
        "bos_token": text_of(vocab.token_bos()),
        "eos_token": text_of(vocab.token_eos()),
        "context_size": spec.n_ctx if spec else None,
        "tokenize": tokenize,
    }
