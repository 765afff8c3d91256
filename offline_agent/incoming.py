"""Text that enters from outside: one policy for what is not valid Unicode, applied where it comes in.

Python hands us text that cannot be written back out as UTF-8 in three ways: command-line arguments and file
names hold bytes that are not UTF-8 as lone surrogates (U+DC80..U+DCFF, PEP 383), and JSON text may spell a lone
surrogate (`"\\ud800"`), which `json.loads` returns as it is. Either crashes later, far from where it came in
(hashing a prompt, saving an index, printing JSON). The policy, here and only here:

- text (a question, a chat line, a query, a scope, a JSON value, an MCP message): every lone surrogate becomes
  U+FFFD, the replacement character; `clean`, `decode` and `clean_json`;
- a file name: its undecodable bytes are written `\\xNN` (as `ls -b` shows them), so that two names that differ
  only there stay two documents and `index --update` finds each again; `file_name`.

Files a user names (a dataset, a scope file, an action graph, step files) are read only when they are regular files
(`not_a_file`): reading a FIFO waits for a writer that may never come.

Each replacement is counted by where it happened, and the CLI prints the counts once, at the end of the command
(`report`): "note: 2 invalid characters replaced in the question". Valid text passes through unchanged and
uncounted; checking it costs one regex search.
"""

from __future__ import annotations

import os
import re
import stat
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import PurePath
from typing import Any

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")
# A JSON escape of a surrogate: only text holding one can decode to a lone surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")

_tally: Counter[str] = Counter()
_odd_names: set[str] = set()  # file names with bytes that are not UTF-8 (counted once each)
_lock = threading.Lock()


def _count(where: str, n: int) -> None:
    if n:
        with _lock:
            _tally[where] += n


def clean(text: str, where: str) -> str:
    """`text` with every lone surrogate (an undecodable byte, or a half of a pair) replaced by U+FFFD."""
    if not _SURROGATE.search(text):
        return text
    cleaned, n = _SURROGATE.subn(REPLACEMENT, text)
    _count(where, n)
    return cleaned


def decode(data: bytes, where: str) -> str:
    """`data` as UTF-8 text, each byte that is not UTF-8 replaced by U+FFFD (and counted)."""
    return clean(data.decode("utf-8", errors="surrogateescape"), where)


def file_name(path: str | PurePath, *, note: bool = True) -> str:
    """A path as text that can be stored and printed: bytes that are not UTF-8 written as `\\xNN`. `note`
    False: not counted (a name derived from a file counted already: its document id, its title)."""
    text = str(path)
    if not _SURROGATE.search(text):
        return text
    if note:
        with _lock:
            _odd_names.add(text)
    return text.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="backslashreplace")


def not_a_file(path: str | PurePath) -> str | None:
    """What `path` is when it exists but is not a regular file ("a FIFO (named pipe)", "a device", "a socket",
    "a folder"), else None (a regular file, or nothing there: the reader says "not found" itself). Reading a FIFO
    or a terminal device waits for a writer that may never come: files a user names are checked first."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device"


def needs_json_cleaning(text: str | bytes) -> bool:
    """Whether JSON `text` may decode to a lone surrogate (it spells a surrogate escape); cheap."""
    if isinstance(text, bytes):
        return _SURROGATE_ESCAPE.search(text.decode("latin-1")) is not None
    return _SURROGATE_ESCAPE.search(text) is not None


def clean_json(value: Any, where: str = "JSON text") -> Any:
    """A decoded JSON value with lone surrogates in its strings and keys replaced, in place (without recursion: a
    value may be nested as deeply as json itself allows)."""
    if isinstance(value, str):
        return clean(value, where)
    stack = [value] if isinstance(value, (list, dict)) else []
    while stack:
        node = stack.pop()
        if isinstance(node, dict) and any(_SURROGATE.search(key) for key in node):
            rebuilt = [(clean(key, where), item) for key, item in node.items()]
            node.clear()
            node.update(rebuilt)
        for key, item in list(enumerate(node) if isinstance(node, list) else node.items()):
            if isinstance(item, str):
                node[key] = clean(item, where)
            elif isinstance(item, (list, dict)):
                stack.append(item)
    return value


def replaced() -> dict[str, int]:
    """The replacements counted so far, by where they happened ("file names": names with bytes not UTF-8)."""
    with _lock:
        return {**_tally, **({"file names": len(_odd_names)} if _odd_names else {})}


def report(write: Callable[[str], None]) -> None:
    """Write one note per place where text was replaced since the last report, then forget the counts."""
    with _lock:
        counts = dict(_tally)
        names = len(_odd_names)
        _tally.clear()
        _odd_names.clear()
    for where, n in counts.items():
        write(f"note: {n} invalid character{'s' if n != 1 else ''} replaced with U+FFFD in {where}")
    if names:
        write(f"note: {names} file name{'s' if names != 1 else ''} not valid UTF-8: shown with \\xNN for those bytes")


__all__ = [
    "REPLACEMENT",
    "clean",
    "clean_json",
    "decode",
    "file_name",
    "needs_json_cleaning",
    "not_a_file",
    "replaced",
    "report",
]
