"""PDF: the text pypdf extracts, page by page (the `pdf` extra); each page's start is kept for positions."""

from __future__ import annotations

import io
from pathlib import Path

from offline_agent.retrieval.readers.base import Document, Fields, SkipFile, import_extra

PAGE_BREAK = "\n\n"


class PDFReader:
    """`.pdf` through pypdf; an encrypted or damaged file is skipped with its reason."""

    name = "pdf"
    extensions = frozenset({".pdf"})
    extra = "pdf"

    def read(self, path: Path, data: bytes, doc_id: str, fields: Fields) -> tuple[list[Document], list[str]]:
        pypdf = import_extra("pypdf", "PDF", "pypdf", "pdf")
        try:
            reader = pypdf.PdfReader(io.BytesIO(data))
            if reader.is_encrypted:
                raise SkipFile("encrypted PDF")
            pages = [page.extract_text() or "" for page in reader.pages]
            meta_title = (reader.metadata.title if reader.metadata else None) or ""
        except SkipFile:
            raise
        except Exception as exc:  # pypdf raises many kinds on damaged files
            raise SkipFile(f"unreadable PDF ({type(exc).__name__}: {str(exc)[:80]})") from None
        starts, offset = [], 0
        for page in pages:
            starts.append(offset)
            offset += len(page) + len(PAGE_BREAK)
        text = PAGE_BREAK.join(pages)
        return [Document(doc_id, str(meta_title).strip() or path.stem, text, pages=tuple(starts))], []
