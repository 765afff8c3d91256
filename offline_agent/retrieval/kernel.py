"""The optional compiled search kernel (`_kernel.c`), or None: search gives the same results without it.

The kernel is compiled when the package is installed (the build hook in hatch_build.py; it needs a C compiler
and Python's headers). An install without them is not an error: `load()` returns None and
`postings.Searcher` answers with numpy, only slower. A module built from another version of `_kernel.c` (an
editable install whose C file changed since) is ignored the same way; running the install again rebuilds it.
Setting OFFLINE_AGENT_NO_KERNEL=1 turns the kernel off (to compare both paths, or to rule it out).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from types import ModuleType

VERSION = 1  # KERNEL_VERSION in _kernel.c: the call signature this module expects


def load() -> ModuleType | None:
    """The compiled module, or None when it is missing, stale or turned off."""
    if os.environ.get("OFFLINE_AGENT_NO_KERNEL", "") not in ("", "0"):
        return None
    try:
        from offline_agent.retrieval import _kernel  # type: ignore[attr-defined]
    except ImportError:
        return None
    if getattr(_kernel, "VERSION", None) != VERSION:
        return None
    built_from = getattr(_kernel, "SOURCE_SHA256", "")
    source = Path(__file__).with_name("_kernel.c")
    if built_from and source.exists() and hashlib.sha256(source.read_bytes()).hexdigest() != built_from:
        return None
    return _kernel


KERNEL = load()
