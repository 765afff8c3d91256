"""The zip container of DOCX, ODT and EPUB files, opened with every way it can fail turned into a skip reason.

Checked before a format's own library sees the bytes, so that its many exceptions never reach the user: not a
zip at all (an old binary Word file, an encrypted Office file, which is an OLE2 container, or any other file
under a wrong suffix), a truncated or damaged zip, a zip whose entries would expand past `MAX_EXPANDED_BYTES`
(a zip bomb), and a missing entry the format requires.
"""

from __future__ import annotations

import io
import zipfile

from offline_agent.retrieval.readers.base import SkipFile

MAX_EXPANDED_BYTES = 1 << 30
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


def open_zip(data: bytes, what: str, *, required: tuple[str, ...] = ()) -> zipfile.ZipFile:
    """The zip archive in `data`, or SkipFile with the reason; `what` names the format ("DOCX") in reasons,
    `required` lists entries it must hold."""
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
    if expanded > MAX_EXPANDED_BYTES:
        raise SkipFile(f"{what} expands to {expanded / (1 << 30):.1f} GB (more than 1 GB: a zip bomb?)")
    return archive


def read_member(archive: zipfile.ZipFile, name: str, what: str) -> bytes:
    """The bytes of one entry, or SkipFile when it is damaged (a bad CRC, a broken deflate stream)."""
    try:
        return archive.read(name)
    except KeyError:
        raise SkipFile(f"not {_a(what)} (no {name} in its zip archive)") from None
    except Exception as exc:  # a bad CRC, a broken deflate stream, a zip password, an unknown method or version
        raise SkipFile(f"damaged {what} ({name}: {exc})") from None
