"""PDF: the text pypdf extracts, page by page (the `pdf` extra); each page's start is kept for positions."""

from __future__ import annotations

import io
from pathlib import Path

from offline_agent.retrieval.readers.base import Document, Fields, PackageReader, SkipFile

PAGE_BREAK = "\n\n"


class PDFReader(PackageReader, format="pdf", package="pypdf"):
    """`.pdf` through pypdf; an encrypted or damaged file is skipped with its reason."""

    def read(self, path: Path, data: bytes, doc_id: str, fields: Fields) -> tuple[list[Document], list[str]]:
        pypdf = self.library("pypdf")
        with self.reading():
            reader = pypdf.PdfReader(io.BytesIO(data))
            if reader.is_encrypted:
                raise SkipFile("encrypted PDF")
            pages = [page.extract_text() or "" for page in reader.pages]
            meta_title = (reader.metadata.title if reader.metadata else None) or ""
        starts, offset = [], 0
        for page in pages:
            starts.append(offset)
            offset += len(page) + len(PAGE_BREAK)
        text = PAGE_BREAK.join(pages)
        return [Document(doc_id, str(meta_title).strip() or path.stem, text, pages=tuple(starts))], []
