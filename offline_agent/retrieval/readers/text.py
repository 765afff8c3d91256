"""Plain text, Markdown and reStructuredText: the file's text as it is, titled by a leading heading."""

from __future__ import annotations

import re
from pathlib import Path

from offline_agent.retrieval.readers.base import Document, Fields, decode_text

_MD_HEADING = re.compile(r"[ \t]*#{1,6}[ \t]+(.+?)[ \t#]*$")
_RST_UNDERLINE = re.compile(r"""([=\-~^"'`*+#:.])\1{2,}[ \t]*$""")
MARKDOWN = (".md", ".markdown", ".txt", ".text", "")


def text_title(text: str, ext: str) -> tuple[str, int]:
    """A title from a leading Markdown heading or reStructuredText title, and where the body starts."""
    pos = len(text) - len(text.lstrip())
    lines = text[pos:].split("\n", 3)
    first = lines[0].rstrip("\r")
    m = _MD_HEADING.match(first)
    if m and ext in MARKDOWN:
        return m.group(1).strip(), pos + len(lines[0]) + (1 if len(lines) > 1 else 0)
    if ext == ".rst":
        # "Title\n=====" or an overlined "=====\nTitle\n=====".
        if len(lines) > 1 and first.strip() and _RST_UNDERLINE.match(lines[1].rstrip("\r")):
            return first.strip(), pos + len(lines[0]) + len(lines[1]) + 2
        if len(lines) > 2 and _RST_UNDERLINE.match(first) and _RST_UNDERLINE.match(lines[2].rstrip("\r")):
            return lines[1].strip(), pos + sum(len(x) + 1 for x in lines[:3])
    return "", 0


class TextReader:
    """`.txt`, `.md`, `.rst` and files with no suffix: UTF-8 (or UTF-16 with a byte-order mark) text."""

    name = "text"
    extensions = frozenset({".txt", ".text", ".md", ".markdown", ".rst", ""})
    extra = None

    def read(self, path: Path, data: bytes, doc_id: str, fields: Fields) -> tuple[list[Document], list[str]]:
        text = decode_text(data)
        title, body_start = text_title(text, path.suffix.lower())
        return [Document(doc_id, title or path.stem, text, body_start)], []
