"""Rich Text Format (.rtf) through striprtf (the `rtf` extra): the document's text, titled by its \\title.

striprtf was chosen after reading it on real files: it is small, pure Python, released regularly, and its test
suite holds documents saved by Word, LibreOffice, TextEdit, Pages and Google Docs in several code pages, which
it turns into the text those programs show. RTF has no reliable heading markup (a heading is a bold, larger
paragraph), so an RTF document has no sections. A file that does not begin with "{\\rtf" is skipped.
"""

from __future__ import annotations

import re
from pathlib import Path

from offline_agent.retrieval.readers.base import Document, Fields, PackageReader, SkipFile
from offline_agent.retrieval.readers.outline import one_line

_TITLE = re.compile(r"\{\\title\s?([^{}]*)\}")


class RTFReader(PackageReader, format="rtf", package="striprtf"):
    """`.rtf` through striprtf."""

    def read(self, path: Path, data: bytes, doc_id: str, fields: Fields) -> tuple[list[Document], list[str]]:
        rtf_to_text = self.library("striprtf.striprtf").rtf_to_text
        if not data[:64].lstrip().startswith(b"{\\rtf"):
            raise SkipFile("not an RTF file (it does not begin with {\\rtf)")
        # RTF is 7-bit text that escapes other characters; a file with raw bytes is most often UTF-8, else
        # the Windows code page striprtf assumes (a byte is then one character, so nothing can fail).
        try:
            source = data.decode("utf-8")
        except UnicodeDecodeError:
            source = data.decode("cp1252", errors="replace")
        with self.reading():  # striprtf on a damaged control word
            text = rtf_to_text(source, errors="ignore")
            found = _TITLE.search(source[:65536])
            title = one_line(rtf_to_text("{\\rtf1 " + found.group(1) + "}", errors="ignore")) if found else ""
        return [Document(doc_id, title or path.stem, text.strip())], []
