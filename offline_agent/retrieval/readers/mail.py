"""E-mail: `.eml` (one message) and `.mbox` (many) through the standard library's `email` package.

One document per message, titled by its subject. The text opens with the sender and the date as a first line
("From: Ada <ada@example.org> | Date: Mon, 4 Mar 2024 10:15:00 +0100"), so that a search for a name or a
month finds the message and a hit shows who wrote it and when. The body is the text/plain part, else the HTML
part's visible text; attachments (forwarded messages too) are left out with a note.

An mbox is split at its "From " lines (the rule `mailbox.mbox` follows) on the bytes already read, one message
parsed at a time: a large mailbox is held in memory once, not copied. A message that cannot be parsed is a note
and the others are read; a file that is not an e-mail at all is skipped with the reason.

A message is read up to the `message-bytes` bound, with a note: the email package holds about 12 times a
message's size while it parses it (a 60 MB attachment took 757 MB, a 100 MB message 2 GB), and what lies past
the bound is, as a rule, the attachments, which are not indexed anyway.
"""

from __future__ import annotations

import email
import email.policy
import re
from collections.abc import Iterator
from email.message import EmailMessage
from itertools import pairwise
from pathlib import Path

from offline_agent.retrieval.readers.base import Document, Fields, SkipFile
from offline_agent.retrieval.readers.html import html_to_text
from offline_agent.retrieval.readers.limits import ReadLimits, past
from offline_agent.retrieval.readers.outline import one_line

_MBOX_SEPARATOR = re.compile(rb"^From ", re.MULTILINE)
_MBOX_START = re.compile(rb"[\r\n]*From ")
_NO_SUBJECT = "(no subject)"


class _Unreadable(Exception):
    """A message that cannot be read; the message is the reason."""


class MailReader:
    """`.eml` and `.mbox` with the standard library."""

    name = "mail"
    extensions = frozenset({".eml", ".mbox"})
    extra = None

    def read(self, path: Path, data: bytes, doc_id: str, fields: Fields) -> tuple[list[Document], list[str]]:
        if path.suffix.lower() == ".mbox":
            return _read_mbox(data, doc_id, fields.limits)
        try:
            document, notes = _read_message(memoryview(data), doc_id, fields.limits)
        except _Unreadable as exc:
            raise SkipFile(str(exc)) from None
        return [document], notes


def _read_message(raw: memoryview, doc_id: str, limits: ReadLimits) -> tuple[Document, list[str]]:
    """The document of the message in `raw` and notes on its attachments; _Unreadable saying why there is none."""
    if b"\x00" in bytes(raw[:8192]):
        raise _Unreadable("not an e-mail message (binary data)")
    cut_note = []
    if len(raw) > limits.message_bytes:  # at a line's end, so that a MIME boundary line is never cut in two
        end = bytes(raw[: limits.message_bytes]).rfind(b"\n") + 1
        raw = raw[: end or limits.message_bytes]
        cut_note = [f"read up to {past('message_bytes', limits)}; the rest of the message (its attachments) left out"]
    try:
        message = email.message_from_bytes(bytes(raw), policy=email.policy.default)
        if not message.keys():
            raise _Unreadable("not an e-mail message (no headers)")
        document, notes = _document(message, doc_id)  # type: ignore[arg-type]
        return document, cut_note + notes
    except _Unreadable:
        raise
    except Exception as exc:  # the parser is lenient, but a broken header or MIME structure can still raise
        raise _Unreadable(f"malformed e-mail message ({type(exc).__name__}: {str(exc)[:80]})") from None


def _header(message: EmailMessage, name: str) -> str:
    try:
        return one_line(str(message.get(name, "") or ""))
    except Exception:  # a header the policy cannot parse: keep its raw text
        return one_line(str(message.get_all(name, [""])[0]))


def _body(message: EmailMessage) -> str:
    """The text/plain part, else the visible text of the text/html part, else ''."""
    part = message.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    try:
        content = part.get_content()
    except (LookupError, UnicodeError, ValueError, AssertionError):  # an unknown charset, a broken encoding
        payload = part.get_payload(decode=True) or b""
        content = payload.decode("utf-8", errors="replace") if isinstance(payload, bytes) else str(payload)
    if not isinstance(content, str):
        return ""
    return html_to_text(content)[1] if part.get_content_subtype() == "html" else content.strip()


def _document(message: EmailMessage, doc_id: str) -> tuple[Document, list[str]]:
    subject = _header(message, "subject") or _NO_SUBJECT
    head = " | ".join(f"{label}: {value}" for label in ("From", "Date") if (value := _header(message, label)))
    text = f"{head}\n\n{_body(message)}".strip()
    notes = [
        f"attachment {part.get_filename() or part.get_content_type()!r} not indexed"
        for part in message.iter_attachments()
    ]
    return Document(doc_id, subject, text), notes


def _messages(data: bytes) -> Iterator[tuple[int, memoryview]]:
    """(number from 1, raw bytes without the "From " line, not copied) of each message of an mbox, one at a time."""
    starts = [m.start() for m in _MBOX_SEPARATOR.finditer(data)] + [len(data)]
    view = memoryview(data)
    for number, (start, end) in enumerate(pairwise(starts), 1):
        body_start = data.find(b"\n", start, end)
        yield number, view[body_start + 1 : end] if body_start != -1 else view[:0]


def _read_mbox(data: bytes, doc_id: str, limits: ReadLimits) -> tuple[list[Document], list[str]]:
    if not _MBOX_START.match(data):
        raise SkipFile("not an mbox file (it does not begin with a 'From ' line)")
    docs, notes = [], []
    for number, raw in _messages(data):
        try:
            document, attachment_notes = _read_message(raw, f"{doc_id}:{number}", limits)
        except _Unreadable as exc:  # one broken message must not lose the others
            notes.append(f"message {number}: {exc}")
            continue
        docs.append(document)
        notes.extend(f"message {number}: {note}" for note in attachment_notes)
    return docs, notes
