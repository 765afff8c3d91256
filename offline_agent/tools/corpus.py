"""The `search` and `lookup` tools: BM25 over the run's corpus, and keyword lookup in the last document found.

`lookup[keyword]` follows the ReAct paper: it returns the next sentence containing the keyword in the document
of the last search's top passage, one sentence per call, and says when there are no more. Both tools share one
`CorpusSession`, which a run creates fresh so that lookups never leak between questions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from offline_agent.errors import ToolError

SEARCH_K = 3
PASSAGE_CHARS = 600


@dataclass
class CorpusSession:
    """The index plus what the last search found (the document lookup reads, and lookup cursors)."""

    index: Any
    k: int = SEARCH_K
    document_title: str | None = None
    sentences: list[str] = field(default_factory=list)
    cursors: dict[str, int] = field(default_factory=dict)

    def tools(self) -> list[Any]:
        return [SearchTool(self), LookupTool(self)]

    def focus(self, passage: Any) -> None:
        """Make the document of `passage` the one lookup reads."""
        from offline_agent.retrieval import split_sentences

        parts = self.index.passages_of(passage.doc_id) or [passage]
        text = " ".join(part.text for part in parts)
        self.document_title = passage.title
        self.sentences = [text[start:end].strip() for start, end in split_sentences(text)]
        self.sentences = [sentence for sentence in self.sentences if sentence]
        self.cursors = {}


class SearchTool:
    """`search[query]`: the top passages of the corpus for a few keywords."""

    name = "search"
    description = "finds the passages of the corpus that best match a few keywords (an entity or a topic)"
    schema = None
    example = "Eiffel Tower architect"

    def __init__(self, session: CorpusSession) -> None:
        self.session = session
        self.last_details: dict[str, Any] = {}

    def __call__(self, query: str) -> str:
        query = query.strip()
        if not query:
            raise ToolError("empty search query")
        result = self.session.index.search(query, k=self.session.k)
        passages = list(result.passages)
        self.last_details = {
            "ids": [int(i) for i in result.ids],
            "titles": [p.title for p in passages],
            "scores": [round(float(s), 4) for s in result.scores],
        }
        if not passages:
            return f"No passage matches {query!r}. Try other keywords."
        self.session.focus(passages[0])
        return "\n".join(
            f"[{rank}] {p.title}: {_clip(p.text, PASSAGE_CHARS)}" for rank, p in enumerate(passages, start=1)
        )


class LookupTool:
    """`lookup[keyword]`: the next sentence containing the keyword in the document of the last search."""

    name = "lookup"
    description = "returns the next sentence containing a keyword in the top document of the last search"
    schema = None
    example = "born"
    is_stateful = True  # the same call returns the next match, so repeats are not refused

    def __init__(self, session: CorpusSession) -> None:
        self.session = session
        self.last_details: dict[str, Any] = {}

    def __call__(self, keyword: str) -> str:
        session = self.session
        keyword = keyword.strip()
        if not keyword:
            raise ToolError("empty lookup keyword")
        if session.document_title is None:
            raise ToolError("no document yet: use search first, then lookup")
        needle = keyword.lower()
        hits = [sentence for sentence in session.sentences if needle in sentence.lower()]
        self.last_details = {"titles": [session.document_title]}
        if not hits:
            return f"No sentence in {session.document_title!r} contains {keyword!r}."
        position = session.cursors.get(needle, 0)
        if position >= len(hits):
            return f"No more sentences in {session.document_title!r} contain {keyword!r}."
        session.cursors[needle] = position + 1
        return f"(Result {position + 1} / {len(hits)}) {hits[position]}"


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit] + " ..."
