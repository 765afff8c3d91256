"""Reading JSON that users and damaged files hand us: every way of failing becomes one JSONReadError.

`json.loads` fails in three ways, and only one of them is a JSONDecodeError: a value nested deeper than
Python's recursion limit (`'[' * 100000`) raises RecursionError, and an integer longer than Python's
int-to-string limit (4,300 digits by default) raises a plain ValueError. Readers that caught only the first
crashed with a traceback on the other two. `loads` turns all three into `JSONReadError` (a ValueError) whose
message is one short line, and `loads_members` reads a top-level array or object member by member, so that
one member that cannot be read (too deep, a number too long) is an error in its place and the others are kept:
what a corpus file needs to skip one bad record instead of the whole file.

A lone surrogate in a string (`"\\ud800"`, which json returns as it is and nothing can write back out) becomes
U+FFFD, counted, as incoming.py does for all text that comes in.

Callers add the file name (and map the error to their own: RetrievalError, DatasetError, a skipped record).

Writing: `dumps` is json.dumps with the text kept readable (ensure_ascii=False) but DEL, the C1 controls (U+009B is
an 8-bit CSI to a terminal), U+2028/U+2029 and the bidirectional controls written `\\uXXXX`: JSON escapes only C0
itself, and `--json` output printed on a terminal must not drive it. It decodes to the exact text.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

from offline_agent import incoming

_WHITESPACE = re.compile(r"[ \t\n\r]*")
# Strings (with escapes) and the characters that open, close or separate members: enough to find where a
# value that could not be parsed ends, without recursion.
_STRUCTURE = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{},]', re.DOTALL)
_DECODER = json.JSONDecoder()
_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")  # terminal.BIDI's, in JSON too


class JSONReadError(ValueError):
    """JSON that cannot be read. `kind` is "syntax" (not JSON at all), "depth" (nested too deeply) or "number"
    (an integer past Python's int-to-string limit); `reason` is the message without the position; `line` and
    `column` are 1-based where known."""

    def __init__(
        self,
        message: str,
        *,
        kind: str = "syntax",
        reason: str = "",
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.reason = reason or message
        self.line = line
        self.column = column


def loads(text: str | bytes) -> Any:
    """`json.loads`, raising only JSONReadError (with a one-line reason) on bad input; a lone surrogate in a
    string becomes U+FFFD (incoming.py's policy)."""
    try:
        value = json.loads(text)
    except Exception as exc:
        converted = _converted(exc)
        if converted is None:
            raise
        raise converted from None
    return incoming.clean_json(value) if incoming.needs_json_cleaning(text) else value


def dumps(value: Any, **options: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, **options)` with DEL, C1, line and paragraph separators and the
    bidirectional controls escaped as `\\uXXXX` (they can only stand inside strings, where the escape means them)."""
    text = json.dumps(value, ensure_ascii=False, **options)
    return _UNSAFE.sub(_unicode_escape, text) if _UNSAFE.search(text) else text


def fields_dict(value: Any, *, skip_none: bool = False) -> dict[str, Any]:
    """The JSON form of a dataclass of plain values: its fields by name, in their order, a tuple as a list (what
    JSON reads back); `skip_none` leaves out the fields that are None."""
    pairs = ((f.name, getattr(value, f.name)) for f in fields(value))
    return {name: list(v) if isinstance(v, tuple) else v for name, v in pairs if not (skip_none and v is None)}


def _unicode_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def read_file(path: str | Path) -> Any:
    """The JSON value in the UTF-8 file at `path`; JSONReadError on bad content (OSError propagates)."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise JSONReadError(f"not UTF-8 text (byte {exc.start})") from None
    return loads(text)


def loads_members(text: str) -> tuple[str, list[tuple[int | str, Any]]]:
    """The members of a top-level array ("array", [(index, value)]) or object ("object", [(key, value)]).

    Each member is parsed alone: one that is nested too deeply or holds a number too long gets a JSONReadError
    as its value and the others are kept. Raises JSONReadError when the text is not valid JSON or its top level
    is neither an array nor an object.
    """
    pos = _skip_space(text, 0)
    if pos >= len(text) or text[pos] not in "[{":
        raise JSONReadError("expected a JSON array or object")
    is_object = text[pos] == "{"
    closer = "}" if is_object else "]"
    members: list[tuple[int | str, Any]] = []
    pos = _skip_space(text, pos + 1)
    if text.startswith(closer, pos):
        pos += 1
    else:
        for index in _count():
            key: int | str = index
            if is_object:
                key, pos = _decode(text, pos)
                if not isinstance(key, str):
                    raise _syntax(text, pos, "expected a member name")
                pos = _skip_space(text, pos)
                if not text.startswith(":", pos):
                    raise _syntax(text, pos, "expected ':'")
                pos = _skip_space(text, pos + 1)
            try:
                value, pos = _decode(text, pos)
            except JSONReadError as exc:
                if exc.kind == "syntax":
                    raise
                value, pos = exc, _value_end(text, pos)
            members.append((key, value))
            pos = _skip_space(text, pos)
            if text.startswith(",", pos):
                pos = _skip_space(text, pos + 1)
                continue
            if text.startswith(closer, pos):
                pos += 1
                break
            raise _syntax(text, pos, f"expected ',' or '{closer}'")
    if _skip_space(text, pos) != len(text):
        raise _syntax(text, pos, "extra data after the value")
    return ("object" if is_object else "array"), members


def _count() -> Iterator[int]:
    index = 0
    while True:
        yield index
        index += 1


def _decode(text: str, pos: int) -> tuple[Any, int]:
    try:
        value, end = _DECODER.raw_decode(text, pos)
    except Exception as exc:
        converted = _converted(exc, text, pos)
        if converted is None:
            raise
        raise converted from None
    if incoming.needs_json_cleaning(text[pos:end]):
        value = incoming.clean_json(value)
    return value, end


def _converted(exc: BaseException, text: str | bytes = "", pos: int = 0) -> JSONReadError | None:
    """The JSONReadError for an exception json raised, or None for one that is not about the input."""
    if isinstance(exc, json.JSONDecodeError):
        return JSONReadError(
            f"invalid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})",
            kind="syntax",
            reason=exc.msg,
            line=exc.lineno,
            column=exc.colno,
        )
    line = _line_of(text, pos) if text else None
    if isinstance(exc, RecursionError):
        return JSONReadError("JSON nested too deeply to read", kind="depth", line=line)
    if isinstance(exc, ValueError) and "integer string conversion" in str(exc):
        limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 4300
        return JSONReadError(f"a JSON number longer than {limit} digits", kind="number", line=line)
    if isinstance(exc, ValueError):
        return JSONReadError(f"invalid JSON ({exc})", kind="syntax", line=line)
    return None


def _line_of(text: str | bytes, pos: int) -> int:
    newline = "\n" if isinstance(text, str) else b"\n"
    return text.count(newline, 0, pos) + 1  # type: ignore[arg-type]


def _syntax(text: str, pos: int, why: str) -> JSONReadError:
    line = _line_of(text, pos)
    column = pos - text.rfind("\n", 0, pos)
    return JSONReadError(
        f"invalid JSON (line {line}, column {column}: {why})", kind="syntax", reason=why, line=line, column=column
    )


def _skip_space(text: str, pos: int) -> int:
    match = _WHITESPACE.match(text, pos)
    return match.end() if match else pos


def _value_end(text: str, pos: int) -> int:
    """Where the value starting at `pos` ends: its matching bracket, or the next ',' ']' '}' at its level."""
    depth = 0
    for match in _STRUCTURE.finditer(text, pos):
        char = match.group()
        if char in "[{":
            depth += 1
        elif char in "]}":
            if depth == 0:
                return match.start()
            depth -= 1
            if depth == 0:
                return match.end()
        elif char == "," and depth == 0:
            return match.start()
    return len(text)
