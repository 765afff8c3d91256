"""The reader registry: a format is one reader object, found by suffix, and a user's own reader plugs in."""

from __future__ import annotations

from pathlib import Path

import pytest

from offline_agent.errors import ConfigError
from offline_agent.retrieval import ingest_paths
from offline_agent.retrieval.readers import (
    READERS,
    Document,
    Fields,
    Section,
    SkipFile,
    reader_for,
    register_reader,
    supported_extensions,
)


class LogReader:
    """A user's reader: one document per non-empty line of a `.log` file, each line its own section."""

    name = "log"
    extensions = frozenset({".log"})
    extra = None

    def read(self, path: Path, data: bytes, doc_id: str, fields: Fields) -> tuple[list[Document], list[str]]:
        text = data.decode()
        if text.startswith("LOCKED"):
            raise SkipFile("locked log")
        sections = tuple(Section(text.index(line), ("log", line[:5])) for line in text.splitlines() if line)
        return [Document(doc_id, path.stem, text, sections=sections)], []


@pytest.fixture
def log_reader():
    reader = register_reader(LogReader())
    yield reader
    del READERS[".log"]


def test_the_built_in_readers_cover_the_documented_suffixes() -> None:
    for suffix in (".txt", ".md", ".rst", "", ".html", ".htm", ".jsonl", ".json", ".csv", ".tsv", ".pdf"):
        assert suffix in supported_extensions()
    assert reader_for(Path("page.HTML")).name == "html"
    assert reader_for(Path("notes.unknown")) is None


def test_a_users_reader_is_used_for_its_suffix_and_its_skip_reason_is_reported(tmp_path: Path, log_reader) -> None:
    (tmp_path / "app.log").write_text("alpha beta\ngamma delta\n")
    (tmp_path / "old.log").write_text("LOCKED")
    ingested = ingest_paths(tmp_path)
    # Each line is a section of its own, so each is a passage, with its heading path and line.
    assert [(p.title, p.text, p.heading, p.line) for p in ingested.passages] == [
        ("app", "alpha beta", ("log", "alpha"), 1),
        ("app", "gamma delta", ("log", "gamma"), 2),
    ]
    assert dict(ingested.skipped) == {str(tmp_path / "old.log"): "locked log"}


def test_a_suffix_is_read_by_one_reader_unless_replaced(log_reader) -> None:
    class Other(LogReader):
        name = "other-log"

    with pytest.raises(ConfigError, match="already read by another reader"):
        register_reader(Other())
    replaced = register_reader(Other(), replace=True)
    assert reader_for(Path("x.log")) is replaced


def test_an_object_without_the_reader_shape_is_refused() -> None:
    with pytest.raises(ConfigError, match="is not a reader"):
        register_reader(object())  # type: ignore[arg-type]
