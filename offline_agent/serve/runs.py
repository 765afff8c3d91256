"""One model, many clients: the questions of every request wait in one bounded queue and run one at a time.

llama.cpp holds one context, so a single worker thread runs the agent; the event loop that serves HTTP never
blocks on the model. A request becomes a `Job`: its question, history, index and run config, an event stream (the
steps as they are written, handed to the event loop with `call_soon_threadsafe`) and a cancel flag.

- The queue is bounded (`limit` jobs waiting besides the one running): `submit` refuses a job past it with
  `QueueFullError`, which the server answers 503 with Retry-After (the mean run time times the jobs ahead).
- A job is cancelled when its client goes away or the server shuts down: a waiting job is dropped, a running one
  stops at the start of its next step (the callback raises `RunCancelled`), so the step in progress is finished
  and the backend is never interrupted mid-call.
- The run's time limit counts from when the request came in: time spent waiting is taken from the run's own.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import secrets
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from offline_agent.agents import AgentCallbacks, RunConfig
from offline_agent.errors import OfflineAgentError
from offline_agent.steps import StepRecord, Trajectory, Turn

KEPT_TRAJECTORIES = 256  # finished trajectories kept for GET /v1/trajectories/{id}, newest first


class QueueFullError(Exception):
    """The queue holds as many waiting jobs as it may; `retry_after` is a guess in whole seconds."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"the server is busy: {retry_after} s")
        self.retry_after = retry_after


class RunCancelled(Exception):
    """Raised inside a run, at the start of a step, once its job is cancelled."""


@dataclass
class Job:
    """One request's question, and what comes back from its run (events while it runs, then a result)."""

    question: str
    index: str
    config: RunConfig
    history: tuple[Turn, ...] = ()
    stream: bool = True  # False: only the end is told ("done"), not every token
    id: str = field(default_factory=lambda: "chatcmpl-" + secrets.token_hex(12))
    received: float = field(default_factory=time.monotonic)
    cancelled: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)  # set once its run has ended, however
    trajectory: Trajectory | None = None
    error: BaseException | None = None
    events: Events | None = None  # set by `attach` (None: nobody listens)

    def attach(self, loop: asyncio.AbstractEventLoop) -> Events:
        self.events = Events(loop)
        return self.events

    def emit(self, kind: str, value: Any = None) -> None:
        """Hand an event to the event loop (from the worker thread); ("done", None) is always the last one."""
        if self.events is not None and (self.stream or kind == "done"):
            self.events.put((kind, value))

    def cancel(self) -> None:
        self.cancelled.set()


