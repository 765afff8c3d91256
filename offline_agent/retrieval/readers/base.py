"""What every reader returns and may raise: `Document`, its `Section`s, `Fields`, `SkipFile`, and text decoding.

A reader turns one file's bytes into documents. It never raises anything but `SkipFile` for a file it cannot
read (the message is the reason the user sees); problems inside a file that leave the rest readable (a broken
JSONL line, a row without text) are returned as notes.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, Protocol, runtime_checkable

from offline_agent.retrieval.readers.limits import DEFAULT_LIMITS, ReadLimits


class SkipFile(Exception):
    """A file that is skipped as a whole; the message is the reason."""


@dataclass(frozen=True)
class Fields:
    """What a reader is told besides the bytes: which record fields hold the text, the title and the id (None:
    try the usual names), and the bounds it reads under (limits.py)."""

    text: str | None = None
    title: str | None = None
    id: str | None = None
    limits: ReadLimits = DEFAULT_LIMITS


@dataclass(frozen=True)
class Section:
    """Where a section of a document begins (a character offset in `Document.text`) and its heading path, from
    the outermost heading in: ("Built-in Types", "int", "Integer string conversion length limitation")."""

    start: int
    path: tuple[str, ...]


@dataclass(frozen=True)
class Document:
    """One source document before chunking.

    `body_start` is where the text to index starts (after a title the reader took from the text). `sections` (in
    order of `start`) give the heading path of every part of the text; text before the first section has none.
    `pages` are the offsets where each page of a paged format (PDF) begins, in order: the page of an offset is the
    number of page starts at or before it. Without `pages`, a passage's place is its line in `text`, where
    `numbered_lines` (False for a record of a JSONL, JSON or CSV file, whose text is one field of a row).
    """

    doc_id: str
    title: str
    text: str
    body_start: int = 0
    sections: tuple[Section, ...] = ()
    pages: tuple[int, ...] = ()
    numbered_lines: bool = True


@runtime_checkable
class Reader(Protocol):
    """A reader of one family of file formats: its name, the file name suffixes it reads (lower case, with the
    dot), and `read`, which returns the file's documents and notes on what it skipped inside the file, or raises
    SkipFile. `extra` names the package extra it needs (None: nothing beyond the core install)."""

    name: str
    extensions: frozenset[str]
    extra: str | None

    def read(self, path: Path, data: bytes, doc_id: str, fields: Fields) -> tuple[list[Document], list[str]]: ...


def decode_text(data: bytes) -> str:
    """UTF-8 (or UTF-16 with a byte-order mark) text, else SkipFile with the reason."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            raise SkipFile("not valid UTF-16 despite its byte-order mark") from None
    if b"\x00" in data[:8192]:
        raise SkipFile("binary file (NUL bytes)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SkipFile(f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None


def missing_extra(what: str, package: str, extra: str) -> SkipFile:
    """The SkipFile of a format whose optional reader is not installed, with the command that installs it."""
    return SkipFile(f"{what} needs {package} (pip install 'offline-agent[{extra}]')")


def import_extra(module: str, what: str, package: str, extra: str) -> ModuleType:
    """`module` of the package an optional reader needs, imported; the `missing_extra` SkipFile of the format
    `what` when the package is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise missing_extra(what, package, extra) from None


class PackageReader:
    """A reader of one format through an optional package: `class PDFReader(PackageReader, format="pdf",
    package="pypdf")`. The format's name is the reader's name, its one suffix and the extra that installs the
    package; upper case (PDF), it names the format in the reasons a file is skipped."""

    name: ClassVar[str]
    extensions: ClassVar[frozenset[str]]
    extra: ClassVar[str]
    package: ClassVar[str]  # as pip names it, for the command that installs it

    def __init_subclass__(cls, *, format: str, package: str, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.name, cls.extensions, cls.extra, cls.package = format, frozenset({f".{format}"}), format, package

    def library(self, module: str) -> ModuleType:
        """`module` of the package, imported; the SkipFile that says how to install the package when it is not."""
        return import_extra(module, self.name.upper(), self.package, self.extra)

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """Any exception in the block but SkipFile becomes the SkipFile "unreadable FORMAT (its kind: message)":
        the packages raise many kinds on a damaged file."""
        try:
            yield
        except SkipFile:
            raise
        except Exception as exc:
            raise SkipFile(f"unreadable {self.name.upper()} ({type(exc).__name__}: {str(exc)[:80]})") from None
