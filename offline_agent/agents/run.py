"""What every run of every strategy has: its config (limits, sampling, the grammar switch), its callbacks for a
live view, and its state while it runs.

Both the strategy seam (base.py) and the step runner (step_runner.py) need these, so they live below both: the
runner books a turn onto a RunState under a RunConfig, and the seam builds the runner. What a strategy chooses for
itself (what a search shows, which answers it checks) is not here but in its own options (options.py).

RunConfig holds the engine's settings, those every strategy obeys the same way: the step and time limits, the
sampling, the grammar switch and the bounds of a step's lines, what the last step may do, the step budget hint,
self-consistency samples and the scope check (runner.Session runs those two around any strategy). All of it is
recorded on the trajectory and in an evaluation's config.json.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from offline_agent.backends.registry import MAX_SEED
from offline_agent.errors import ConfigError
from offline_agent.grammar import ABSTAIN
from offline_agent.steps import STOP_REASONS, StepRecord, Trajectory

# "generate": the last allowed step may only be Final; "force": it is an ordinary step, and a run that reaches
# max_steps without a Final stops with no answer (LangChain's names).
EARLY_STOPPING = ("generate", "force")


def _setting(default: Any, help: str) -> Any:
    return field(default=default, metadata={"help": help})


@dataclass
class RunConfig:
    """The engine's settings of one run (every strategy reads them the same way); all are recorded."""

    max_steps: int = _setting(8, "Most model turns; the last one may only answer (see early_stopping).")
    max_seconds: float | None = _setting(None, "Stop after this many seconds (stop reason timeout).")
    temperature: float = _setting(0.0, "Sampling temperature; 0 is greedy.")
    seed: int = _setting(0, "Sampling seed (recorded with the run).")
    max_tokens: int = _setting(192, "Most tokens per step (a cut-off step is retried once with twice as many).")
    grammar: bool = _setting(True, "Generate under the step grammar (off: the parser still checks every step).")
    thought_max: int = _setting(300, "Most characters of a Thought line (a bound in the grammar).")
    argument_max: int = _setting(120, "Most characters of a tool's argument (a bound in the grammar).")
    final_max: int = _setting(200, "Most characters of a Final answer (a bound in the grammar).")
    early_stopping: str = _setting(
        "generate", "generate: the last allowed step may only be Final; force: it is an ordinary step."
    )
    budget_hint: bool = _setting(False, "Tell the model after each Observation how many steps it has left.")
    samples: int = _setting(1, "Self-consistency: run the question this many times and answer what most answered.")
    scope: str | None = _setting(None, "What the corpus is about: a question outside it is refused before any search.")

    def __post_init__(self) -> None:
        if self.early_stopping not in EARLY_STOPPING:
            raise ConfigError(f"unknown early_stopping {self.early_stopping!r}; choose from {list(EARLY_STOPPING)}")
        if self.max_steps < 1:
            raise ConfigError("max_steps must be at least 1")
        if self.max_seconds is not None and not 0 < self.max_seconds < math.inf:  # nan fails both comparisons
            raise ConfigError("max_seconds must be a positive, finite number of seconds")
        if not 1 <= self.samples <= 32:
            raise ConfigError("samples must be between 1 and 32")
        if self.max_tokens < 16:
            raise ConfigError("max_tokens must be at least 16")
        if not 0.0 <= self.temperature <= 5.0:
            raise ConfigError("temperature must be between 0 and 5")
        if not 0 <= self.seed <= MAX_SEED:
            raise ConfigError(f"seed must be between 0 and {MAX_SEED}")


@dataclass
class AgentCallbacks:
    """Hooks for a live view: a step starts, text streams in, a tool starts and ends, a step is recorded.

    on_tool_end gets (tool name, argument, the Observation as the model sees it, whether the tool failed).
    """

    on_step_start: Callable[[int, bool], None] | None = None
    on_token: Callable[[str], None] | None = None
    on_tool_start: Callable[[str, Any], None] | None = None
    on_step: Callable[[StepRecord], None] | None = None
    on_tool_end: Callable[[str, Any, str, bool], None] | None = None


@dataclass
class RunState:
    """One run in progress: the trajectory being written, the deadline, and whether the run has stopped.

    Strategies keep what they carry from step to step in a subclass (react.LoopState, the critic's memory, the
    planner's evidence), made by their `new_state`.
    """

    trajectory: Trajectory
    deadline: float | None = None
    stopped: bool = False

    def stop(self, reason: str, error: str | None = None) -> None:
        """End the run without an answer of its own making (max_steps, timeout, error, or an added reason)."""
        if reason not in STOP_REASONS:
            raise ValueError(f"unknown stop reason {reason!r}; add it with steps.add_stop_reason first")
        self.trajectory.stop_reason = reason
        self.trajectory.error = error
        self.stopped = True

    def finish(self, answer: str, reason: str = "final") -> None:
        """End the run with `answer` (stop reason `final`, or another a strategy added, e.g. a refusal's); the
        abstention grammar.ABSTAIN ends it with no answer, stop reason `abstained` (`abstain`)."""
        if answer.strip() == ABSTAIN:
            self.abstain()
            return
        self.stop(reason)
        self.trajectory.answer = answer

    def abstain(self) -> None:
        """End the run saying the documents do not say: no answer, `abstained` true."""
        self.stop("abstained")
        self.trajectory.answer = None
        self.trajectory.abstained = True

    def out_of_time(self) -> bool:
        """True (and stop reason timeout) once the run's deadline has passed."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.stop("timeout")
            return True
        return False


__all__ = ["EARLY_STOPPING", "AgentCallbacks", "RunConfig", "RunState"]
