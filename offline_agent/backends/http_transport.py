"""The http backend's transport: requests to a model server with a bounded wait, and every failure one clear line.

A server the user does not control may send anything, or nothing. Here:
- every request's wait is the backend's timeout cut to what is left of a deadline (`--max-seconds`, detection
  included); a request that would start after the deadline raises `TimeLimit` at once, and so does one whose
  answer does not come before it, so a server that accepts and never answers costs the time limit, not minutes;
- that wait bounds the whole exchange, not each read: a socket's timeout restarts with every byte, so a server
  that sent its headers a byte every 3 s held `--max-seconds 10` for minutes. A `Watchdog` shuts the socket down
  when the time is up (connecting, sending, the status line and headers, and a reply's body; a streamed body
  is bounded by the deadline only, and each of its reads by the timeout, as a long answer may take its time);
- every reply is read with jsonio (JSON nested 100,000 deep or a 5,000-digit number is a one-line error, a lone
  surrogate is replaced), and its shape is the caller's to check (`as_dict`, `as_list`, `as_int`, `as_text`);
- the URL is checked once (`http://[::1` is a ConfigError), credentials in it are sent as HTTP Basic auth (urllib
  would take `user:password@host` for a host and port), and no message ever shows them: `shown` is the URL with
  its user and password and its query values written `***`.

Retries: connection errors and 502/503/504 are retried with exponential backoff while the deadline allows; a 4xx
never (401/403 a ConfigError about the key, 404 a ConfigError about the server kind, a context overflow a
ContextOverflowError, any other a ServerRefusedError).
"""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.client import HTTPConnection, HTTPException, HTTPResponse, HTTPSConnection
from typing import Any

from offline_agent import jsonio
from offline_agent.errors import ConfigError, ContextOverflowError, ModelError

DEFAULT_TIMEOUT = 120.0
_RETRY_STATUS = (502, 503, 504)
_CONTEXT_WORDS = ("context", "exceed", "too long", "maximum")


class ServerRefusedError(ModelError):
    """The server answered a request with a 4xx status (other than 401, 403 and 404, which are ConfigErrors)."""


class TimeLimit(Exception):  # noqa: N818 - not an error: the run's time is up
    """The deadline passed before a request could start or before its answer came."""


