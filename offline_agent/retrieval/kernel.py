"""The optional compiled modules: the search kernel (`_kernel.c`) and the text kernel (`_text.c`).

Each is compiled when the package is installed (the build hook in hatch_build.py; it needs a C compiler and
Python's headers). An install without them is not an error: `compiled()` returns None, `postings.Searcher`
answers with numpy, and sentences.py and html_content.py do their text work in Python, with the same results,
only slower. A module built from another version of its C file (an editable install whose C file changed since)
is ignored the same way; running the install again rebuilds it. Setting OFFLINE_AGENT_NO_KERNEL=1 turns both off
(to compare both paths, or to rule them out).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
from pathlib import Path
from types import ModuleType

VERSION = 1  # KERNEL_VERSION in _kernel.c: the call signature this module expects


def compiled(name: str, version: int) -> ModuleType | None:
    """The compiled module `name` of this package (built from `name`.c, with the call signature `version`), or
    None when it is missing, stale or turned off."""
    if os.environ.get("OFFLINE_AGENT_NO_KERNEL", "") not in ("", "0"):
        return None
    try:
        module = importlib.import_module(f"offline_agent.retrieval.{name}")
    except ImportError:
        return None
    if getattr(module, "VERSION", None) != version:
        return None
    built_from = getattr(module, "SOURCE_SHA256", "")
    source = _source_sha256(name)
    if built_from and source is not None and source != built_from:
        return None
    return module


@functools.cache
def _source_sha256(name: str) -> str | None:
    """The sha256 of this package's `name`.c (None where it is not there, as in a wheel): read once a process, as
    sentences.py and html_content.py both ask for the text kernel."""
    source = Path(__file__).with_name(f"{name}.c")
    return hashlib.sha256(source.read_bytes()).hexdigest() if source.exists() else None


def load() -> ModuleType | None:
    """The compiled search kernel, or None when it is missing, stale or turned off."""
    return compiled("_kernel", VERSION)


KERNEL = load()
