"""Fixtures for the retrieval tests: an isolated home folder (named indexes go there) and small corpora."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("OFFLINE_AGENT_HOME", str(home))
    monkeypatch.delenv("OFFLINE_AGENT_INDEX", raising=False)
    return home


@pytest.fixture
def docs_dir(tmp_path: Path) -> Path:
    """A small folder of mixed files."""
    root = tmp_path / "docs"
    root.mkdir()
    (root / "eiffel.md").write_text(
        "# Eiffel Tower\n\nThe Eiffel Tower is a lattice tower in Paris. It was built for the 1889 fair.\n",
        encoding="utf-8",
    )
    (root / "thames.txt").write_text("The Thames flows through London. Tower Bridge crosses it.", encoding="utf-8")
    sub = root / "more"
    sub.mkdir()
    (sub / "page.html").write_text(
        "<html><head><title>Big Ben</title><script>var tower = 1;</script></head>"
        "<body><h1>Big Ben</h1><p>Big Ben is the bell of the clock tower in London.</p></body></html>",
        encoding="utf-8",
    )
    return root
