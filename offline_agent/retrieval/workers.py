"""Worker processes that read files and tokenize passages for a build: results in order, and a death noticed.

`multiprocessing.Pool` replaces a worker that dies (`kill -9`, the out-of-memory killer) and never gives the work
it held to anyone: `index --workers 2` then waited for ever, and Ctrl-C did not end the wait. Here each worker
gets one batch at a time over its own pipe, and the parent waits on the pipes and on the processes themselves, so:
- a worker that dies ends the wait at once with one RetrievalError that says how it died ("killed by SIGKILL");
  the build stops there and saves nothing (an index being updated stays as it was);
- Ctrl-C (or any error) in the parent stops every worker before it propagates; workers ignore Ctrl-C themselves
  (a terminal sends it to them too) so that the parent decides.
Workers are started with "spawn" (safe beside threads, the same on every platform); `function` and the
initializer must be importable top-level functions (or partials of them).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any

from offline_agent.errors import RetrievalError

_STOP_S = 5.0  # how long a worker asked to stop may take before it is killed


def ordered_map(
    function: Callable[[Any], Any],
    items: Iterable[Any],
    workers: int,
    *,
    doing: str,
    initializer: Callable[..., None] | None = None,
    initargs: tuple[Any, ...] = (),
) -> Iterator[Any]:
    """function(item) for each of `items`, in order, computed by `workers` processes (each first runs
    initializer(*initargs)). `doing` says what they do, for the message when one dies ("reading files")."""
    context = multiprocessing.get_context("spawn")
    started: list[tuple[BaseProcess, Connection]] = []
    finished = False
    try:
        for _ in range(workers):
            ours, theirs = context.Pipe()
            process = context.Process(target=_serve, args=(theirs, function, initializer, initargs), daemon=True)
            process.start()
            theirs.close()
            started.append((process, ours))
        yield from _in_order(iter(items), started, doing)
        finished = True
    finally:
        _stop(started, gently=finished)


def _in_order(items: Iterator[Any], started: list[tuple[BaseProcess, Connection]], doing: str) -> Iterator[Any]:
    idle = list(range(len(started)))
    busy: dict[int, int] = {}  # worker -> the number of the item it holds
    done: dict[int, tuple[str, Any]] = {}  # answers that came before an earlier one
    sent = given = 0
    exhausted = False
    while True:
        while idle and not exhausted:
            item = next(items, _END)
            if item is _END:
                exhausted = True
                break
            worker = idle.pop()
            _send(started[worker], item, doing)
            busy[worker] = sent
            sent += 1
        while given in done:
            kind, value = done.pop(given)
            if kind == "error":  # in its place: what came before it is given first
                raise value
            yield value
            given += 1
        if exhausted and given == sent:
            return
        ready = wait([conn for _, conn in started] + [process.sentinel for process, _ in started])
        for worker, (process, conn) in enumerate(started):
            if conn in ready:
                done[busy.pop(worker)] = _receive(started[worker], doing)
                idle.append(worker)
            elif process.sentinel in ready:
                raise _died(process, doing)


_END = object()


def _send(worker: tuple[BaseProcess, Connection], item: Any, doing: str) -> None:
    process, conn = worker
    try:
        conn.send(item)
    except OSError:  # its end of the pipe closed: it died
        raise _died(process, doing) from None


def _receive(worker: tuple[BaseProcess, Connection], doing: str) -> tuple[str, Any]:
    process, conn = worker
    try:
        return conn.recv()
    except (EOFError, OSError):  # it died before it could answer
        raise _died(process, doing) from None


def _died(process: BaseProcess, doing: str) -> RetrievalError:
    process.join(_STOP_S)  # its pipes close as it exits, a moment before its exit status can be read
    code = process.exitcode
    if code is not None and code < 0:
        try:
            how = f"killed by {signal.Signals(-code).name}"
        except ValueError:
            how = f"killed by signal {-code}"
    else:
        how = f"exit status {code}"
    return RetrievalError(
        f"a worker process {doing} died ({how}); nothing was saved: run the command again (with --workers 1, "
        "files are read in this process)"
    )


def _stop(started: list[tuple[BaseProcess, Connection]], *, gently: bool) -> None:
    """End every worker: asked to stop after a build that finished, terminated after an error or Ctrl-C."""
    for process, conn in started:
        if gently:
            with contextlib.suppress(OSError):  # one that died after its last answer
                conn.send(None)
        elif process.is_alive():
            process.terminate()
    for process, conn in started:
        process.join(_STOP_S)
        if process.is_alive():
            process.kill()
            process.join()
        conn.close()


def _serve(conn: Connection, function: Callable[[Any], Any], initializer: Any, initargs: tuple[Any, ...]) -> None:
    """A worker: items from `conn` until None (or the parent's end closes), each answered ("ok", result) or
    ("error", the exception)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if initializer is not None:
        initializer(*initargs)
    while True:
        try:
            item = conn.recv()
        except (EOFError, OSError):
            return  # the parent is gone
        if item is None:
            return
        try:
            answer: tuple[str, Any] = ("ok", function(item))
        except Exception as exc:  # noqa: BLE001 - the parent raises it
            answer = ("error", exc)
        try:
            conn.send(answer)
        except OSError:
            return  # the parent is gone
        except Exception as exc:  # noqa: BLE001 - an answer that does not pickle: the parent gets why
            conn.send(("error", RuntimeError(f"a worker's answer could not be sent back: {exc}")))


__all__ = ["ordered_map"]
