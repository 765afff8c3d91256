"""Assembles a run from names and paths: the model from the registry, the corpus, the tools, the agent.

The CLI (and later the evaluation runner) call this instead of wiring backends and indexes themselves, so
every entry point loads models the same way and records the same reproducibility fields.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from offline_agent.agents import AgentCallbacks, AgentConfig, ReActAgent, agent_class
from offline_agent.agents.consistency import run_samples
from offline_agent.errors import ConfigError
from offline_agent.prompts import CHATML_TEMPLATE
from offline_agent.steps import Trajectory, Turn
from offline_agent.tools import DEFAULT_TOOLS, build_tools


def env_int(name: str, default: int) -> int:
    """An integer setting from the environment, with a clear error when it is not one."""
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, not {value!r}") from None


def load_llama_backend(
    model: str | None,
    *,
    gpu_layers: int = 0,
    context_size: int | None = None,
    seed: int = 0,
    grammar_engine: str = "llguidance",
    jump_forward: bool = True,
    threads: int | None = None,
    verbose: bool = False,
) -> Any:
    """Resolve `model` (registry name, .gguf path, or None for the default) and load it in llama.cpp.

    Threads: `threads`, else OFFLINE_AGENT_THREADS, else every core (llama-cpp-python's default is half).
    """
    from offline_agent.backends.llamacpp import LlamaCppBackend
    from offline_agent.models import resolve_model

    resolved = resolve_model(model)
    spec = resolved.spec
    chat_format = spec.chat_format if spec else "template"
    if chat_format == "template":
        template: str | None = "template"
    elif chat_format == "none":
        template = None
    elif chat_format == "chatml":
        template = CHATML_TEMPLATE
    else:
        raise ConfigError(
            f"model {resolved.name!r}: unsupported chat_format {chat_format!r}; use template, none or chatml"
        )
    return LlamaCppBackend(
        resolved.path,
        context_size=context_size or (spec.n_ctx if spec else 4096),
        gpu_layers=gpu_layers,
        seed=seed,
        model_name=resolved.name,
        sha256=resolved.sha256,
        chat_template=template,
        grammar_engine=grammar_engine,
        jump_forward=jump_forward,
        threads=threads or env_int("OFFLINE_AGENT_THREADS", 0) or None,
        verbose=verbose,
    )


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
        search = (config or AgentConfig()).search_settings()
        config = config or AgentConfig()
        question = question.strip()

        def run(run_config: AgentConfig) -> Trajectory:
            tools = build_tools(self.index, agent_tools(strategy, self.tools), search, question)
            agent = strategy(self.backend, tools, run_config, callbacks)
            return agent.run(question, history) if history else agent.run(question)

        many = config.samples > 1
        trajectory = run_samples(run, config, config.samples, question, history) if many else run(config)
        trajectory.corpus = self.corpus
        return trajectory
