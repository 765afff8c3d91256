"""Saved llama.cpp caches of the prompt prefix every question shares, so a fresh process skips evaluating it.

Why: an agent's prompt starts with the same instructions and worked examples for every question (about 900 tokens
for react). In one process llama.cpp keeps them in its cache from question to question, but `ask` starts a new
process each time and evaluated them anew: about 18 s of a question's 26 on two cores. The key/value cache of
those tokens is about 28 KB a token for the default model; written once and read back it costs a few tens of
milliseconds.

A saved cache is one file per (model file, llama.cpp version, context settings, prefix tokens), named by the hash
of all of them, under `$OFFLINE_AGENT_HOME/cache/prefix`: a header (format, the hash of its tokens, the sha256 of
the state) and the state as llama.cpp wrote it. It is written to a temporary file and renamed, so a reader sees a
whole file or none; one whose header or checksum does not match, or that llama.cpp refuses, is deleted and the
prefix is evaluated as if there were none. The folder keeps the newest KEEP files.

`read_checked` and `write_checked` are that file handling for any body; the saved token tables use them too
(backends/token_table.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

KEEP = 16
MIN_TOKENS = 64  # a shorter prefix is cheaper to evaluate than to look up
_MAGIC = b"OAKV1\n"


def cache_folder() -> Path:
    from offline_agent.models import home_dir

    return home_dir() / "cache" / "prefix"


def state_key(identity: Sequence[object], tokens: Sequence[int]) -> str:
    """The file name of the saved cache of `tokens` for a model and context described by `identity`."""
    digest = _identity_digest(identity)
    digest.update(b",".join(str(t).encode() for t in tokens))
    return digest.hexdigest()[:32] + ".kv"


def identity_hash(identity: Sequence[object]) -> str:
    """The sha256 (hex) of what a saved file depends on, `identity`, as `state_key` starts it."""
    return _identity_digest(identity).hexdigest()


def _identity_digest(identity: Sequence[object]) -> Any:
    digest = hashlib.sha256()
    for part in identity:
        digest.update(repr(part).encode("utf-8") + b"\0")
    return digest


def read_state(path: Path, tokens: Sequence[int]) -> bytes | None:
    """The saved state for exactly `tokens`, or None (missing, damaged: a damaged file is removed)."""
    return read_checked(path, _MAGIC + _token_line(tokens))


def write_state(path: Path, tokens: Sequence[int], state: bytes) -> None:
    """Save `state` for `tokens` (write_checked)."""
    write_checked(path, _MAGIC + _token_line(tokens), state)


def read_checked(path: Path, header: bytes) -> bytes | None:
    """The body of a file `write_checked` wrote with `header`, or None: missing, another header, or a body whose
    checksum does not match (a damaged file is removed)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    body = data[len(header) + 65 :]
    checksum = data[len(header) : len(header) + 64]
    if not data.startswith(header) or hashlib.sha256(body).hexdigest().encode() != checksum:
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # recently used files are the last to be pruned
    return body


def write_checked(path: Path, header: bytes, body: bytes) -> None:
    """Write `header`, the sha256 of `body` and `body` atomically (a temporary file renamed), then prune the folder
    to the newest KEEP files of the same suffix; a full disk only skips the save."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(header + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
            os.replace(temporary, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
    except OSError:
        return  # the cache is an optimisation: without room for it the work is simply done again next time
    _prune(path.parent, path.suffix)


def _token_line(tokens: Sequence[int]) -> bytes:
    return hashlib.sha256(b",".join(str(t).encode() for t in tokens)).hexdigest().encode() + b"\n"


def _prune(folder: Path, suffix: str) -> None:
    try:
        files = sorted(folder.glob(f"*{suffix}"), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    for stale in files[KEEP:]:
        with contextlib.suppress(OSError):
            stale.unlink()
