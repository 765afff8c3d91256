"""Text a corpus's pages all repeat in their titles (a site's name and version), found from the corpus itself.

A documentation site titles every page "<the page> — Python 3.11.2 documentation": indexed as it is, every search
hit repeats the site's name, and a question about versions gets it as its answer. No list of sites is kept: the
affix is found by comparing the titles of the HTML pages of the folders indexed, before they are read. The rule:

- a title's affixes are what lies beyond one of its separators (a dash, "|", "·", "»" or ":" with spaces
  around it): " — Python 3.11.2 documentation" is a suffix of "re — Regular expressions — Python 3.11.2
  documentation", and so is " — Regular expressions — Python 3.11.2 documentation"; "Docs | " is a prefix;
  an affix is at most `MAX_AFFIX_CHARS` characters long;
- an affix is boilerplate when at least `MIN_PAGES` pages carry it, and they are more than half of the pages in
  the folder that holds them all (the deepest folder above every one of them): a site's name, on every page of
  the site, is; "Index — ", on 30 of the Python manual's 531 pages, is not, nor is a word that a few pages of a
  large folder share by chance. A corpus of fewer than `MIN_PAGES` pages is never changed;
- a page's title loses the longest boilerplate suffix it ends with, then the longest prefix it starts with,
  unless nothing with a letter or a digit would be left (a page titled only with the site's name keeps it).

Only HTML pages (`PAGE_SUFFIXES`) are looked at: their `<title>` is where a site puts its name; the title of a
text file or a record is the author's, and is left alone. A page's title is taken, for this, from its first
`HEAD_BYTES` bytes; the reader's own title is what is stripped, so that a page whose title the reader made
otherwise (its first heading, its file name) loses an affix only where it has one. The affixes found are kept in
the index's record (`index info` shows them), and `--update` looks again over all the pages: where what it finds
differs, every page is read again, so that an updated index titles its pages as a fresh build would. Each page's
`<title>` is kept in its record of the index (`page_title`), so that an update opens only the pages that changed.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

MIN_PAGES = 5
MAX_AFFIX_CHARS = 120  # a site's name is short; a long title of many dashes must not give a copy per dash
HEAD_BYTES = 32768
PAGE_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
_SEPARATOR = re.compile(r"\s+[—–|·»:-]+\s+")
_TITLE = re.compile(rb"<title\b[^>]*>(.*?)</title\s*>", re.S | re.I)
_WORD = re.compile(r"\w")


@dataclass(frozen=True)
class TitleBoilerplate:
    """The title affixes a corpus's pages repeat: each suffix and prefix with the number of pages that carry it."""

    suffixes: tuple[tuple[str, int], ...] = ()
    prefixes: tuple[tuple[str, int], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.suffixes or self.prefixes)

    def strip_title(self, title: str) -> str:
        """`title` less the longest boilerplate suffix it ends with, then the longest prefix it starts with, where
        something with a letter or digit is left."""
        for suffix, _ in sorted(self.suffixes, key=lambda a: -len(a[0])):
            if title.endswith(suffix) and _WORD.search(title[: -len(suffix)]):
                title = title[: -len(suffix)]
                break
        for prefix, _ in sorted(self.prefixes, key=lambda a: -len(a[0])):
            if title.startswith(prefix) and _WORD.search(title[len(prefix) :]):
                title = title[len(prefix) :]
                break
        return title

    def affixes(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The suffixes and the prefixes, without their counts (what titles depend on)."""
        return tuple(t for t, _ in self.suffixes), tuple(t for t, _ in self.prefixes)

    def to_dict(self) -> dict[str, Any]:
        """What the index records (`index info` shows it)."""
        return {
            "title_suffixes": [{"text": t, "pages": n} for t, n in self.suffixes],
            "title_prefixes": [{"text": t, "pages": n} for t, n in self.prefixes],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> TitleBoilerplate:
        """The boilerplate an index recorded (none for an index written before it was looked for)."""
        data = data or {}

        def affixes(key: str) -> tuple[tuple[str, int], ...]:
            return tuple((str(a["text"]), int(a["pages"])) for a in data.get(key) or ())

        return cls(affixes("title_suffixes"), affixes("title_prefixes"))


def is_page(path: str | Path) -> bool:
    """Whether the file at `path` is an HTML page, whose title may carry a site's boilerplate."""
    return PurePosixPath(str(path)).suffix.lower() in PAGE_SUFFIXES


def head_title(path: Path) -> str:
    """The `<title>` of the HTML page at `path`, read from its first HEAD_BYTES bytes (spaces collapsed, entities
    decoded); "" where it has none there or cannot be read."""
    try:
        with open(path, "rb") as page:
            head = page.read(HEAD_BYTES)
    except OSError:
        return ""
    found = _TITLE.search(head)  # in the bytes: decoding only the title costs nothing on a large corpus's update
    return " ".join(html.unescape(found.group(1).decode("utf-8", "replace")).split()) if found else ""


def detect_titles(
    entries: Iterable[Any], known: Mapping[str, Mapping[str, Any]] | None = None
) -> tuple[TitleBoilerplate, dict[str, str]]:
    """The title boilerplate of the HTML pages among the files a folder walk found (`ingest.FileEntry`s), and each
    page's `<title>` by its source. `known` holds an index's records of its files: a page whose size and
    modification time are those recorded is not opened again, its recorded `page_title` is used."""
    titles: dict[str, str] = {}
    by_doc: dict[str, str] = {}
    for e in entries:
        if not is_page(e.path):
            continue
        record = (known or {}).get(e.source) or {}
        same = "page_title" in record and (record.get("size"), record.get("mtime_ns")) == (e.size, e.mtime_ns)
        titles[e.source] = by_doc[e.doc_id] = str(record["page_title"]) if same else head_title(e.path)
    return find_affixes(by_doc), titles


def find_affixes(titles: Mapping[str, str]) -> TitleBoilerplate:
    """The boilerplate affixes of pages' titles (document id, a path with "/", -> title), by the module's rule."""
    suffixes: dict[str, list[str]] = {}
    prefixes: dict[str, list[str]] = {}
    for doc_id, title in titles.items():
        for separator in _SEPARATOR.finditer(title):
            if len(title) - separator.start() <= MAX_AFFIX_CHARS:
                suffixes.setdefault(title[separator.start() :], []).append(doc_id)
            if separator.end() <= MAX_AFFIX_CHARS:
                prefixes.setdefault(title[: separator.end()], []).append(doc_id)
    if not suffixes and not prefixes:
        return TitleBoilerplate()
    folders = folder_counts(titles)

    def kept(candidates: dict[str, list[str]]) -> tuple[tuple[str, int], ...]:
        out = []
        for affix, pages in candidates.items():
            pages = sorted(set(pages))
            if repeated_enough(pages, folders):
                out.append((affix, len(pages)))
        return tuple(sorted(out, key=lambda a: (-a[1], a[0])))

    return TitleBoilerplate(kept(suffixes), kept(prefixes))


def folder_counts(doc_ids: Iterable[str]) -> Counter[str]:
    """The number of pages in each folder, at any depth below it, of the pages `doc_ids` (paths with "/")."""
    return Counter(folder for doc_id in doc_ids for folder in _folders(doc_id))


def repeated_enough(pages: list[str], folders: Mapping[str, int]) -> bool:
    """Whether text that the pages `pages` (distinct document ids) all carry is boilerplate by the module's rule: at
    least MIN_PAGES of them, more than half of the pages (`folders`, from `folder_counts`) of the deepest folder
    above them all."""
    return len(pages) >= MIN_PAGES and 2 * len(pages) > folders[_common_folder(pages)]


def _folders(doc_id: str) -> list[str]:
    """The folders above a document, "" (the top) first: "a/b/c.html" -> ["", "a", "a/b"]."""
    parts = doc_id.split("/")[:-1]
    return ["/".join(parts[:n]) for n in range(len(parts) + 1)]


def _common_folder(doc_ids: list[str]) -> str:
    """The deepest folder above every one of `doc_ids`."""
    common = _folders(doc_ids[0])
    for doc_id in doc_ids[1:]:
        mine = set(_folders(doc_id))
        common = [f for f in common if f in mine]
    return common[-1]
