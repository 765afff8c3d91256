"""The http backend: a model server (llama-server, llama-cpp-python's server, vLLM, SGLang) behind the protocol.

A user who outgrows one laptop points offline_agent at a serving engine they already run, with the same grammar
guarantee: every completion is sent with the step's GBNF in the server's own field (`http_dialects.py`), and a
server that ignores it is caught before the first question by a probe (a grammar that allows one odd string
only, which no unconstrained model would write) and refused with a GrammarError: never used silently
unconstrained. The agent still parses every completion.

Transport: the standard library only (urllib), one connection per request, so `complete` may be called from
several threads at once (`eval --concurrency N`; servers batch). Each request has a timeout; connection errors
and 502/503/504 are retried with exponential backoff, a 4xx never (a context overflow is a ContextOverflowError,
401/403 a ConfigError about the key). Replies are streamed when the caller wants the text as it comes
(`on_token`) or has a deadline; leaving a stream early closes the connection, which stops the server's work.

The server kind is `--server-kind` or detected: `/props` (llama-server), `/get_model_info` (SGLang), then
`/v1/models` (owned_by "vllm" or llama-cpp-python's "me"). The chat template, special tokens and context size come
from the server when it says them (llama-server's /props; vLLM's max_model_len), else from `--model` when it names
a local registry model or GGUF (its metadata is read, not its weights), else ChatML and `--context-size` (default
4096); `describe()` records which. Token counts use the server's tokenize endpoint where it has one, else the
local model file's tokenizer, else an estimate (then `capabilities.exact_token_counts` is False).
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from http.client import HTTPException, HTTPResponse
from pathlib import Path
from typing import Any

from offline_agent.backends.base import BackendCapabilities, DecoderGrammar, TokenCallback, gbnf_of
from offline_agent.backends.http_dialects import DIALECTS, Dialect, ServerReply
from offline_agent.backends.registry import BackendOptions
from offline_agent.errors import ConfigError, ContextOverflowError, GrammarError, ModelError
from offline_agent.prompts import Prompt
from offline_agent.steps import Completion, Timings, Usage

SERVER_KINDS = ("llama-server", "llama-cpp-python", "vllm", "sglang")
DEFAULT_TIMEOUT = 120.0
# The probe: a grammar that allows one string only, which no model writes unconstrained after this prompt.
PROBE_TEXT = "zq7-xj4"
PROBE_GRAMMAR = f'root ::= "{PROBE_TEXT}"'
PROBE_PROMPT = "Say hello in one short sentence.\n"
# The same sampling defaults as the in-process backends.
_SAMPLING = {"top_k": 40, "top_p": 0.95, "min_p": 0.05}
_RETRY_STATUS = (502, 503, 504)


class ServerRefusedError(ModelError):
    """The server answered a request with a 4xx status (other than 401, 403 and 404, which are ConfigErrors)."""


_CONTEXT_WORDS = ("context", "exceed", "too long", "maximum")


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
    ) -> None:
        """Connect to `server_url`, detect its kind unless given, read what it says about its model, and probe
        that it enforces grammars (`probe=False` skips that, for tests of the transport only)."""
        if not server_url or not server_url.startswith(("http://", "https://")):
            raise ConfigError(f"--server-url must start with http:// or https://, not {server_url!r}")
        if server_kind is not None and server_kind not in SERVER_KINDS:
            raise ConfigError(f"unknown server kind {server_kind!r}; choose from {list(SERVER_KINDS)}")
        self.url = server_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.kind = server_kind or self._detect_kind()
        self.dialect: Dialect = DIALECTS[self.kind]()
        info = self._server_info()
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
        self.context_size = int(info.get("context_size") or context_size or local.get("context_size") or 4096)
        self._local_tokenize = local.get("tokenize")
        self._count_cache: dict[str, int] = {}
        self._lock = threading.Lock()
        self._exact_counts = bool(self.dialect.tokenize_path or self._local_tokenize)
        if probe:
            self.probe_grammar()

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
        """One completion; streamed when `on_token` or `deadline` is given (finish reason "interrupted" when the
        deadline passes: the connection is closed and the server stops)."""
        if isinstance(prompt, Prompt):  # the server reads special tokens anywhere: a document's must stay text
            prompt = prompt.neutralized(also=(self.bos_token, self.eos_token))
        if self._exact_counts:
            prompt_tokens = self.count_tokens(prompt)
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
        started = time.perf_counter()
        if stream:
            body.update(self.dialect.stream_fields())
            reply, first_at, interrupted = self._stream(body, on_token, deadline)
        else:
            reply = self.dialect.reply(self._post(self.dialect.completion_path, body))
            first_at, interrupted = None, False
        ended = time.perf_counter()
        return self._completion(reply, prompt, stop, started, first_at, ended, interrupted)

    def warm(self, prefix: str) -> None:
        """Nothing to do: a server with a prompt cache (llama-server's cache_prompt) keeps the prefix itself."""

    def count_tokens(self, text: str) -> int:
        with self._lock:
            known = self._count_cache.get(text)
        if known is not None:
            return known
        if self.dialect.tokenize_path:
            data = self._post(self.dialect.tokenize_path, self.dialect.tokenize_body(text, self.served_model))
            count = len(self.dialect.tokens(data))
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
    def probe_grammar(self) -> None:
        """Refuse a server that does not enforce our grammars (it rejects the field, or writes past it)."""
        try:
            reply = self.dialect.reply(
                self._post(
                    self.dialect.completion_path,
                    self.dialect.completion_body(
                        model=self.served_model,
                        prompt=PROBE_PROMPT,
                        grammar=PROBE_GRAMMAR,
                        max_tokens=16,
                        stop=[],
                        temperature=0.0,
                        seed=0,
                        stream=False,
                        sampling=_SAMPLING,
                    ),
                )
            )
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
    def _detect_kind(self) -> str:
        props = self._get_json("/props")
        if isinstance(props, dict) and ("default_generation_settings" in props or "chat_template" in props):
            return "llama-server"
        if isinstance(self._get_json("/get_model_info"), dict):
            return "sglang"
        models = self._get_json("/v1/models")
        owners = {str(m.get("owned_by")) for m in (models or {}).get("data", []) if isinstance(m, dict)}
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

    def _server_info(self) -> dict[str, Any]:
        """What the server reports: model name, context size, chat template, special tokens (where it does)."""
        info: dict[str, Any] = {}
        if self.kind == "llama-server":
            props = self._get_json("/props") or {}
            settings = props.get("default_generation_settings") or {}
            info["context_size"] = settings.get("n_ctx") or props.get("n_ctx")
            info["chat_template"] = props.get("chat_template") or None
            info["bos_token"] = props.get("bos_token") or None
            info["eos_token"] = props.get("eos_token") or None
            return info
        models = self._get_json("/v1/models") or {}
        data = [m for m in models.get("data", []) if isinstance(m, dict)]
        if data:
            info["model"] = data[0].get("id")
            info["context_size"] = data[0].get("max_model_len")
        return info

    # ---- transport ---------------------------------------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def _get_json(self, path: str) -> Any:
        """GET `path`; None when the server has no such endpoint (or no server answers)."""
        request = urllib.request.Request(self.url + path, headers=self._headers(), method="GET")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403):
                raise self._auth_error(exc.code) from None
            return None
        except (urllib.error.URLError, OSError, HTTPException, ValueError):
            return None

    def _open(self, path: str, body: dict[str, Any], timeout: float) -> HTTPResponse:
        """POST `body` and return the open response; retries connection errors and 502/503/504 with backoff."""
        data = json.dumps(body).encode("utf-8")
        for attempt in range(self.retries + 1):
            request = urllib.request.Request(self.url + path, data=data, headers=self._headers(), method="POST")
            try:
                return urllib.request.urlopen(request, timeout=timeout)
            except urllib.error.HTTPError as exc:
                if exc.code in _RETRY_STATUS and attempt < self.retries:
                    exc.close()
                    time.sleep(self.backoff * 2**attempt)
                    continue
                raise self._http_error(path, exc) from None
            except TimeoutError:
                raise ModelError(f"the server at {self.url} did not answer within {timeout:.0f} s") from None
            except (urllib.error.URLError, ConnectionError, HTTPException, OSError) as exc:
                if attempt < self.retries:
                    time.sleep(self.backoff * 2**attempt)
                    continue
                reason = getattr(exc, "reason", exc)
                raise ModelError(
                    f"cannot reach the server at {self.url} ({reason}) after {self.retries + 1} tries"
                ) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            with self._open(path, body, self.timeout) as response:
                raw = response.read()
        except TimeoutError:
            raise ModelError(f"the server at {self.url} did not answer within {self.timeout:.0f} s") from None
        try:
            data = json.loads(raw.decode("utf-8"))
        except ValueError:
            raise ModelError(f"the server at {self.url} sent a reply that is not JSON: {raw[:80]!r}") from None
        if not isinstance(data, dict):
            raise ModelError(f"the server at {self.url} sent an unexpected reply: {str(data)[:80]}")
        return data

    def _stream(
        self, body: dict[str, Any], on_token: TokenCallback | None, deadline: float | None
    ) -> tuple[ServerReply, float | None, bool]:
        """Read a streamed completion event by event; stop early (closing the connection) at the deadline."""
        reply = ServerReply()
        first_at: float | None = None
        response = self._open(self.dialect.completion_path, body, self.timeout)
        try:
            for event in _events(response):
                if first_at is None:
                    first_at = time.perf_counter()
                before = len(reply.text)
                self.dialect.event(event, reply)
                if on_token is not None and len(reply.text) > before:
                    on_token(reply.text[before:])
                if reply.finish_reason is not None and not self.dialect.stream_fields():
                    break  # the last event (vLLM and SGLang send the usage after it)
                if deadline is not None and time.monotonic() > deadline and reply.finish_reason is None:
                    return reply, first_at, True
        except TimeoutError:
            raise ModelError(f"the server at {self.url} stopped sending within {self.timeout:.0f} s") from None
        except (OSError, HTTPException) as exc:
            raise ModelError(f"the connection to {self.url} broke mid-reply ({exc})") from None
        finally:
            response.close()
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
        prompt_tokens = reply.prompt_tokens if reply.prompt_tokens is not None else self.count_tokens(prompt)
        if reply.generated_tokens is not None:
            generated = reply.generated_tokens
        else:
            generated = len(reply.pieces) or (self.count_tokens(text) if text else 0)
        if reply.prompt_s is not None and reply.generate_s is not None:
            timings = Timings(prompt_s=reply.prompt_s, generate_s=reply.generate_s)
        else:
            first = first_at or started
            timings = Timings(prompt_s=first - started if first_at else 0.0, generate_s=ended - first)
        cached = reply.cached_tokens if self.dialect.reports_cached_tokens and reply.cached_tokens else 0
        return Completion(
            text=text,
            finish_reason=finish,
            usage=Usage(prompt_tokens=prompt_tokens, cached_tokens=cached, generated_tokens=generated),
            timings=timings,
        )

    # ---- errors ------------------------------------------------------------------------------------------------
    def _auth_error(self, code: int) -> ConfigError:
        return ConfigError(
            f"the server at {self.url} refused the request (HTTP {code}): set OFFLINE_AGENT_API_KEY to its API key"
        )

    def _http_error(self, path: str, exc: urllib.error.HTTPError) -> Exception:
        try:
            detail = exc.read().decode("utf-8", errors="replace")
        except OSError:
            detail = ""
        finally:
            exc.close()
        message = _error_message(detail) or exc.reason or ""
        if exc.code in (401, 403):
            return self._auth_error(exc.code)
        if exc.code == 404:
            return ConfigError(
                f"the server at {self.url} has no {path} (HTTP 404): is it a {self.kind} server? (--server-kind)"
            )
        if 400 <= exc.code < 500 and any(word in message.lower() for word in _CONTEXT_WORDS):
            return ContextOverflowError(f"the server refused the prompt: {message}")
        if 400 <= exc.code < 500:
            return ServerRefusedError(f"the server at {self.url} refused the request (HTTP {exc.code}): {message}")
        return ModelError(f"the server at {self.url} failed (HTTP {exc.code}): {message}")


def _events(response: HTTPResponse) -> Iterator[dict[str, Any]]:
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
            data = json.loads(payload)
        except ValueError:
            continue
        if isinstance(data, dict):
            if "error" in data and not data.get("choices") and "content" not in data:
                raise ModelError(f"the server reported an error mid-reply: {_error_message(json.dumps(data))}")
            yield data


def _error_message(detail: str) -> str:
    """The human part of a server's error body ({"error": {"message": ...}}, {"detail": ...}, or plain text)."""
    try:
        data = json.loads(detail)
    except ValueError:
        return detail.strip()[:300]
    if isinstance(data, dict):
        error = data.get("error", data.get("detail", data.get("message")))
        if isinstance(error, dict):
            error = error.get("message", error)
        if isinstance(error, list) and error:
            error = error[0].get("msg", error[0]) if isinstance(error[0], dict) else error[0]
        return str(error)[:300]
    return str(data)[:300]


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
