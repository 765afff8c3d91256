"""The guard in front of every route of `offline-agent serve`, as plain ASGI (so that streaming and disconnects pass
through untouched).

With an API key every request must carry it, as a Bearer token or as the password of HTTP Basic (which a browser
asks for, so the page works without a script of its own for the key). Bound to loopback without a key, a request
must name a loopback host, so that a web page elsewhere cannot reach the server through a DNS name that resolves
to 127.0.0.1 (DNS rebinding). Every reply says nosniff. (A POST must be JSON, which a cross-site form cannot send
without a CORS preflight: app.py checks that, and CORS is off unless --cors names an origin.)
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
from typing import Any

from offline_agent.serve.openai_api import error_body

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


class Guard:
    """The API key on every route, the loopback host check, JSON-only POSTs and nosniff (see the module)."""

    def __init__(self, app: Any, *, api_key: str | None, loopback: bool) -> None:
        self.app = app
        self.key = api_key
        self.loopback = loopback

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        refusal = self._refusal(headers)
        if refusal is not None:
            status, body, extra = refusal
            await _send_json(send, status, body, extra)
            return

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (b"x-content-type-options", b"nosniff")]}
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _refusal(self, headers: dict[str, str]) -> tuple[int, dict[str, Any], list[tuple[bytes, bytes]]] | None:
        if self.loopback and self.key is None:
            host = headers.get("host", "")
            name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
            if name.lower() not in LOOPBACK_HOSTS:
                return (
                    421,
                    error_body(f"this server answers to a loopback host only, not {host!r}", "invalid_request_error"),
                    [],
                )
        if self.key is not None and not self._authorized(headers.get("authorization", "")):
            challenge = [(b"www-authenticate", b'Bearer, Basic realm="offline-agent", charset="UTF-8"')]
            body = error_body(
                "a valid API key is required: send it as `Authorization: Bearer KEY`",
                "invalid_request_error",
                code="invalid_api_key",
            )
            return 401, body, challenge
        return None

    def _authorized(self, header: str) -> bool:
        scheme, _, value = header.strip().partition(" ")
        given = value.strip()
        if scheme.lower() == "basic":
            try:
                given = base64.b64decode(given, validate=True).decode("utf-8").partition(":")[2]
            except (binascii.Error, UnicodeDecodeError):
                return False
        elif scheme.lower() != "bearer":
            return False
        assert self.key is not None
        return hmac.compare_digest(given.encode("utf-8"), self.key.encode("utf-8"))


async def _send_json(send: Any, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]]) -> None:
    data = json.dumps(body).encode("utf-8")
    start_headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        (b"x-content-type-options", b"nosniff"),
        *headers,
    ]
    await send({"type": "http.response.start", "status": status, "headers": start_headers})
    await send({"type": "http.response.body", "body": data})


__all__ = ["LOOPBACK_HOSTS", "Guard"]
