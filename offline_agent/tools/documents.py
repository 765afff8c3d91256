"""What answer checks ask of a corpus, as a protocol any search tool can implement.

The checks of a Final (offline_agent/checks) look documents up by title ("is the answer a document the run has
not read?"), by what a text names ("the two things a question compares"), and by a search the agent did not make
("what does a search for the whole question find?"). They reach the corpus only through `DocumentSource`, so a
user's own search tool that implements it gets every check, and one that does not gets the checks that need no
documents. `documents_of` finds the source among a run's tools: the `search` tool if it is one, else the first
tool that is.

A lookup that shows documents returns `Shown`: the Observation text, as the tool's own search would show them, and
what was shown (passage ids, titles, scores), which the step records as its tool details.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class Shown:
    """Documents shown to the model: the Observation text, and the passages' ids, titles and scores (None where a
    passage was not ranked by a search)."""

    text: str
    titles: list[str]
    ids: list[int] = field(default_factory=list)
    scores: list[float | None] = field(default_factory=list)

    def details(self) -> dict[str, Any]:
        """The tool details a step records for what was shown."""
        return {"ids": list(self.ids), "titles": list(self.titles), "scores": list(self.scores)}


@runtime_checkable
class DocumentSource(Protocol):
    """Documents by title, by mention and by search: what the answer checks need of a corpus.

    - `document(name, prefer, place)`: the text of the first passage of the document titled `name` (a
      qualifier such as "(1945 film)" aside; with `place`, also one titled with a region, "McLean, Virginia" for
      "McLean"); where several have the title, the first for which `prefer(title, text)` holds. None: no such title.
    - `named_document(text, prefer)`: (title, head) of the first document whose title `text` names; titles in
      `prefer` (those the run has read) first. None: it names none.
    - `open_named(name, exclude, place)`: the documents titled `name`, shown; those titled in `exclude` left out.
    - `open_found(text, exclude)`: the passages a search for `text` ranks highest, shown, `exclude` left out.
    - `open_mentioned(text, exclude)`: the documents `text` names, shown, `exclude` left out.
    The `open_*` lookups return None where there is nothing to show.
    """

    def document(
        self, name: str, prefer: Callable[[str, str], bool] | None = None, place: bool = False
    ) -> str | None: ...

    def named_document(self, text: str, prefer: set[str] | frozenset[str] = frozenset()) -> tuple[str, str] | None: ...

    def open_named(
        self, name: str, exclude: set[str] | frozenset[str] = frozenset(), place: bool = False
    ) -> Shown | None: ...

    def open_found(self, text: str, exclude: set[str] | frozenset[str] = frozenset()) -> Shown | None: ...

    def open_mentioned(self, text: str, exclude: set[str] | frozenset[str] = frozenset()) -> Shown | None: ...


def documents_of(tools: Iterable[Any]) -> DocumentSource | None:
    """The run's document source: its `search` tool where that is one, else the first tool that is, else None."""
    sources = [tool for tool in tools if isinstance(tool, DocumentSource)]
    named = [tool for tool in sources if getattr(tool, "name", None) == "search"]
    return (named or sources or [None])[0]


__all__ = ["DocumentSource", "Shown", "documents_of"]
