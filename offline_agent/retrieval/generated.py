"""Generated files a folder of documents carries beside its pages (search indexes, minified scripts and styles,
source maps), skipped by a folder walk with the reason, unless an --include pattern names them.

A documentation site ships its search engine's data: Sphinx's `searchindex.js` (3.5 MB on one line for the Python
manual), MkDocs' `search_index.json`, Javadoc's `member-search-index.js`. Read as text, such a file holds every
word of the site, so it matches any query and ranks beside the pages it indexes. A minified script or style
sheet is one long line of code that no one searches. Both are recognised without guessing at the language:
- by name, before the file is read: a name whose words, less "-" and "_", hold `searchindex` (a `.js` or
  `.json` file), `.min.js`, `.min.mjs` and `.min.css`, and source maps (`.js.map`, `.css.map`; no reader reads
  `.map` files, so an --include does not bring these back);
- by content, once read: a JavaScript or CSS file (`SCRIPT_SUFFIXES`) of at least `MIN_CHARS` characters whose
  lines average more than `MEAN_LINE_CHARS` characters. Hand-written scripts and styles average 20 to 40 (the
  Python manual's longest hand-written line is 248 characters); a minified one is a line or a few.
A file whose own path (relative to the folder walked) matches an --include pattern is read whatever it is
(`--include searchindex.js`, `--include '*.min.js'`); a pattern that matches only a folder above it does not bring
it back, and neither does a file named on the command line need one.
"""

from __future__ import annotations

from collections.abc import Sequence

from offline_agent.retrieval.globs import GlobMatcher

SCRIPT_SUFFIXES = frozenset({".js", ".mjs", ".cjs", ".css"})
INDEX_SUFFIXES = frozenset({".js", ".json", ".mjs"})
MINIFIED_ENDINGS = (".min.js", ".min.mjs", ".min.css")
MAP_ENDINGS = (".js.map", ".css.map", ".mjs.map")
MIN_CHARS = 1000
MEAN_LINE_CHARS = 300
_HINT = "--include it to index it"


def may_be_generated(name: str) -> bool:
    """Whether a file called `name` is of a kind this module looks at (a script, a style sheet, JSON, a source map):
    the walk matches only those against the --include patterns again."""
    lower = name.lower()
    return lower.endswith(MAP_ENDINGS) or lower[lower.rfind(".") :] in SCRIPT_SUFFIXES | INDEX_SUFFIXES


def generated_by_name(name: str) -> str | None:
    """Why the file called `name` is a generated one ("generated file (search index; ...)"), or None."""
    lower = name.lower()
    stem, dot, suffix = lower.rpartition(".")
    if dot and f".{suffix}" in INDEX_SUFFIXES and "searchindex" in stem.replace("-", "").replace("_", ""):
        return f"generated file (search index; {_HINT})"
    if lower.endswith(MINIFIED_ENDINGS):
        return f"generated file (minified, by its name; {_HINT})"
    if lower.endswith(MAP_ENDINGS):
        return "generated file (source map)"
    return None


def generated_by_content(name: str, data: bytes) -> str | None:
    """Why the script or style sheet called `name`, whose bytes are `data`, is minified, or None."""
    dot = name.rfind(".")
    if dot < 0 or name[dot:].lower() not in SCRIPT_SUFFIXES or len(data) < MIN_CHARS:
        return None
    lines = data.count(b"\n") + (not data.endswith(b"\n"))
    if len(data) / lines <= MEAN_LINE_CHARS:
        return None
    kind = "CSS" if name.lower().endswith(".css") else "JavaScript"
    shape = "one line" if lines == 1 else f"{lines:,} lines"
    return f"generated file (minified {kind}: {shape} of {_size(len(data))}; {_HINT})"


def asked_for(relative: str, include: Sequence[str]) -> bool:
    """Whether one of the --include patterns matches the file at `relative` itself (not only a folder above it)."""
    return any(GlobMatcher(pattern).fullmatch(relative) for pattern in include)


def _size(n: int) -> str:
    if n < 1 << 20:
        return f"{n / 1024:.0f} KB"
    return f"{n / (1 << 20):.1f} MB"
