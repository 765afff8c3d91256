"""The zip container of DOCX, ODT and EPUB files, opened with every way it can fail turned into a skip reason.

Checked before a format's own library sees the bytes, so that its many exceptions never reach the user: not a
zip at all (an old binary Word file, an encrypted Office file, which is an OLE2 container, or any other file
under a wrong suffix), a truncated or damaged zip, a missing entry the format requires, and a zip bomb: entries
that inflate past the `inflated-bytes` bound in all, a markup entry (the XML and XHTML the readers parse) past the
`part-bytes` bound, or an entry that inflates past the size the zip's directory declares for it.

Every entry is inflated here once, in pieces of 64 KB that are counted and dropped, stopping where it passes its
bound: a declared size is never trusted (zipfile inflates a whole entry at once before it cuts it to the declared
size, which took a 1.6 MB DOCX to 2.1 GB). What the format's library inflates after this check is then bounded too.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

from offline_agent.retrieval.readers.base import SkipFile
from offline_agent.retrieval.readers.limits import DEFAULT_LIMITS, ReadLimits, past, size_text

_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # a zip entry's local header: its name and extra field lengths last
_PIECE = 1 << 16
_MARKUP = (".xml", ".rels", ".xhtml", ".xht", ".html", ".htm", ".opf", ".ncx")
_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ENCRYPTED_PACKAGE = "EncryptedPackage".encode("utf-16-le")


def ole2_reason(data: bytes, what: str) -> str | None:
    """Why an OLE2 compound file under a zip format's suffix cannot be read, or None when `data` is not one:
    Office keeps a password-protected DOCX in an OLE2 container (an `EncryptedPackage` stream); any other OLE2
    file is the older binary format (.doc) under the new suffix."""
    if not data.startswith(_OLE2):
        return None
    if _ENCRYPTED_PACKAGE in data:
        return f"password-protected {what} (encrypted; save it without a password to index it)"
    return f"an old binary Office file, not {_a(what)} (save it as {what} to index it)"


def _a(what: str) -> str:
    """'a DOCX', 'an ODT', 'an EPUB': the article as the letters are spoken."""
    return f"{'an' if what[:1] in 'AEFHILMNORSX' else 'a'} {what}"


def open_zip(
    data: bytes, what: str, *, required: tuple[str, ...] = (), limits: ReadLimits = DEFAULT_LIMITS
) -> zipfile.ZipFile:
    """The zip archive in `data`, its entries checked against `limits`, or SkipFile with the reason; `what` names
    the format ("DOCX") in reasons, `required` lists entries it must hold."""
    reason = ole2_reason(data, what)
    if reason:
        raise SkipFile(reason)
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except Exception as exc:  # BadZipFile, and struct, OS and value errors on a mangled directory
        if data.startswith(b"PK\x03\x04"):
            raise SkipFile(f"damaged or truncated {what} (its zip archive cannot be opened: {exc})") from None
        raise SkipFile(f"not {_a(what)} ({_a(what)} file is a zip archive, and this is not one)") from None
    names = {info.filename for info in infos}
    missing = [name for name in required if name not in names]
    if missing:
        raise SkipFile(f"not {_a(what)} (no {missing[0]} in its zip archive)")
    expanded = sum(info.file_size for info in infos)
    if expanded > limits.inflated_bytes:
        raise SkipFile(f"{what} expands to {size_text(expanded)}, past {past('inflated_bytes', limits)}")
    _check_inflation(data, infos, what, limits)
    return archive


def _check_inflation(data: bytes, infos: list[zipfile.ZipInfo], what: str, limits: ReadLimits) -> None:
    """SkipFile unless every entry inflates to no more than it declares and its bound, the whole to no more than
    the inflated-bytes bound (see the module's docstring)."""
    total = 0
    for info in infos:
        if info.is_dir():
            continue
        markup = info.filename.lower().endswith(_MARKUP)
        bound, name = (limits.part_bytes, "part_bytes") if markup else (limits.inflated_bytes, "inflated_bytes")
        bound = min(bound, limits.inflated_bytes - total)
        bound_name = name if bound == getattr(limits, name) else "inflated_bytes"
        if info.file_size > bound:
            raise SkipFile(f"{what} entry {info.filename} inflates past {past(bound_name, limits)}")
        try:
            size = _inflated_size(data, info, min(info.file_size, bound))
        except (zlib.error, struct.error, ValueError) as exc:
            raise SkipFile(f"unreadable {what} ({type(exc).__name__}: {exc})") from None
        if size > info.file_size:
            raise SkipFile(f"{what} entry {info.filename} inflates past the size its zip declares (a zip bomb)")
        if size > bound:
            raise SkipFile(f"{what} entry {info.filename} inflates past {past(bound_name, limits)}")
        total += size


def _inflated_size(data: bytes, info: zipfile.ZipInfo, stop: int) -> int:
    """The bytes the entry inflates to, counted while inflating; counting stops once it passes `stop`."""
    if info.flag_bits & 1:
        raise ValueError("encrypted entry")
    header = _LOCAL_HEADER.unpack_from(data, info.header_offset)
    if header[0] != b"PK\x03\x04":
        raise ValueError(f"bad local header for {info.filename}")
    start = info.header_offset + _LOCAL_HEADER.size + header[10] + header[11]
    raw = memoryview(data)[start : start + info.compress_size]
    if info.compress_type == zipfile.ZIP_STORED:
        return len(raw)
    if info.compress_type != zipfile.ZIP_DEFLATED:
        raise ValueError(f"{info.filename} uses compression method {info.compress_type}, not stored or deflated")
    inflater = zlib.decompressobj(-15)
    size = 0
    for at in range(0, len(raw), _PIECE):
        pending = raw[at : at + _PIECE]
        while pending and size <= stop:
            size += len(inflater.decompress(pending, _PIECE))
            pending = inflater.unconsumed_tail
        if size > stop or inflater.eof:
            break
    return size


def read_member(archive: zipfile.ZipFile, name: str, what: str) -> bytes:
    """The bytes of one entry, or SkipFile when it is damaged (a bad CRC, a broken deflate stream)."""
    try:
        return archive.read(name)
    except KeyError:
        raise SkipFile(f"not {_a(what)} (no {name} in its zip archive)") from None
    except Exception as exc:  # a bad CRC, a broken deflate stream, a zip password, an unknown method or version
        raise SkipFile(f"damaged {what} ({name}: {exc})") from None
