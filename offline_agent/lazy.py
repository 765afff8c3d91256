"""Packages whose public names are imported on first use: `import offline_agent` loads no model engine, and a worker
process that reads files (retrieval/parallel.py) loads no index or numpy."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_names(package: str, exports: dict[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """The `__getattr__` of `package`: a name of `exports` (name -> the module that defines it) is imported from its
    module on first use and kept in `namespace` (the package's globals) after."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = namespace[name] = getattr(importlib.import_module(module), name)
        return value

    return __getattr__
