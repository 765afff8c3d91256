"""Every token's bytes of a llama.cpp model, as llguidance reads them, saved per model file for later processes.

Why: llguidance's tokenizer for a llama.cpp model is built from the bytes of every token, and llama.cpp gives them
one call per token (and one more for its attributes): 0.3-0.4 s for the default model's 151,936 tokens, spent by
every `ask` before its first token. Read back from a file it takes about 10 ms.

The table is one file per model file and llama.cpp version under `$OFFLINE_AGENT_HOME/cache/tokens`, written and
checked like the saved prefixes (prefix_cache.write_checked: atomic, a sha256 of the body; a damaged file, or a table
whose length is not the vocabulary's, is read from llama.cpp again and written anew). Special tokens (control
tokens, and user-defined ones written like `<...>`) start with the byte 0xff, llguidance's mark for a token no text
can produce.
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from offline_agent.backends import prefix_cache

_MAGIC = b"OATOK1\n"
_SPECIAL = b"\xff"


def cache_folder() -> Path:
    from offline_agent.models import home_dir

    return home_dir() / "cache" / "tokens"


def token_table(llama_cpp: Any, vocab: Any, identity: Sequence[object] | None) -> list[bytes]:
    """The bytes of every token of `vocab` (a llama.cpp vocabulary), from the saved table for `identity` (what the
    model file is) when there is one, else from llama.cpp, then saved. `identity` None: not saved."""
    if identity is None:
        return read_vocabulary(llama_cpp, vocab)
    key = prefix_cache.identity_hash(identity)
    path = cache_folder() / f"{key[:32]}.tokens"
    header = _MAGIC + key.encode() + b"\n"
    body = prefix_cache.read_checked(path, header)
    tokens = _unpack(body) if body is not None else None
    if tokens is None or len(tokens) != llama_cpp.llama_vocab_n_tokens(vocab):
        tokens = read_vocabulary(llama_cpp, vocab)
        prefix_cache.write_checked(path, header, _pack(tokens))
    return tokens


def read_vocabulary(llama_cpp: Any, vocab: Any) -> list[bytes]:
    """Ask llama.cpp for each token's bytes (its text with special tokens shown), special ones marked with 0xff."""
    size = 1024
    buffer = ctypes.create_string_buffer(size)
    control = llama_cpp.LLAMA_TOKEN_ATTR_CONTROL
    user_defined = llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED
    tokens: list[bytes] = []
    for token in range(llama_cpp.llama_vocab_n_tokens(vocab)):
        n = llama_cpp.llama_token_to_piece(vocab, token, buffer, size, 0, True)
        if n < 0:  # longer than the buffer: -n is the length it needs
            buffer = ctypes.create_string_buffer(-n)
            size = -n
            n = llama_cpp.llama_token_to_piece(vocab, token, buffer, size, 0, True)
        text = buffer.raw[:n]
        attributes = llama_cpp.llama_vocab_get_attr(vocab, token)
        looks_special = text.startswith(b"<") and text.endswith(b">")
        if attributes & control or (attributes & user_defined and looks_special):
            text = _SPECIAL + text
        tokens.append(text)
    return tokens


def _pack(tokens: list[bytes]) -> bytes:
    lengths = struct.pack(f"<I{len(tokens)}I", len(tokens), *map(len, tokens))
    return lengths + b"".join(tokens)


def _unpack(body: bytes) -> list[bytes] | None:
    """The tokens of a body `_pack` wrote, or None when its lengths do not add up (checked, so never expected)."""
    if len(body) < 4:
        return None
    (count,) = struct.unpack_from("<I", body)
    start = 4 + 4 * count
    if len(body) < start:
        return None
    lengths = struct.unpack_from(f"<{count}I", body, 4)
    if start + sum(lengths) != len(body):
        return None
    tokens = []
    for length in lengths:
        tokens.append(body[start : start + length])
        start += length
    return tokens
