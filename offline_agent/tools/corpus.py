"""The corpus tools: `search` (BM25 over the run's corpus), `lookup` (keyword lookup in the last document found)
and `retrieve` (the document whose title best matches an entity, KnowAgent's Retrieve action).

`lookup[keyword]` follows the ReAct paper: it returns the next sentence containing the keyword in the document
of the last search's (or retrieve's) top passage, one sentence per call, and says when there are no more. The
tools share one `CorpusSession`, which a run creates fresh so that lookups never leak between questions.

A search shows each passage as `[k] Title: text`, or `[k] Title > Section > Subsection: text` where the passage
sits in a section whose headings go beyond the document's title (a page of a manual). Headings are shown without
their section numbers ("20.3.1. Connection Settings" as "Connection Settings", also where a passage's first sentence
is its heading): where a section sits in a manual's table of contents is no fact of the manual, and a model asked
for a number wrote the nearest section number. Only numbers of two levels or more are taken ("20.3.", "F.3.");
one level ("1. FC Köln") is as often part of a name.

`retrieve[entity]` reads a table of every document title, built once per index on first use and kept while the
index lives (a hash table for exact matches, and a BM25 index over the titles alone for the closest match), so a
call never scans the titles. Building it costs one pass over the titles; an index changed by add or delete gets a
fresh table. Limits: a document is matched by its title only (an untitled document can never be retrieved), and
the passage returned is the document's first one (the lowest passage id).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from math import fsum
from typing import Any

from offline_agent.errors import ToolError
from offline_agent.listing import listing
from offline_agent.tools.base import Notice
from offline_agent.tools.documents import Shown
from offline_agent.tools.titles import TitleTable, bare_title, title_table

SEARCH_K = 3
PASSAGE_CHARS = 600
SNIPPETS = ("head", "sentences")


@dataclass(frozen=True)
class SearchSettings:
    """What a search shows the model.

    `snippet` "head": each passage's first PASSAGE_CHARS characters; "sentences": each passage's first sentence
    (in an encyclopedic text it says what the document is about) and the `sentences` - 1 others that weigh most
    for the query and the question (the idf of the terms they share, the passage's own title terms aside), in
    their order, so more passages fit in the same Observation and the sentence that answers is less likely to be
    cut off. `title_boost`: a document whose title the query names (all of the title's terms are in the query)
    comes first, whatever its BM25 rank. `links`: up to this many documents that the passages name (titles.py:
    their title is written in a passage's text) are shown after the passages, in the order they are named: the
    second hop of a question that goes through an entity, found without another search. `sentences_after`: with
    "sentences", each best sentence comes with the ones after it (a manual states a setting, then "The default is
    ..."). `section_sentences_after`: the same, at least, for a passage in a section below its document's title
    (a manual's "Title > Section", not an encyclopedic record or a page's opening): reference text names a thing
    and gives its value in the next sentence, where an article's next sentence is about something else.
    `section_sentences`: at least this many sentences, the first one included, for a passage in such a section: a
    reference entry states its value in a short sentence of its own ("The default is 80 MB.") that shares few
    words with a question, and the entry's longer sentences outweigh it. `section_defaults`: a passage in such a
    section also shows every sentence that says "default" ("The default value is 5 seconds.", "By default, ..."),
    however few of the query's words it has: what holds when nothing is set is the value most questions about an
    entry ask for, or the one they start from (a limit, an effect), and a manual states it once, in few words.
    `with_question`: where the query finds a passage in such a section, the passages are ranked by the query's
    words and the run's question's together (what the search shows, and which document the query names, still go
    by the query): a small model's few keywords miss the words reference text writes ("wait ... before trying
    again" for its "standby WAL wait time"), and the question holds them; in encyclopedic text the question's other
    words ("born", "city", "composer") only find more things of the kind asked for, which a small model then
    answers with.
    """

    k: int = SEARCH_K
    snippet: str = "head"
    sentences: int = 3
    title_boost: bool = False
    links: int = 0
    sentences_after: int = 0
    section_sentences_after: int = 0
    section_sentences: int = 0
    section_defaults: bool = False
    with_question: bool = False

    def __post_init__(self) -> None:
        from offline_agent.errors import ConfigError

        if self.snippet not in SNIPPETS:
            raise ConfigError(f"unknown snippet kind {self.snippet!r}; choose from {list(SNIPPETS)}")
        if not 1 <= self.k <= 20:
            raise ConfigError("search k must be between 1 and 20")
        if not 1 <= self.sentences <= 20:
            raise ConfigError("sentences per passage must be between 1 and 20")
        if not 0 <= self.section_sentences <= 20:
            raise ConfigError("sentences per passage in a section must be between 0 and 20")
        if not 0 <= self.links <= 20:
            raise ConfigError("links per search must be between 0 and 20")
        if not 0 <= self.sentences_after <= 5 or not 0 <= self.section_sentences_after <= 5:
            raise ConfigError("sentences shown after each best one must be between 0 and 5")


@dataclass
class CorpusSession:
    """The index plus what the last search found (the document lookup reads, and lookup cursors)."""

    index: Any
    settings: SearchSettings = field(default_factory=SearchSettings)
    question: str = ""  # the question of the run: "sentences" snippets favour sentences that bear on it too
    document_title: str | None = None
    sentences: list[str] = field(default_factory=list)
    cursors: dict[str, int] = field(default_factory=dict)
    _titles: TitleTable | None = field(default=None, repr=False)

    def tools(self) -> list[Any]:
        """The search and lookup tools over this session (retrieve is built by name: tools.build_tools)."""
        return [SearchTool(self), LookupTool(self)]

    def titles(self) -> TitleTable:
        """The title table of this session's index (built on first use, shared by every session of the index)."""
        if self._titles is None:
            self._titles = title_table(self.index)
        return self._titles

    def focus(self, passage: Any) -> None:
        """Make the document of `passage` the one lookup reads."""
        from offline_agent.retrieval import split_sentences

        parts = self.index.passages_of(passage.doc_id) or [passage]
        text = " ".join(part.text for part in parts)
        self.document_title = passage.title
        self.sentences = [text[start:end].strip() for start, end in split_sentences(text)]
        self.sentences = [sentence for sentence in self.sentences if sentence]
        self.cursors = {}


class _CorpusTool:
    """A tool over the run's corpus session, with a plain string argument (no schema), whose `last_details` are
    kept per thread, so calls run side by side (the planner's executor) each read their own."""

    schema = None

    def __init__(self, session: CorpusSession) -> None:
        self.session = session
        self._local = threading.local()

    @property
    def last_details(self) -> dict[str, Any]:
        return getattr(self._local, "details", {})

    @last_details.setter
    def last_details(self, value: dict[str, Any]) -> None:
        self._local.details = value


class SearchTool(_CorpusTool):
    """`search[query]`: the top passages of the corpus for a few keywords. It is also the run's
    `documents.DocumentSource`: the answer checks look documents up through it."""

    name = "search"
    description = "finds the passages of the corpus that best match a few keywords (an entity or a topic)"
    example = "Eiffel Tower architect"

    def __call__(self, query: str) -> str:
        query = query.strip()
        if not query:
            raise ToolError("empty search query")
        session = self.session
        settings = session.settings
        k = settings.k
        result = session.index.search(query, k=k)
        if settings.with_question and session.question.strip() and any(map(_in_section, result.passages)):
            result = session.index.search(f"{query} {session.question}", k=k)
        passages = list(result.passages)
        scores: list[Any] = list(result.scores)
        boosted = self._named_title(query) if settings.title_boost else None
        if boosted is not None:
            others = [(p, s) for p, s in zip(passages, scores, strict=True) if p.id != boosted.id]
            passages = [boosted, *(p for p, _ in others)][:k]
            scores = [None, *(s for _, s in others)][:k]
        linked = self._linked(passages) if settings.links and passages else []
        if not passages:
            self.last_details = {"ids": [], "titles": [], "scores": []}
            return Notice(f"No passage matches {query!r}. Try other keywords.")
        text = self._show(query, passages, scores, linked)
        if boosted is not None:
            self.last_details["title_boost"] = boosted.title
        return text

    def open_named(
        self, name: str, exclude: set[str] | frozenset[str] = frozenset(), place: bool = False
    ) -> Shown | None:
        """The documents titled `name` exactly (a qualifier aside, as "Kiss and Tell" names "Kiss and Tell (1945
        film)"; with `place`, a region too where no title is `name`: "McLean, Virginia" for "McLean"), shown as a
        search for `name` shows passages; None when no document but those titled in `exclude` has that title."""
        name = name.strip()
        found = [(pid, title) for pid, title in self.session.titles().named(name, place) if title not in exclude]
        return self._show_documents(name, found)

    def document(self, name: str, prefer: Callable[[str, str], bool] | None = None, place: bool = False) -> str | None:
        """The text of the first passage of the document titled `name` (a qualifier aside; with `place`, a region
        too, as in `open_named`); None when no document has that title. Where several have it ("The Guest", a
        story, and "The Guest (film)"), the first for which `prefer(title, text)` is true, else the first."""
        found = self.session.titles().named(name.strip(), place)
        texts = [(title, self.session.index.passage(pid).text) for pid, title in found]
        if prefer is not None:
            texts.sort(key=lambda item: not prefer(*item))  # stable: the first preferred one, in title order
        return texts[0][1] if texts else None

    def definition(self, name: str, place: bool = False) -> str | None:
        """The first sentence of the document titled `name` (a qualifier aside; with `place`, a region too, as in
        `open_named`), which says what it is ("Dublin is the capital and largest city of Ireland ..."); None when
        no document has that title."""
        from offline_agent.retrieval import first_sentence

        text = self.document(name, place=place)
        if text is None:
            return None
        return first_sentence(text) or None

    def named_document(self, text: str, prefer: set[str] | frozenset[str] = frozenset()) -> tuple[str, str] | None:
        """(title, head) of the first document `text` names (titles.TitleTable.mentions), its head being its first
        passage's first PASSAGE_CHARS characters; None when it names none. Where several documents have that name
        ("Giuseppe Verdi", "Giuseppe Verdi (film)"), one titled in `prefer` (those the run has read) comes first,
        then the one whose title is the bare name."""
        found = self.session.titles().mentions(text)
        if not found:
            return None
        name = bare_title(found[0][1])
        same = [(pid, title) for pid, title in found if bare_title(title) == name]
        pid, title = min(same, key=lambda item: (item[1] not in prefer, item[1] != name))
        return title, _clip(self.session.index.passage(pid).text, PASSAGE_CHARS)

    def open_found(self, text: str, exclude: set[str] | frozenset[str] = frozenset()) -> Shown | None:
        """The passages a search for `text` ranks highest (up to k, BM25 over all of its words: a whole question,
        say), those of documents titled in `exclude` left out, shown as a search shows them; None when every
        passage found is excluded."""
        session = self.session
        result = session.index.search(text, k=session.settings.k + len(exclude))
        kept = [(p, s) for p, s in zip(result.passages, result.scores, strict=True) if p.title not in exclude]
        kept = kept[: session.settings.k]
        if not kept:
            return None
        return self._shown(self._show(text, [p for p, _ in kept], [s for _, s in kept], []))

    def open_mentioned(self, text: str, exclude: set[str] | frozenset[str] = frozenset()) -> Shown | None:
        """The documents `text` names (titles.TitleTable.mentions: their bare title written in it), up to k, those
        titled in `exclude` left out, shown as a search shows them; None when it names no other document."""
        return self._show_documents(text, self.session.titles().mentions(text, exclude=exclude))

    def _show_documents(self, query: str, found: list[tuple[int, str]]) -> Shown | None:
        """The first passages of up to k documents found by name ((passage id, title) pairs), shown as a search
        for `query` shows them; None when there are none."""
        if not found:
            return None
        passages = [self.session.index.passage(pid) for pid, _ in found[: self.session.settings.k]]
        return self._shown(self._show(query, passages, [None] * len(passages), []))

    def _shown(self, text: str) -> Shown:
        """`text` just shown by `_show`, with what it showed (the details `_show` recorded)."""
        details = self.last_details
        return Shown(text, list(details["titles"]), list(details["ids"]), list(details["scores"]))

    def _show(self, query: str, passages: list[Any], scores: list[Any], linked: list[Any]) -> str:
        """The Observation of found passages and linked documents (their BM25 `scores`, None where a passage was not
        ranked, recorded to four places); sets last_details and lookup's document."""
        session = self.session
        settings = session.settings
        shown = [*passages, *linked]
        self.last_details = {
            "ids": [int(p.id) for p in shown],
            "titles": [p.title for p in shown],
            "scores": [*(None if s is None else round(float(s), 4) for s in scores), *(None for _ in linked)],
        }
        if linked:
            self.last_details["links"] = [p.title for p in linked]
        session.focus(passages[0])
        if settings.snippet == "sentences":
            index = session.index
            terms = set(index.analyzer.tokens(query)) | set(index.analyzer.tokens(session.question))
            weights = index.term_idf(terms) if hasattr(index, "term_idf") else dict.fromkeys(terms, 1.0)
            texts = []
            for p in shown:
                count, after = _sentences_shown(p, settings)
                keep = _states_default if settings.section_defaults and _in_section(p) else None
                texts.append(_best_sentences(p, weights, count, index.analyzer, after, keep))
        else:
            texts = [_clip(_opening(p, p.text), PASSAGE_CHARS) for p in shown]
        return listing((_label(p), text) for p, text in zip(shown, texts, strict=True))

    def _linked(self, passages: list[Any]) -> list[Any]:
        """The first passages of the documents the passages name, up to `links`, in the order they are named."""
        table = self.session.titles()
        shown = {p.title for p in passages}
        out: list[Any] = []
        for passage in passages:
            for passage_id, _ in table.mentions(passage.text, exclude=shown):
                if len(out) == self.session.settings.links:
                    return out
                linked = self.session.index.passage(passage_id)
                shown.add(linked.title)
                out.append(linked)
        return out

    def _named_title(self, query: str) -> Any:
        """The first passage of the document whose title the query names, or None."""
        match = self.session.titles().best(query)
        if match is None:
            return None
        passage = self.session.index.passage(match[0])
        analyzer = self.session.index.analyzer
        title_terms = set(analyzer.tokens(bare_title(passage.title)))
        if match[2] == "exact" or (title_terms and title_terms <= set(analyzer.tokens(query))):
            return passage
        return None


class LookupTool(_CorpusTool):
    """`lookup[keyword]`: the next sentence containing the keyword in the document of the last search."""

    name = "lookup"
    description = "returns the next sentence containing a keyword in the top document of the last search"
    example = "born"
    is_stateful = True  # the same call returns the next match, so repeats are not refused

    def _hits(self, needle: str) -> list[str]:
        """The sentences of the current document that contain `needle` (lower case)."""
        return [sentence for sentence in self.session.sentences if needle in sentence.lower()]

    def exhausted(self, keyword: str) -> bool:
        """Whether calling with `keyword` now could only say that no (further) sentence matches."""
        needle = keyword.strip().lower()
        if not needle or self.session.document_title is None:
            return False
        return self.session.cursors.get(needle, 0) >= len(self._hits(needle))

    def __call__(self, keyword: str) -> str:
        session = self.session
        keyword = keyword.strip()
        if not keyword:
            raise ToolError("empty lookup keyword")
        if session.document_title is None:
            raise ToolError("no document yet: use search first, then lookup")
        needle = keyword.lower()
        hits = self._hits(needle)
        self.last_details = {"titles": [session.document_title]}
        if not hits:
            return Notice(f"No sentence in {session.document_title!r} contains {keyword!r}.")
        position = session.cursors.get(needle, 0)
        if position >= len(hits):
            return Notice(f"No more sentences in {session.document_title!r} contain {keyword!r}.")
        session.cursors[needle] = position + 1
        return f"(Result {position + 1} / {len(hits)}) {hits[position]}"


class RetrieveTool(_CorpusTool):
    """`retrieve[entity]`: the passage of the document whose title best matches an entity's name."""

    name = "retrieve"
    description = "returns the document whose title best matches a name (a person, place, work or thing)"
    example = "Marie Curie"

    def __call__(self, entity: str) -> str:
        self.last_details = {}
        entity = entity.strip()
        if not entity:
            raise ToolError("empty entity name")
        match = self.session.titles().best(entity)
        if match is None:
            self.last_details = {"ids": [], "titles": [], "scores": [], "match": None}
            return Notice(f"No document title matches {entity!r}. Try search with other keywords.")
        passage_id, score, kind = match
        passage = self.session.index.passage(passage_id)
        self.last_details = {
            "ids": [int(passage.id)],
            "titles": [passage.title],
            "scores": [round(score, 4)],
            "match": kind,
        }
        self.session.focus(passage)
        return f"{unnumbered(passage.title)}: {_clip(passage.text, PASSAGE_CHARS)}"


HEADING_CHARS = 80
_SECTION_NUMBER = re.compile(r"(?:[A-Z]|\d+)(?:\.\d+)+\.\s+(?=\S)")  # "20.3.1. ", "F.3. "


def unnumbered(heading: str) -> str:
    """`heading` without a section number of two levels or more in front ("20.3.1. Connection Settings" ->
    "Connection Settings")."""
    number = _SECTION_NUMBER.match(heading)
    return heading[number.end() :] if number else heading


def _label(passage: Any) -> str:
    """How a search shows where a passage is: its title, then the headings of its section beyond the title
    ("Built-in Types > Numeric Types > Additional Methods on Float"); the title alone where the passage has no
    heading path beyond it (a JSONL record, a Markdown file whose only heading is its title), as before heading
    paths were kept."""
    from offline_agent.retrieval.passages import passage_label

    headings = tuple(map(unnumbered, getattr(passage, "heading", ())))
    return passage_label(unnumbered(passage.title), headings, lambda heading: _clip(heading, HEADING_CHARS))


def _in_section(passage: Any) -> bool:
    """Whether `passage` sits in a section below its document's title (a manual's "Title > Section")."""
    from offline_agent.retrieval.passages import heading_beyond_title

    return bool(heading_beyond_title(getattr(passage, "heading", ()), passage.title))


def _sentences_shown(passage: Any, settings: SearchSettings) -> tuple[int, int]:
    """How many sentences a search shows of `passage` (its first one included), and how many after each best one:
    at least the section settings' for a passage in a section below its document's title."""
    if _in_section(passage):
        count = max(settings.sentences, settings.section_sentences)
        return count, max(settings.sentences_after, settings.section_sentences_after)
    return settings.sentences, settings.sentences_after


def _opening(passage: Any, text: str) -> str:
    """A passage's `text` as a search shows it where it opens with its own headings (the first passage of a
    section, perhaps with the heading of a section above that holds no text of its own): without the headings the
    label shows (those below the document's title: a manual's reference entry opens with the name its label ends
    with), else with the heading's section number taken off."""
    from offline_agent.retrieval.passages import heading_beyond_title

    heading = getattr(passage, "heading", ())
    if not heading:
        return text
    below = len(heading_beyond_title(heading, passage.title))
    at, shown_at = 0, 0
    for number, name in enumerate(heading):
        found = _starts_with(text, name, at)
        if found is not None:
            at = found
            shown_at = found if number >= len(heading) - below else shown_at
    if shown_at and text[shown_at:].strip():
        return text[shown_at:].lstrip()
    found = _starts_with(text, heading[-1])
    return text if found is None else unnumbered(heading[-1]) + text[found:]


# The end of a heading's line, with a Markdown or reStructuredText underline if one follows ("Sizes\n-----").
_LINE_END = r"(?:[^\S\n]*\n {0,3}(?:=+|-+)[^\S\n]*(?=\n|$))?(?=[^\S\n]*(?:\n|$))"


def _starts_with(text: str, heading: str, at: int = 0) -> int | None:
    """Where `heading` ends in `text` if `text` starts with it at `at` as a line of its own (after spaces, and
    spacing aside: a heading is stored on one line), as a plain text or Markdown writes it ("## max_berths", its
    closing hashes or its underline with it); None where it does not (a sentence that opens with the heading's
    words: "gssencmode is ignored ..." under the heading "gssencmode")."""
    words = heading.split()
    if not words:
        return None
    line = r"\s*(?:#{1,6}[^\S\n]+)?" + r"\s+".join(map(re.escape, words)) + r"(?:[^\S\n]+#+)?"
    match = re.compile(line + _LINE_END).match(text, at)
    return match.end() if match else None


# A sentence that says what holds when nothing is set ("The default value is 5 seconds.", "By default, ...").
_DEFAULT = re.compile(r"\bdefault(?:s|ed)?\b", re.IGNORECASE)


def _states_default(sentence: str) -> bool:
    """Whether `sentence` says "default" (or "defaults", "defaulted"), case aside."""
    return _DEFAULT.search(sentence) is not None


def _best_sentences(
    passage: Any,
    weights: dict[str, float],
    count: int,
    analyzer: Any,
    after: int = 0,
    keep: Callable[[str], bool] | None = None,
) -> str:
    """The first sentence of the passage and the count - 1 others whose terms weigh most in `weights` (the
    passage's own title terms aside: every sentence of a document is about its title), each of those with the
    `after` sentences that follow it, and every sentence `keep` accepts, in text order."""
    from offline_agent.retrieval import split_sentences

    text = _opening(passage, passage.text)
    sentences = [" ".join(text[start:end].split()) for start, end in split_sentences(text)]
    if len(sentences) <= count:
        return " ".join(_clip(sentence, PASSAGE_CHARS // 2) for sentence in sentences)
    own = set(analyzer.tokens(passage.title or ""))
    wanted = {term: weight for term, weight in weights.items() if term not in own}
    # fsum: a float sum over a set depends on the set's order, which changes with Python's hash seed from run to
    # run; two sentences of equal weight then swapped places, and the same question read different Observations.
    scores = [fsum(wanted.get(term, 0.0) for term in set(analyzer.tokens(sentence))) for sentence in sentences]
    rest = sorted(range(1, len(sentences)), key=lambda i: (-scores[i], i))[: count - 1]
    rest += [i + step for i in rest for step in range(1, after + 1) if i + step < len(sentences)]
    rest += [i for i, sentence in enumerate(sentences) if keep is not None and keep(sentence)]
    chosen = sorted({0, *rest})
    out = []
    for position, index in enumerate(chosen):
        if position and index != chosen[position - 1] + 1:
            out.append("...")
        out.append(_clip(sentences[index], PASSAGE_CHARS // 2))
    return " ".join(out)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit] + " ..."
