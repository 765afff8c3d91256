"""Starting and stopping the server: the sessions over the named indexes, the socket, uvicorn, and a clean end.

The model is built once, before the socket opens, and every served index shares it. The socket is bound here
(not by uvicorn) so that the address printed, `--port 0` included, is the one served. Ctrl-C or SIGTERM stops
taking requests, cancels every queued question and the running one at its next step (so the step being written is
finished), lets the open replies end, and returns: the command exits 0. A second Ctrl-C stops waiting for them.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from offline_agent.errors import ConfigError
from offline_agent.serve.app import Served
from offline_agent.serve.runs import Job, RunQueue

INSTALL_HINT = "pip install 'offline-agent[serve]'"
# The longest the open replies may take to end after Ctrl-C or SIGTERM: the step being written is finished first, and
# on a busy CPU one step of a large model can take a minute. A second Ctrl-C ends them at once.
SHUTDOWN_SECONDS = 180


def require_server() -> None:
    """ConfigError with the install hint when Starlette or uvicorn is missing."""
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise ConfigError(f"the server needs {exc.name}, which is not installed: {INSTALL_HINT}") from None


def is_loopback(host: str) -> bool:
    """Whether `host` is a loopback address or `localhost`."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def model_names(corpora: Sequence[str]) -> list[str]:
    """The model id of each corpus: an index name as it is, a folder or file by its last part (made unique)."""
    names: list[str] = []
    for corpus in corpora:
        base = corpus if "/" not in corpus and corpus not in (".", "..") else Path(corpus).expanduser().resolve().name
        name, number = base or "corpus", 2
        while name in names:
            name, number = f"{base}-{number}", number + 1
        names.append(name)
    return names


def open_served(
    corpora: Sequence[str], backend: Any, settings: Any, scope: str | None, *, show_sources: bool
) -> Served:
    """A session per corpus (none given: the sample corpus), all on one backend; `scope` None: each corpus's own.

    `backend` is a backend or a function that builds one, called once every index has opened (an unknown index
    fails before the model loads)."""
    from offline_agent.runner import Session, corpus_scope, open_index

    corpora = list(dict.fromkeys(corpora))
    targets: list[str | None] = [*corpora] or [None]
    names = model_names(corpora) if corpora else ["sample"]
    opened = [open_index(target) for target in targets]
    model = backend() if callable(backend) else backend
    sessions: dict[str, Any] = {}
    scopes: dict[str, str | None] = {}
    for name, target, (index, where) in zip(names, targets, opened, strict=True):
        sessions[name] = Session.from_settings(settings, backend=model, index=index, corpus=where)
        scopes[name] = scope if scope is not None else corpus_scope(target)
    return Served(sessions, settings.config, scopes, show_sources=show_sources)


def run_question(served: Served) -> Any:
    """What the worker runs for a job: its index's session, the question's length checked, sources attached."""
    from offline_agent.runner import check_question_length
    from offline_agent.sources import attach_sources

    def run(job: Job, callbacks: Any) -> Any:
        session = served.sessions[job.index]
        check_question_length(session.backend, job.question)
        trajectory = session.ask(job.question, job.config, callbacks, history=job.history)
        return attach_sources(trajectory, session.index)

    return run


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (ConfigError with the reason when it cannot be had)."""
    try:
        info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ConfigError(f"cannot serve on {host!r}: {exc.strerror}") from None
    family, kind, proto, _, address = info[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


def serve(app: Any, runs: RunQueue, sock: socket.socket) -> None:
    """Serve `app` on `sock` until Ctrl-C or SIGTERM, then end as the module says."""
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            runs.stop()  # before uvicorn waits for the open replies: their runs end at their next step
            super().handle_exit(sig, frame)

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            """uvicorn's own, except that it no longer raises the signal again once the server has stopped (which
            made Ctrl-C exit 130 and SIGTERM kill the process): a server that stopped as asked exits 0."""
            with super().capture_signals():
                try:
                    yield
                finally:
                    self._captured_signals.clear()

    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=SHUTDOWN_SECONDS,
    )
    server = Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        runs.close(timeout=0 if server.force_exit else SHUTDOWN_SECONDS)
        sock.close()
    print("offline-agent serve: stopped", file=sys.stderr)


__all__ = ["bind", "is_loopback", "model_names", "open_served", "require_server", "run_question", "serve", "url_of"]
