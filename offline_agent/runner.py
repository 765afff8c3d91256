"""Assembles a run from names and paths: the backend (through the backend registry), the corpus, the tools, the
agent.

The CLI and the evaluation runner call this instead of wiring backends and indexes themselves, so every entry
point loads models the same way and records the same reproducibility fields. Backends are built by
`offline_agent.backends.build_backend` (re-exported here); `load_backend` is the short form for Python users.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from offline_agent.agents import AgentCallbacks, AgentSettings, RunConfig, Strategy, StrategyOptions, agent_class
from offline_agent.agents.consistency import run_samples
from offline_agent.agents.scope import check_scope, refusal
from offline_agent.agents.settings import PLAIN
from offline_agent.backends.registry import BackendOptions, build_backend, env_int
from offline_agent.errors import ConfigError
from offline_agent.steps import Trajectory, Turn
from offline_agent.tools import DEFAULT_TOOLS, build_tools


def load_backend(backend: str | None = None, model: str | None = None, **options: Any) -> Any:
    """Build a backend by registry name (default llamacpp) for `model` (a registry name or path; None: the default
    model), e.g. `load_backend("transformers", "smollm2-135m-instruct", device="cpu")`."""
    return build_backend(backend, BackendOptions(model=model), **options)


def open_index(corpus: str | Path | None) -> tuple[Any, str]:
    """The BM25 index over `corpus` (a folder or file of documents, an index folder or an index name)."""
    from offline_agent.resources import sample_corpus
    from offline_agent.retrieval import open_corpus

    target = corpus if corpus not in (None, "") else sample_corpus()
    return open_corpus(target), str(target)


SCOPE_FILE = "scope.txt"


def corpus_scope(corpus: str | Path | None) -> str | None:
    """The scope stored with a corpus: the sample corpus's own, or an index's scope.txt (`index --scope`)."""
    from offline_agent.agents.scope import read_scope
    from offline_agent.resources import data_path
    from offline_agent.retrieval import index_path
    from offline_agent.retrieval.storage import is_index_dir

    if corpus in (None, ""):
        path = data_path(f"corpora/sample/{SCOPE_FILE}")
    else:
        folder = Path(str(corpus)).expanduser()
        if not is_index_dir(folder):
            try:
                folder = index_path(str(corpus))
            except Exception:  # not an index name: a folder or file of documents has no stored scope
                return None
        path = folder / SCOPE_FILE
    return read_scope(str(path)) if path.is_file() else None


def save_scope(index_folder: Path, scope: str) -> None:
    """Keep `scope` with the index in `index_folder` (written atomically); a failed write (a full disk) is one
    RetrievalError and leaves the previous scope.txt, if any, and no temporary file."""
    import contextlib
    import os
    import tempfile

    from offline_agent.errors import RetrievalError
    from offline_agent.outputs import describe_write_error

    target = index_folder / SCOPE_FILE
    temporary = None
    try:
        handle, temporary = tempfile.mkstemp(dir=index_folder, prefix=".scope-")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(scope + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
    except OSError as exc:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        raise RetrievalError(
            f"the index was saved, but its scope could not be written to {target}: {describe_write_error(target, exc)}"
        ) from None


QUESTION_SHARE = 0.25  # the most of the context window one question may take


def check_question_length(backend: Any, question: str) -> None:
    """Refuse (ConfigError) a question that takes more than QUESTION_SHARE of the context window: it could not be
    answered, and once in a chat's history it would crowd out every later question's prompt too."""
    if backend is None:
        return
    most = int(backend.context_size * QUESTION_SHARE)
    tokens = backend.count_tokens(question)
    if tokens > most:
        raise ConfigError(
            f"the question is too long: {tokens} tokens, where a question may take at most {most} "
            f"(a {QUESTION_SHARE:.0%} share of the model's {backend.context_size}-token context)"
        )


def agent_tools(agent: str | type[Strategy], tools: Sequence[str] = DEFAULT_TOOLS) -> tuple[str, ...]:
    """The tools a run of `agent` gets: `tools`, then the built-in tools the strategy requires (KnowAgent's
    retrieve) that are not among them."""
    strategy = agent_class(agent) if isinstance(agent, str) else agent
    return (*tools, *(name for name in strategy.required_tools if name not in tools))


@dataclass
class Session:
    """A loaded backend and corpus, and the strategy that answers over them with its options, reused across
    questions (each question gets fresh tools and state, and its own run config).

    `options` are the strategy's (None: its defaults, which are the `plain` profile's); `profile` names the
    profile they came from, recorded on every trajectory. `Session.from_settings` takes all three from one
    AgentSettings (agents.agent_settings)."""

    backend: Any
    index: Any | None
    corpus: str | None
    agent: str = "react"
    tools: tuple[str, ...] = DEFAULT_TOOLS
    options: StrategyOptions | None = None
    profile: str = PLAIN

    def __post_init__(self) -> None:
        self.options = AgentSettings(self.agent, self.profile, options=self.options).options  # checks the type

    @classmethod
    def from_settings(
        cls, settings: AgentSettings, *, backend: Any, index: Any | None, corpus: str | None, **fields: Any
    ) -> Session:
        """A session running `settings`' strategy with its options (ask with `settings.config`)."""
        return cls(backend, index, corpus, settings.agent, options=settings.options, profile=settings.profile, **fields)

    def ask(
        self,
        question: str,
        config: RunConfig | None = None,
        callbacks: AgentCallbacks | None = None,
        history: Sequence[Turn] = (),
    ) -> Trajectory:
        """Answer `question` under `config` (None: RunConfig()); `history` holds the earlier turns of a chat (the
        agent picks which to show)."""
        if not question or not question.strip():
            raise ConfigError("the question is empty")
        strategy = agent_class(self.agent)
        config = config or RunConfig()
        question = question.strip()

        def run(run_config: RunConfig) -> Trajectory:
            agent = strategy(self.backend, self._tools(strategy, question), run_config, callbacks, self.options)
            return agent.run(question, history) if history else agent.run(question)

        verdict = None
        if config.scope:
            verdict = check_scope(question, config.scope, self.index, self.backend, seed=config.seed)
            if not verdict.in_scope:
                return self._refused(strategy, config, question, verdict)
        many = config.samples > 1
        trajectory = run_samples(run, config, config.samples, question, history) if many else run(config)
        if verdict is not None:
            trajectory.scope = _scope_entry(verdict)
        trajectory.corpus = self.corpus
        trajectory.profile = self.profile
        return trajectory

    def _tools(self, strategy: type[Strategy], question: str) -> Any:
        """Fresh tools for one run, showing what the strategy's options say a search shows."""
        assert self.options is not None
        return build_tools(self.index, agent_tools(strategy, self.tools), self.options.search_settings(), question)

    def _refused(self, strategy: type[Strategy], config: RunConfig, question: str, verdict: Any) -> Trajectory:
        """The trajectory of a question refused as out of scope: the check is its only step, the refusal its answer."""
        agent = strategy(self.backend, self._tools(strategy, question), config, None, self.options)
        trajectory = agent.new_trajectory(question, agent.prompt_parts(question), [])
        verdict.record.final = refusal(config.scope or "")
        # The check's details, of the strategy's type, so the trajectory reads back as it was written.
        check = verdict.record.details
        verdict.record.details = strategy.details_type(scope=check.scope if check is not None else None)
        trajectory.steps = [verdict.record]
        trajectory.answer = verdict.record.final
        trajectory.stop_reason = "out_of_scope"
        trajectory.seconds = verdict.record.seconds
        trajectory.scope = _scope_entry(verdict)
        trajectory.corpus = self.corpus
        trajectory.profile = self.profile
        return trajectory


def _scope_entry(verdict: Any) -> dict[str, Any]:
    """What a trajectory keeps of its scope check."""
    details = verdict.record.details
    entry = details.scope.to_dict() if details is not None and details.scope is not None else {}
    entry.update(in_scope=verdict.in_scope, usage=asdict(verdict.record.usage), seconds=verdict.record.seconds)
    return entry


__all__ = [
    "QUESTION_SHARE",
    "Session",
    "agent_tools",
    "build_backend",
    "check_question_length",
    "corpus_scope",
    "env_int",
    "load_backend",
    "open_index",
    "save_scope",
]