def redacted(url: str) -> str:
    """`url` with its user and password, and the values of its query, written `***`."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(a URL that cannot be read)"
    netloc = ("***@" if parts.username or parts.password else "") + (f"[{host}]" if ":" in host else host) + port
    query = "&".join(f"{key}=***" for key, _ in urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, ""))


class Watchdog:
    """Shuts a request's socket down at `at` (time.monotonic()), so that a read waiting on a server that sends a byte
    now and then ends there; `fired` says it did."""

    def __init__(self, at: float | None) -> None:
        self.fired = False
        self._socket: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self.rearm(at)

    def rearm(self, at: float | None) -> None:
        """Fire at `at` instead (None: never)."""
        self.cancel()
        if at is not None:
            self._timer = threading.Timer(max(0.0, at - time.monotonic()), self._fire)
            self._timer.daemon = True
            self._timer.start()

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._socket = sock
            if self.fired:
                _shut(sock)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            if self._socket is not None:
                _shut(self._socket)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # closed already
        # the plain socket's shutdown, also under TLS: a blocked read then sees the end of the stream
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


class WatchedResponse(HTTPResponse):
    """A reply whose socket its request's watchdog may shut down; closing it stops the watchdog."""

    def __init__(self, sock: socket.socket, *args: Any, watchdog: Watchdog, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        self.watchdog = watchdog

    @property
    def timed_out(self) -> bool:
        """Whether the watchdog cut the exchange short (what was read since may be a part)."""
        return self.watchdog.fired

    def close(self) -> None:
        self.watchdog.cancel()
        super().close()


class _WatchedHTTP(HTTPConnection):
    def __init__(self, *args: Any, watchdog: Watchdog, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.watchdog = watchdog
        self.response_class = functools.partial(WatchedResponse, watchdog=watchdog)  # type: ignore[assignment]

    def connect(self) -> None:
        super().connect()  # for TLS, the plain socket before the handshake (_WatchedHTTPS's order of classes)
        self.watchdog.watch(self.sock)


class _WatchedHTTPS(HTTPSConnection, _WatchedHTTP):
    pass


class _WatchedHandler(urllib.request.HTTPHandler, urllib.request.HTTPSHandler):
    """urllib's handler for http and https, with connections that the watchdog can shut down."""

    def __init__(self, watchdog: Watchdog) -> None:
        urllib.request.HTTPHandler.__init__(self)
        urllib.request.HTTPSHandler.__init__(self)
        self.watchdog = watchdog

    def http_open(self, req: urllib.request.Request) -> HTTPResponse:
        return self.do_open(functools.partial(_WatchedHTTP, watchdog=self.watchdog), req)

    def https_open(self, req: urllib.request.Request) -> HTTPResponse:
        return self.do_open(functools.partial(_WatchedHTTPS, watchdog=self.watchdog), req)


class ServerConnection:
    """Requests to one server: its base URL, its key or credentials, a timeout, retries."""

    def __init__(
        self, url: str, *, api_key: str | None = None, timeout: float = DEFAULT_TIMEOUT, retries: int = 3,
        backoff: float = 0.5,
    ) -> None:  # fmt: skip
        if not url or not url.startswith(("http://", "https://")):
            raise ConfigError(f"--server-url must start with http:// or https://, not {redacted(url)!r}")
        try:
            parts = urllib.parse.urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise ConfigError(f"--server-url is not a valid URL ({exc}): {redacted(url)}") from None
        if not parts.hostname:
            raise ConfigError(f"--server-url names no host: {redacted(url)}")
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        self.base = urllib.parse.urlunsplit((parts.scheme, host + (f":{port}" if port else ""), "", "", ""))
        self.base += parts.path.rstrip("/")
        self.query = parts.query
        self.shown = redacted(url).rstrip("/")
        self.timeout = timeout
        self.kind: str | None = None  # the server's kind once known (for a 404's message)
        self.retries = retries
        self.backoff = backoff
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        elif parts.username is not None:
            user = urllib.parse.unquote(parts.username)
            secret = urllib.parse.unquote(parts.password or "")
            self._headers["Authorization"] = "Basic " + base64.b64encode(f"{user}:{secret}".encode()).decode()

    def _url(self, path: str) -> str:
        return self.base + path + (f"?{self.query}" if self.query else "")

    def wait(self, deadline: float | None) -> float:
        """How long the next request may wait: the timeout, cut to what is left before `deadline` (TimeLimit when
        nothing is)."""
        if deadline is None:
            return self.timeout
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeLimit
        return min(self.timeout, left)

    def _exchange(
        self, request: urllib.request.Request, wait: float, *, stream: bool = False, deadline: float | None = None
    ) -> WatchedResponse:
        """Send `request` and read its status line and headers, all within `wait` seconds however slowly the server
        sends (TimeoutError past that). The reply's body must come by then too, unless `stream`: then it is bounded
        by the deadline only (its reads by the timeout)."""
        started = time.monotonic()
        watchdog = Watchdog(started + wait)
        opener = urllib.request.build_opener(_WatchedHandler(watchdog))
        try:
            response = opener.open(request, timeout=wait)
        except urllib.error.HTTPError:
            if watchdog.fired:
                watchdog.cancel()
                raise TimeoutError from None
            raise  # its body is read within the same bound; closing it stops the watchdog
        except BaseException:
            watchdog.cancel()
            if watchdog.fired:
                raise TimeoutError from None
            raise
        if watchdog.fired:  # the headers were cut short: what came is not a reply
            response.close()
            raise TimeoutError
        if stream:
            watchdog.rearm(deadline)
        return response

    def _body(self, response: WatchedResponse) -> bytes:
        """All of `response`'s body (TimeoutError when its time ran out first, ModelError when the connection
        broke)."""
        try:
            raw = response.read()
        except (OSError, HTTPException, ValueError) as exc:
            if response.timed_out:
                raise TimeoutError from None
            raise ModelError(f"the connection to {self.shown} broke mid-reply ({exc})") from None
        if response.timed_out:
            raise TimeoutError
        return raw

    def get_json(self, path: str, deadline: float | None = None) -> Any:
        """GET `path`; None when the server has no such endpoint, no server answers, or the reply is not JSON."""
        request = urllib.request.Request(self._url(path), headers=self._headers, method="GET")
        try:
            with self._exchange(request, self.wait(deadline)) as response:
                return jsonio.loads(self._body(response))
        except urllib.error.HTTPError as exc:
            exc.close()
            if exc.code in (401, 403):
                raise self.auth_error(exc.code) from None
            return None
        except TimeoutError:
            if deadline is not None and time.monotonic() >= deadline - 0.05:
                raise TimeLimit from None
            return None
        except (urllib.error.URLError, OSError, HTTPException, ValueError, ModelError):
            return None

    def open(
        self, path: str, body: dict[str, Any], deadline: float | None = None, *, stream: bool = False
    ) -> WatchedResponse:
        """POST `body` and return the open response; retries connection errors and 502/503/504 with backoff. The
        response's headers (and, unless `stream`, its body) must come within the wait (`wait`)."""
        data = json.dumps(body).encode("utf-8")
        for attempt in range(self.retries + 1):
            request = urllib.request.Request(self._url(path), data=data, headers=self._headers, method="POST")
            wait = self.wait(deadline)
            try:
                return self._exchange(request, wait, stream=stream, deadline=deadline)
            except urllib.error.HTTPError as exc:
                if exc.code in _RETRY_STATUS and attempt < self.retries:
                    exc.close()
                    self._pause(attempt, deadline)
                    continue
                raise self._http_error(path, exc) from None
            except TimeoutError:
                raise self._timed_out(deadline, wait) from None
            except (urllib.error.URLError, ConnectionError, HTTPException, OSError) as exc:
                if attempt < self.retries:
                    self._pause(attempt, deadline)
                    continue
                reason = getattr(exc, "reason", exc)
                raise ModelError(
                    f"cannot reach the server at {self.shown} ({reason}) after {self.retries + 1} tries"
                ) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _timed_out(self, deadline: float | None, wait: float) -> Exception:
        """TimeLimit when the deadline has come, else the ModelError of a server that took longer than `wait`."""
        if deadline is not None and time.monotonic() >= deadline - 0.05:
            return TimeLimit()
        return ModelError(f"the server at {self.shown} did not answer within {wait:.0f} s")

    def _pause(self, attempt: int, deadline: float | None) -> None:
        pause = self.backoff * 2**attempt
        if deadline is not None and time.monotonic() + pause >= deadline:
            raise TimeLimit
        time.sleep(pause)

    def post(self, path: str, body: dict[str, Any], deadline: float | None = None) -> dict[str, Any]:
        """POST `body` and read the reply, which must be a JSON object (all of it within the wait)."""
        wait = self.wait(deadline)
        with self.open(path, body, deadline) as response:
            try:
                raw = self._body(response)
            except TimeoutError:
                raise self._timed_out(deadline, wait) from None
        try:
            data = jsonio.loads(raw)
        except jsonio.JSONReadError as exc:
            raise ModelError(
                f"the server at {self.shown} sent a reply that is not JSON ({exc}): {raw[:60]!r}"
            ) from None
        return as_dict(data, f"the server at {self.shown} sent an unexpected reply to {path}")

    def auth_error(self, code: int) -> ConfigError:
        return ConfigError(
            f"the server at {self.shown} refused the request (HTTP {code}): set OFFLINE_AGENT_API_KEY to its API key"
        )

    def _http_error(self, path: str, exc: urllib.error.HTTPError) -> Exception:
        try:
            detail = exc.read().decode("utf-8", errors="replace")
        except OSError:
            detail = ""
        finally:
            exc.close()
        message = error_message(detail) or str(exc.reason or "")
        if exc.code in (401, 403):
            return self.auth_error(exc.code)
        if exc.code == 404:
            kind = f"a {self.kind} server" if self.kind else "the kind of server you think"
            return ConfigError(f"the server at {self.shown} has no {path} (HTTP 404): is it {kind}? (--server-kind)")
        if 400 <= exc.code < 500 and any(word in message.lower() for word in _CONTEXT_WORDS):
            return ContextOverflowError(f"the server refused the prompt: {message}")
        if 400 <= exc.code < 500:
            return ServerRefusedError(f"the server at {self.shown} refused the request (HTTP {exc.code}): {message}")
        return ModelError(f"the server at {self.shown} failed (HTTP {exc.code}): {message}")


def error_message(detail: str) -> str:
    """The human part of a server's error body ({"error": {"message": ...}}, {"detail": ...}, or plain text), on one
    line."""
    try:
        data = jsonio.loads(detail)
    except jsonio.JSONReadError:
        return " ".join(detail.split())[:300]
    if isinstance(data, dict):
        error = data.get("error", data.get("detail", data.get("message")))
        if isinstance(error, dict):
            error = error.get("message", error)
        if isinstance(error, list) and error:
            error = error[0].get("msg", error[0]) if isinstance(error[0], dict) else error[0]
        return " ".join(str(error).split())[:300]
    return " ".join(str(data).split())[:300]


# ---- the shapes a reply must have -------------------------------------------------------------------------------


def as_dict(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ModelError(f"{what}: expected a JSON object, got {type(value).__name__} {str(value)[:60]}")
    return value


def as_list(value: Any) -> list[Any]:
    """A list where one is expected, else empty (a field a server left out, or sent in another shape)."""
    return value if isinstance(value, list) else []


def as_int(value: Any) -> int | None:
    """A whole number a server reported (a count, a context size), or None for anything else ("abc", 1.5, true)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def as_text(value: Any) -> str:
    """Text a server sent (a piece of a completion, a template), or "" for anything that is not a string."""
    return value if isinstance(value, str) else ""


__all__ = [
    "DEFAULT_TIMEOUT",
    "ServerConnection",
    "ServerRefusedError",
    "TimeLimit",
    "Watchdog",
    "WatchedResponse",
    "as_dict",
    "as_int",
    "as_list",
    "as_text",
    "error_message",
    "redacted",
]
