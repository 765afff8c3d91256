"""Backends that run a model: a protocol, and one module per backend, imported only when chosen."""

from __future__ import annotations

from typing import Any

from offline_agent.backends.base import Backend, BackendCapabilities, TokenCallback
from offline_agent.backends.scripted import ScriptedBackend
from offline_agent.errors import ConfigError

BACKENDS: tuple[str, ...] = ("llama.cpp", "scripted")


def load_backend(name: str, **options: Any) -> Backend:
    """Build a backend by name; `options` go to its constructor (llama.cpp: model_path, context_size, ...)."""
    if name == "llama.cpp":
        from offline_agent.backends.llamacpp import LlamaCppBackend

        return LlamaCppBackend(**options)
    if name == "scripted":
        return ScriptedBackend(**options)
    raise ConfigError(f"unknown backend {name!r}; choose from {sorted(BACKENDS)}")


__all__ = ["BACKENDS", "Backend", "BackendCapabilities", "ScriptedBackend", "TokenCallback", "load_backend"]