class Events:
    """A run's events on their way from the worker thread to the event loop, which is woken once for all the events
    that came while it was busy rather than once per token: under load, a wake-up per token cost the model's thread
    time (the worker appends to a deque; a flag says a wake-up is already on its way)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._items: collections.deque[tuple[str, Any]] = collections.deque()
        self._ready = asyncio.Event()
        self._woken = False

    def put(self, item: tuple[str, Any]) -> None:
        """From the worker thread."""
        self._items.append(item)
        if not self._woken and not self._loop.is_closed():
            self._woken = True
            with contextlib.suppress(RuntimeError):  # the loop closed since the check: nobody is listening
                self._loop.call_soon_threadsafe(self._ready.set)

    async def get(self) -> tuple[str, Any]:
        """The next event, waiting for it."""
        while not self._items:
            self._ready.clear()
            self._woken = False
            if not self._items:  # one that came before the flag was reset woke nobody: look again first
                await self._ready.wait()
        return self._items.popleft()

    def take_tokens(self) -> str:
        """The text of the token events at the head of the queue, taken (without waiting)."""
        texts = []
        while self._items and self._items[0][0] == "token":
            texts.append(self._items.popleft()[1])
        return "".join(texts)


class RunQueue:
    """The worker thread and its bounded queue; `run(job)` answers with a Session for the job's index."""

    def __init__(self, run: Callable[[Job, AgentCallbacks], Trajectory], *, limit: int = 32) -> None:
        self._run = run
        self.limit = limit
        self._waiting: collections.deque[Job] = collections.deque()
        self._ready = threading.Condition()
        self._closing = False
        self._running: Job | None = None
        self._seconds: collections.deque[float] = collections.deque(maxlen=20)
        self._kept: collections.OrderedDict[str, Trajectory] = collections.OrderedDict()
        self.counts = {"answered": 0, "cancelled": 0, "failed": 0}  # runs that ended so, for /health
        self._thread = threading.Thread(target=self._work, name="offline-agent-model", daemon=True)
        self._thread.start()

    # --- the event loop's side ---------------------------------------------------------------------------------------

    def submit(self, job: Job) -> None:
        """Queue `job`, or raise QueueFullError (nothing queued) when `limit` jobs are already waiting, or
        OfflineAgentError when the server is shutting down."""
        with self._ready:
            if self._closing:
                raise ShuttingDownError("the server is shutting down")
            if len(self._waiting) >= self.limit:
                raise QueueFullError(self._retry_after(len(self._waiting) + 1))
            self._waiting.append(job)
            self._ready.notify()

    def trajectory(self, job_id: str) -> Trajectory | None:
        with self._ready:
            return self._kept.get(job_id)

    @property
    def waiting(self) -> int:
        with self._ready:
            return len(self._waiting)

    def close(self, timeout: float | None = None) -> None:
        """Cancel every job (the running one at its next step) and wait up to `timeout` s for the worker."""
        with self._ready:
            self._closing = True
            jobs = [*self._waiting, *([self._running] if self._running else [])]
            self._ready.notify_all()
        for job in jobs:
            job.cancel()
        self._thread.join(timeout)

    def stop(self) -> None:
        """`close` without the lock or the wait, for a signal handler: no new job, and every job cancelled."""
        self._closing = True
        for job in [*list(self._waiting), self._running]:
            if job is not None:
                job.cancel()

    def _retry_after(self, ahead: int) -> int:
        mean = sum(self._seconds) / len(self._seconds) if self._seconds else 5.0
        return max(1, round(mean * ahead))

    # --- the worker thread -------------------------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            with self._ready:
                while not self._waiting and not self._closing:
                    self._ready.wait(0.5)  # `stop` (from a signal handler) sets _closing without notifying
                if not self._waiting:
                    return
                job = self._running = self._waiting.popleft()
            try:
                self._one(job)
            finally:
                with self._ready:
                    self._running = None
                job.finished.set()
                job.emit("done")

    def _one(self, job: Job) -> None:
        if job.cancelled.is_set() or self._closing:
            job.error = RunCancelled("cancelled before it ran")
            self.counts["cancelled"] += 1
            return
        config = job.config
        if config.max_seconds is not None:  # the wait in the queue counts against the request's limit
            waited = time.monotonic() - job.received
            config = dataclasses.replace(config, max_seconds=max(config.max_seconds - waited, 0.01))
            job.config = config
        started = time.monotonic()
        try:
            job.trajectory = self._run(job, self._callbacks(job))
        except (RunCancelled, OfflineAgentError) as exc:
            job.error = exc
        except Exception as exc:  # noqa: BLE001 - a bug must not kill the worker: the request gets one line
            print(f"offline-agent serve: {job.id} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            job.error = exc
        self._seconds.append(time.monotonic() - started)
        outcome = "answered" if job.trajectory is not None else "failed"
        self.counts["cancelled" if isinstance(job.error, RunCancelled) else outcome] += 1
        if job.trajectory is not None:
            with self._ready:
                self._kept[job.id] = job.trajectory
                while len(self._kept) > KEPT_TRAJECTORIES:
                    self._kept.popitem(last=False)

    @staticmethod
    def _callbacks(job: Job) -> AgentCallbacks:
        """Events for the job's listener; a cancelled job stops when its next step starts."""

        def step_start(index: int, final_only: bool) -> None:
            if job.cancelled.is_set():
                raise RunCancelled("cancelled")
            job.emit("step_start", index)

        def tool_start(name: str, argument: Any) -> None:
            job.emit("tool_start", (name, argument))

        def tool_end(name: str, argument: Any, observation: str, is_error: bool) -> None:
            job.emit("observation", (observation, is_error))

        def step(record: StepRecord) -> None:
            job.emit("step", record)

        return AgentCallbacks(
            on_step_start=step_start,
            on_token=lambda text: job.emit("token", text),
            on_tool_start=tool_start,
            on_tool_end=tool_end,
            on_step=step,
        )


class ShuttingDownError(OfflineAgentError):
    """A request that came in while the server shuts down."""


__all__ = ["Job", "QueueFullError", "RunCancelled", "RunQueue", "ShuttingDownError"]
