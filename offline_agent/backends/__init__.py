"""Backends that run a model: the protocol, the registry that builds them by name, and one module per backend.

A backend module (llamacpp, transformers, http) is imported only when it is built, so torch, transformers and
llama-cpp-python load only for the backend a run uses. `ScriptedBackend` replays queued text for tests; it is not
in the registry (it has no model to load).
"""

from __future__ import annotations

from offline_agent.backends.base import Backend, BackendCapabilities, TokenCallback
from offline_agent.backends.registry import (
    BACKEND_ALIASES,
    BACKENDS,
    DEFAULT_BACKEND,
    BackendEntry,
    BackendOptions,
    backend_entry,
    build_backend,
)
from offline_agent.backends.scripted import ScriptedBackend

__all__ = [
    "BACKENDS",
    "BACKEND_ALIASES",
    "Backend",
    "BackendCapabilities",
    "BackendEntry",
    "BackendOptions",
    "DEFAULT_BACKEND",
    "ScriptedBackend",
    "TokenCallback",
    "backend_entry",
    "build_backend",
]
