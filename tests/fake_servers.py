"""Fake model servers on 127.0.0.1 that speak each http dialect, for tests of the http backend's plumbing.

vLLM and SGLang cannot run on the project's CPU-only machines, so their dialects are checked here against what
their documentation specifies (vLLM 0.12+: `structured_outputs: {"grammar": ...}`; SGLang: `ebnf`); llama-server
likewise (no package ships its binary for this machine). llama-cpp-python's real server is tested in
test_backend_contract.py. A fake "enforces" a grammar by answering the probe grammar with its one string and any
other grammar with a valid step; `ignore_grammar` makes it answer as an unconstrained model would, and `raw`,
`hang`, `stall` and `drip` make it a hostile server (a reply of any bytes, a request never answered, a stream that
stops, a reply sent one byte at a time).

Answers depend only on the prompt (a hash picks the Final answer), so concurrent and sequential runs must agree.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PROBE = "zq7-xj4"


def answer_for(prompt: str) -> str:
    """A step that depends on the prompt only: a search first, then a Final answer."""
    digest = hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:6]
    if "Observation:" in prompt:
        return f"Thought: I know it now.\nFinal: answer-{digest}"
    return f"Thought: I search first.\nAction: search[Curie {digest}]"


class FakeServer:
    """One fake server: `kind` picks the dialect; the knobs make it misbehave in one way each."""

    def __init__(
        self,
        kind: str,
        *,
        ignore_grammar: bool = False,
        reject_grammar: bool = False,
        fail_first: int = 0,
        api_key: str | None = None,
        n_ctx: int = 4096,
        delay: float = 0.0,
        raw: dict[str, bytes] | None = None,
        hang: tuple[str, ...] = (),
        stall: bool = False,
        drip: dict[str, str] | None = None,
        drip_pause: float = 0.5,
    ) -> None:
        self.kind = kind
        self.ignore_grammar = ignore_grammar
        self.reject_grammar = reject_grammar
        self.fail_first = fail_first
        self.api_key = api_key
        self.n_ctx = n_ctx
        self.delay = delay
        self.raw = raw or {}  # path -> the body sent instead of the dialect's answer (status 200): a hostile reply
        self.hang = hang  # paths whose requests are accepted and never answered
        self.stall = stall  # a streamed completion sends one event, then nothing
        # path -> "headers" (the whole reply a byte at a time), "body" (the headers at once, then the body a byte at
        # a time) or "stream" (as "body", for a streamed reply only): one byte every `drip_pause` seconds
        self.drip = drip or {}
        self.drip_pause = drip_pause
        self.stopping = threading.Event()
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    # ---- what each dialect answers -------------------------------------------------------------------------
    def grammar_of(self, body: dict[str, Any]) -> str | None:
        if self.kind in ("llama-server", "llama-cpp-python"):
            return body.get("grammar")
        if self.kind == "vllm":
            if "guided_grammar" in body:  # removed in vLLM 0.12: a real server would ignore it
                return None
            return (body.get("structured_outputs") or {}).get("grammar")
        return body.get("ebnf")

    def text_for(self, prompt: str, grammar: str | None) -> str:
        if grammar is not None and not self.ignore_grammar:
            return PROBE if PROBE in grammar else answer_for(prompt)
        return "Hello! How can I help you today?" if "Say hello" in prompt else answer_for(prompt)

    def tokens(self, text: str) -> list[int]:
        return [len(word) for word in text.split()]  # one token a word


def _handler(server: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _send(self, status: int, data: Any) -> None:
            payload = json.dumps(data).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _authorized(self) -> bool:
            if server.api_key and self.headers.get("Authorization") != f"Bearer {server.api_key}":
                self._send(401, {"error": {"message": "invalid api key"}})
                return False
            return True

        def _hostile(self) -> bool:
            """Answer as a hostile server would (server.raw, server.hang): True when it did."""
            path = self.path.split("?")[0]
            if path in server.hang:
                server.stopping.wait(600)
                return True
            if path in server.raw:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(server.raw[path])))
                self.end_headers()
                self.wfile.write(server.raw[path])
                return True
            return False

        def _drip(self, streamed: bool) -> None:
            """Send what this request's answer writes a byte at a time, as server.drip says for its path."""
            mode = server.drip.get(self.path.split("?")[0])
            if mode in ("headers", "body") or (mode == "stream" and streamed):
                self.wfile = _Dripping(self.wfile, server, skip_first=mode != "headers")  # type: ignore[assignment]

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self._drip(False)
            if not self._authorized() or self._hostile():
                return
            kind, path = server.kind, self.path.split("?")[0]
            if kind == "llama-server" and path == "/props":
                return self._send(
                    200,
                    {
                        "default_generation_settings": {"n_ctx": server.n_ctx},
                        "chat_template": "{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}<a>",
                        "bos_token": "<s>",
                        "eos_token": "</s>",
                    },
                )
            if kind == "sglang" and path == "/get_model_info":
                return self._send(200, {"model_path": "fake/sglang-model"})
            if kind != "llama-server" and path == "/v1/models":
                owner = {"vllm": "vllm", "llama-cpp-python": "me", "sglang": "sglang"}[kind]
                entry = {"id": f"fake-{kind}", "object": "model", "owned_by": owner}
                if kind == "vllm":
                    entry["max_model_len"] = server.n_ctx
                return self._send(200, {"object": "list", "data": [entry]})
            self._send(404, {"detail": "Not Found"})

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            server.requests.append((self.path, body))
            self._drip(bool(body.get("stream")) if isinstance(body, dict) else False)
            if not self._authorized() or self._hostile():
                return
            with server._lock:
                if server.fail_first > 0:
                    server.fail_first -= 1
                    return self._send(503, {"error": {"message": "loading model"}})
                server.in_flight += 1
                server.most_in_flight = max(server.most_in_flight, server.in_flight)
            try:
                self._post(body)
            finally:
                with server._lock:
                    server.in_flight -= 1

        def _post(self, body: dict[str, Any]) -> None:
            kind, path = server.kind, self.path.split("?")[0]
            tokenize = {"llama-server": "/tokenize", "llama-cpp-python": "/extras/tokenize", "vllm": "/tokenize"}
            if path == tokenize.get(kind):
                text = body.get("content", body.get("input", body.get("prompt", "")))
                return self._send(200, {"tokens": server.tokens(text)})
            completion = "/completion" if kind == "llama-server" else "/v1/completions"
            if path != completion:
                return self._send(404, {"detail": "Not Found"})
            grammar = server.grammar_of(body)
            if grammar is not None and server.reject_grammar:
                return self._send(400, {"error": {"message": "grammar is not supported"}})
            prompt = body.get("prompt", "")
            prompt_tokens = len(server.tokens(prompt))
            if prompt_tokens > server.n_ctx:
                return self._send(400, {"error": {"message": f"the request exceeds the context size ({server.n_ctx})"}})
            time.sleep(server.delay)
            text = server.text_for(prompt, grammar)
            for marker in body.get("stop") or []:
                if marker in text:
                    text = text[: text.index(marker)]
            if body.get("stream"):
                return self._stream(text, prompt_tokens, body)
            if kind == "llama-server":
                return self._send(
                    200,
                    {
                        "content": text,
                        "stop": True,
                        "stop_type": "eos",
                        "tokens_evaluated": prompt_tokens,
                        "tokens_predicted": len(server.tokens(text)),
                        "timings": {"prompt_n": 2, "prompt_ms": 5.0, "predicted_ms": 7.0},
                    },
                )
            self._send(
                200,
                {
                    "choices": [{"text": text, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(server.tokens(text))},
                },
            )

        def _stream(self, text: str, prompt_tokens: int, body: dict[str, Any]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            pieces = [piece + " " for piece in text.split(" ")]
            pieces[-1] = pieces[-1][:-1]
            try:
                for piece in pieces:
                    if server.kind == "llama-server":
                        event: dict[str, Any] = {"content": piece, "stop": False}
                    else:
                        event = {"choices": [{"text": piece, "finish_reason": None}]}
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                    self.wfile.flush()
                    if server.stall:
                        server.stopping.wait(600)
                        return
                    time.sleep(server.delay)
                if server.kind == "llama-server":
                    last: dict[str, Any] = {
                        "content": "",
                        "stop": True,
                        "stop_type": "eos",
                        "tokens_evaluated": prompt_tokens,
                        "tokens_predicted": len(pieces),
                    }
                else:
                    last = {"choices": [{"text": "", "finish_reason": "stop"}]}
                self.wfile.write(f"data: {json.dumps(last)}\n\n".encode())
                if (body.get("stream_options") or {}).get("include_usage"):
                    usage = {"choices": [], "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 9}}
                    self.wfile.write(f"data: {json.dumps(usage)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client left early (a deadline)

    return Handler


class _Dripping:
    """A handler's output stream that sends each byte alone, `server.drip_pause` seconds apart (the first write,
    the headers, at once when `skip_first`), until the client leaves or the server stops."""

    def __init__(self, out: Any, server: FakeServer, skip_first: bool) -> None:
        self.out = out
        self.server = server
        self.skip_first = skip_first
        self.gone = False

    def write(self, data: bytes) -> int:
        try:
            if self.skip_first:
                self.skip_first = False
                self.out.write(data)
                self.out.flush()
                return len(data)
            for byte in range(len(data)):
                if self.gone or self.server.stopping.wait(self.server.drip_pause):
                    self.gone = True
                    break
                self.out.write(data[byte : byte + 1])
                self.out.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.gone = True  # the client left: its time was up
        return len(data)

    @property
    def closed(self) -> bool:  # what the handler's finish() asks before its last flush
        return self.gone or self.out.closed

    def close(self) -> None:
        self.out.close()

    def flush(self) -> None:
        if not self.gone:
            try:
                self.out.flush()
            except (BrokenPipeError, ConnectionResetError):
                self.gone = True
