"""A list of strings kept as one UTF-8 blob plus offsets: the passage table's text columns and the vocabulary.

As flat arrays they are saved as .npy files and memory-mapped back, so a column of a million strings loads in
microseconds; a string becomes a Python object only when it is asked for.
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence

import numpy as np

_CHUNK = 1 << 16


def _surrogatepass_or_replace(error: UnicodeError) -> tuple[str, int]:
    """Decode as "surrogatepass" does (how lone surrogates in a text are stored), and turn bytes that are not
    UTF-8 at all, which only a damaged index file holds, into U+FFFD instead of an exception mid-search."""
    if not isinstance(error, UnicodeDecodeError):
        raise error
    try:
        return _SURROGATEPASS(error)
    except UnicodeDecodeError:
        return "\ufffd", error.start + 1


_SURROGATEPASS = codecs.lookup_error("surrogatepass")
# The error handler for decoding stored strings; the fast path (valid UTF-8) never calls it.
DECODE_ERRORS = "offline_agent.surrogatepass_or_replace"
codecs.register_error(DECODE_ERRORS, _surrogatepass_or_replace)


class StringColumn:
    """A read-only list of strings stored as one UTF-8 blob plus int64 offsets (n + 1 of them)."""

    __slots__ = ("_blob_view", "_offsets_view", "blob", "offsets")

    def __init__(self, blob: np.ndarray, offsets: np.ndarray) -> None:
        self.blob = blob
        self.offsets = offsets
        # memoryviews index in C with Python ints: much cheaper than numpy scalars for one string at a time.
        self._blob_view = memoryview(np.ascontiguousarray(blob, dtype=np.uint8))
        self._offsets_view = memoryview(np.ascontiguousarray(offsets, dtype=np.int64)).cast("B").cast("q")

    @classmethod
    def from_strings(cls, strings: Sequence[str]) -> StringColumn:
        """Encode `strings` chunk by chunk into one preallocated blob (no second full-size copy)."""
        n = len(strings)
        offsets = np.zeros(n + 1, dtype=np.int64)
        chunks: list[tuple[int, int, bool]] = []
        for lo in range(0, n, _CHUNK):
            hi = min(n, lo + _CHUNK)
            part = strings[lo:hi]
            ascii_only = "".join(part).isascii()  # then one character is one byte
            sizes = map(len, part) if ascii_only else (len(s.encode("utf-8", "surrogatepass")) for s in part)
            offsets[lo + 1 : hi + 1] = np.fromiter(sizes, dtype=np.int64, count=hi - lo)
            chunks.append((lo, hi, ascii_only))
        np.cumsum(offsets, out=offsets)
        blob = np.empty(int(offsets[-1]), dtype=np.uint8)
        for lo, hi, ascii_only in chunks:
            part = strings[lo:hi]
            data = (
                "".join(part).encode("ascii")
                if ascii_only
                else b"".join(s.encode("utf-8", "surrogatepass") for s in part)
            )
            blob[offsets[lo] : offsets[hi]] = np.frombuffer(data, dtype=np.uint8)
        return cls(blob, offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> str:
        offsets = self._offsets_view
        return str(self._blob_view[offsets[i] : offsets[i + 1]], "utf-8", DECODE_ERRORS)

    def tolist(self) -> list[str]:
        data = self.blob.tobytes()
        try:
            text = data.decode("utf-8")  # one decode of the whole blob, then string slices: ~10x decoding each
        except UnicodeDecodeError:  # stored surrogates or bad bytes: each string by itself, as __getitem__
            offs = self.offsets.tolist()
            return [data[offs[i] : offs[i + 1]].decode("utf-8", DECODE_ERRORS) for i in range(len(offs) - 1)]
        offsets = np.asarray(self.offsets)
        if len(text) != len(data):  # valid UTF-8: a character starts at every byte that is not a continuation
            chars = np.zeros(len(data) + 1, dtype=np.int64)
            np.cumsum((np.asarray(self.blob) & 0xC0) != 0x80, out=chars[1:])
            offsets = chars[offsets]
        offs = offsets.tolist()
        return [text[offs[i] : offs[i + 1]] for i in range(len(offs) - 1)]

    def take(self, rows: np.ndarray) -> StringColumn:
        """A new column holding rows `rows` in that order."""
        lo = self.offsets[rows]
        lengths = self.offsets[rows + 1] - lo
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        if len(rows) == 0 or offsets[-1] == 0:
            return StringColumn(np.zeros(0, np.uint8), offsets)
        # Gather byte ranges without a Python loop: position of each output byte in the source blob.
        starts = np.repeat(lo - offsets[:-1], lengths)
        idx = np.arange(offsets[-1], dtype=np.int64) + starts
        return StringColumn(np.asarray(self.blob)[idx], offsets)

    @staticmethod
    def concat(columns: Sequence[StringColumn]) -> StringColumn:
        blobs = [np.asarray(c.blob[int(c.offsets[0]) : int(c.offsets[-1])]) for c in columns]
        parts = [np.zeros(1, np.int64)]
        base = 0
        for c in columns:
            parts.append(np.asarray(c.offsets[1:]) - c.offsets[0] + base)
            base += int(c.offsets[-1] - c.offsets[0])
        blob = np.concatenate(blobs) if blobs else np.zeros(0, np.uint8)
        return StringColumn(blob, np.concatenate(parts))

    def find(self, value: str) -> int:
        """Binary search in a column sorted by UTF-8 bytes: the row of `value`, or -1."""
        key = value.encode("utf-8", "surrogatepass")
        offsets, blob = self._offsets_view, self._blob_view
        lo, hi = 0, len(offsets) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if blob[offsets[mid] : offsets[mid + 1]].tobytes() < key:
                lo = mid + 1
            else:
                hi = mid
        if lo < len(offsets) - 1 and blob[offsets[lo] : offsets[lo + 1]] == key:
            return lo
        return -1
