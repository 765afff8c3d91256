"""Assembles a run from names and paths: the backend (through the backend registry), the corpus, the tools, the
agent.

The CLI and the evaluation runner call this instead of wiring backends and indexes themselves, so every entry
point loads models the same way and records the same reproducibility fields. Backends are built by
`offline_agent.backends.build_backend` (re-exported here); `load_backend` is the short form for Python users.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from offline_agent.agents import AgentCallbacks, AgentConfig, ReActAgent, agent_class
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


def agent_tools(agent: str | type[ReActAgent], tools: Sequence[str] = DEFAULT_TOOLS) -> tuple[str, ...]:
    """The tools a run of `agent` gets: `tools`, then the built-in tools the strategy requires (KnowAgent's
    retrieve) that are not among them."""
    strategy = agent_class(agent) if isinstance(agent, str) else agent
    return (*tools, *(name for name in strategy.required_tools if name not in tools))


@dataclass
class Session:
    """A loaded backend and corpus, reused across questions (each question gets fresh tools and state)."""

    backend: Any
    index: Any | None
    corpus: str | None
    agent: str = "react"
    tools: tuple[str, ...] = DEFAULT_TOOLS

    def ask(
        self,
        question: str,
        config: AgentConfig | None = None,
        callbacks: AgentCallbacks | None = None,
        history: Sequence[Turn] = (),
    ) -> Trajectory:
        """Answer `question`; `history` holds the earlier turns of a chat (the agent picks which to show)."""
        if not question or not question.strip():
            raise ConfigError("the question is empty")
        strategy = agent_class(self.agent)
        registry = build_tools(self.index, agent_tools(strategy, self.tools))
        agent = strategy(self.backend, registry, config, callbacks)
        trajectory = agent.run(question.strip(), history) if history else agent.run(question.strip())
        trajectory.corpus = self.corpus
        return trajectory


__all__ = ["Session", "agent_tools", "build_backend", "env_int", "load_backend", "open_index"]
