"""Shared fixtures: a tiny in-test corpus, the scripted backend, and the real test model (loaded once)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings
from support import TINY_CORPUS, need_shared_data, smollm_path

# Tests assert behaviour, never timing: a loaded CI machine must not fail a property test on its deadline.
settings.register_profile("offline_agent", deadline=None)
settings.load_profile("offline_agent")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--kills",
        type=int,
        default=None,
        help="reliability suite: how many `index --update` runs to kill -9 (default 20, or OFFLINE_AGENT_KILLS)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that says `shared_data` in its name gets the marker, so the rule below holds for new tests too."""
    for item in items:
        if "shared_data" in item.name and item.get_closest_marker("shared_data") is None:
            item.add_marker(pytest.mark.shared_data)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Tests marked shared_data skip (with the reason) when ../shared/data is missing, and fail under CI=true."""
    if item.get_closest_marker("shared_data") is not None:
        if "shared_data" not in item.name:
            pytest.fail(f"{item.name} needs ../shared/data: its name must say so (shared_data)")
        need_shared_data()


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


@pytest.fixture(scope="session")
def small_model_path() -> Path:
    return smollm_path()


@pytest.fixture(scope="session")
def small_backend(small_model_path: Path):
    """SmolLM2-135M in llama.cpp, loaded once for the whole session."""
    from offline_agent.backends.llamacpp import LlamaCppBackend

    return LlamaCppBackend(small_model_path, context_size=4096, seed=0, model_name="smollm2-135m-instruct")
