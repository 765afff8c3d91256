"""Damaged, password-protected, mislabelled and oversized files of the new formats: each is skipped with its reason
(or loses only its broken part), never a traceback; a large mailbox is read without a second copy in memory."""

from __future__ import annotations

import io
import subprocess
import sys
import tracemalloc
import zipfile
from pathlib import Path

import pytest
from format_files import docx_bytes, epub_bytes, mbox_bytes, odt_bytes, zip_bytes
from support import cli_env

from offline_agent.retrieval import IngestOptions, ingest_paths
from offline_agent.retrieval.readers import DEFAULT_LIMITS, Fields, ReadLimits, SkipFile, read_document_file

MAKERS = {".docx": docx_bytes, ".odt": odt_bytes, ".epub": epub_bytes}
WHAT = {".docx": "a DOCX", ".odt": "an ODT", ".epub": "an EPUB"}


def skip_reason(name: str, data: bytes, limits: ReadLimits = DEFAULT_LIMITS) -> str:
    with pytest.raises(SkipFile) as caught:
        read_document_file(Path(name), data, name, Fields(limits=limits))
    return str(caught.value)


def with_entry(data: bytes, name: str, content: bytes) -> bytes:
    """The zip archive `data` with the entry `name` added, or replaced."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        entries = {info.filename: archive.read(info) for info in archive.infolist()}
    return zip_bytes({**entries, name: content})


@pytest.mark.parametrize("suffix", sorted(MAKERS))
def test_a_truncated_zip_is_skipped(suffix: str) -> None:
    data = MAKERS[suffix]()
    reason = skip_reason(f"cut{suffix}", data[: len(data) // 2])
    assert reason.startswith(f"damaged or truncated {suffix[1:].upper()} (its zip archive cannot be opened")


@pytest.mark.parametrize("suffix", sorted(MAKERS))
def test_a_file_that_is_no_zip_at_all_is_skipped(suffix: str) -> None:
    what = WHAT[suffix]
    assert (
        skip_reason(f"notes{suffix}", b"just some text\n")
        == f"not {what} ({what} file is a zip archive, and this is not one)"
    )


@pytest.mark.parametrize("suffix", sorted(MAKERS))
def test_a_zip_of_something_else_is_skipped(suffix: str) -> None:
    assert skip_reason(f"other{suffix}", zip_bytes({"readme.txt": b"hello"})).startswith(f"not {WHAT[suffix]} (no ")


def test_a_damaged_entry_is_skipped() -> None:
    data = bytearray(docx_bytes())
    info = zipfile.ZipFile(io.BytesIO(bytes(data))).getinfo("word/document.xml")
    data[info.header_offset + 30 + len(info.filename) + len(info.extra) + 10] ^= 0xFF  # inside the deflated bytes
    assert skip_reason("broken.docx", bytes(data)).startswith("unreadable DOCX (")


@pytest.mark.parametrize("suffix", sorted(MAKERS))
def test_a_zip_that_would_expand_too_far_is_skipped(suffix: str) -> None:
    limits = ReadLimits(inflated_bytes=1000)  # rather than write a real 1 GB bomb
    reason = skip_reason(f"bomb{suffix}", MAKERS[suffix](), limits)
    assert "past the inflated-bytes bound (1000 B; raise it with --limit inflated-bytes=...)" in reason


def test_a_password_protected_docx_is_skipped() -> None:
    from msoffcrypto.format.ooxml import OOXMLFile

    encrypted = io.BytesIO()
    OOXMLFile(io.BytesIO(docx_bytes())).encrypt("correct horse", encrypted)
    reason = skip_reason("secret.docx", encrypted.getvalue())
    assert reason == "password-protected DOCX (encrypted; save it without a password to index it)"


def test_an_old_binary_word_file_under_the_new_suffix_is_skipped() -> None:
    ole2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(4096)
    assert skip_reason("old.docx", ole2) == "an old binary Office file, not a DOCX (save it as DOCX to index it)"


def test_a_password_protected_odt_is_skipped() -> None:
    # What LibreOffice writes for a password: the manifest gives each entry's encryption data, the entries are
    # ciphertext. No Python library writes one, so the markers are written here by hand.
    manifest = (
        b'<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
        b'<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml" manifest:size="4242">'
        b'<manifest:encryption-data manifest:checksum-type="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0#sha256"'
        b' manifest:checksum="AAAA"><manifest:algorithm manifest:algorithm-name="http://www.w3.org/2001/04/xmlenc#aes256-cbc"'
        b' manifest:initialisation-vector="AAAA"/></manifest:encryption-data></manifest:file-entry></manifest:manifest>'
    )
    data = zip_bytes(
        {
            "mimetype": b"application/vnd.oasis.opendocument.text",
            "META-INF/manifest.xml": manifest,
            "content.xml": bytes(range(256)) * 16,
        }
    )
    assert (
        skip_reason("secret.odt", data) == "password-protected ODT (encrypted; save it without a password to index it)"
    )


def test_an_odt_whose_content_is_not_well_formed_is_skipped_and_nothing_is_printed(capsys) -> None:
    with zipfile.ZipFile(io.BytesIO(odt_bytes())) as archive:
        content = archive.read("content.xml")
    data = with_entry(odt_bytes(), "content.xml", content[: len(content) // 2])
    assert skip_reason("cut.odt", data).startswith("damaged ODT (content.xml is not well-formed XML: ")
    broken_meta = with_entry(odt_bytes(), "meta.xml", b"<office:document-meta")  # odfpy prints such a part
    (doc,), _ = read_document_file(Path("meta.odt"), broken_meta, "meta.odt", Fields())
    assert doc.title == "Soil" and "Clay soil" in doc.text  # the title is lost with meta.xml, the text is not
    assert capsys.readouterr().out == ""


def test_a_spreadsheet_renamed_odt_is_skipped() -> None:
    data = with_entry(odt_bytes(), "mimetype", b"application/vnd.oasis.opendocument.spreadsheet")
    assert skip_reason("sheet.odt", data).startswith("not an ODF text document (its mimetype is application/vnd.oa")


ENCRYPTION_XML = """<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container"
  xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData>
  <enc:EncryptionMethod Algorithm="{algorithm}"/>
  <enc:CipherData><enc:CipherReference URI="{uri}"/></enc:CipherData></enc:EncryptedData></encryption>"""


def test_an_epub_with_encrypted_chapters_is_skipped_and_one_with_obfuscated_fonts_is_read() -> None:
    drm = ENCRYPTION_XML.format(algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc", uri="EPUB/text/harbour.xhtml")
    data = with_entry(epub_bytes(), "META-INF/encryption.xml", drm.encode())
    assert skip_reason("locked.epub", data) == "DRM-protected EPUB (its content is encrypted: EPUB/text/harbour.xhtml)"
    fonts = ENCRYPTION_XML.format(algorithm="http://www.idpf.org/2008/embedding", uri="EPUB/fonts/serif.otf")
    docs, _ = read_document_file(
        Path("fonts.epub"), with_entry(epub_bytes(), "META-INF/encryption.xml", fonts.encode()), "f", Fields()
    )
    assert len(docs) == 2


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("mail.eml", b"\x00\x01\x02binary", "not an e-mail message (binary data)"),
        ("mail.eml", b"no headers at all, only a sentence", "not an e-mail message (no headers)"),
        (
            "box.mbox",
            b"Subject: one message\n\nbut no From line first",
            "not an mbox file (it does not begin with a 'From ' line)",
        ),
        ("text.rtf", b"plain text under an RTF name", "not an RTF file (it does not begin with {\\rtf)"),
    ],
)
def test_malformed_messages_and_documents_are_skipped(name: str, data: bytes, reason: str) -> None:
    assert skip_reason(name, data) == reason


def test_a_broken_message_in_an_mbox_is_a_note_and_the_others_are_read() -> None:
    docs, notes = read_document_file(Path("box.mbox"), mbox_bytes(4, broken=2), "box.mbox", Fields())
    assert [d.title for d in docs] == ["Invoice 1", "Invoice 3", "Invoice 4"]
    assert notes == ["message 2: not an e-mail message (no headers)"]


def test_a_large_mbox_is_parsed_message_by_message_without_a_second_copy() -> None:
    data = mbox_bytes(200, attachment_bytes=40_000)  # about 11 MB, almost all of it base64 attachments
    assert len(data) > 10_000_000
    tracemalloc.start()
    try:
        docs, notes = read_document_file(Path("big.mbox"), data, "big.mbox", Fields())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(docs) == 200 and len(notes) == 200
    assert peak < len(data) / 4, f"reading {len(data):,} bytes allocated {peak:,} more at its peak"


def test_an_mbox_over_the_size_limit_is_skipped_before_it_is_read(tmp_path: Path) -> None:
    (tmp_path / "big.mbox").write_bytes(mbox_bytes(50, attachment_bytes=20_000))
    ingested = ingest_paths(tmp_path, IngestOptions(max_file_bytes=100_000))
    assert ingested.passages == [] and ingested.skipped[0][1].startswith("too large (")


@pytest.mark.parametrize(
    ("suffix", "module", "hint"),
    [
        (".docx", "docx", "DOCX needs python-docx (pip install 'offline-agent[docx]')"),
        (".odt", "odf.opendocument", "ODT needs odfpy (pip install 'offline-agent[odt]')"),
        (".epub", "ebooklib", "EPUB needs ebooklib (pip install 'offline-agent[epub]')"),
        (".rtf", "striprtf.striprtf", "RTF needs striprtf (pip install 'offline-agent[rtf]')"),
    ],
)
def test_a_missing_extra_skips_the_file_with_the_install_hint(
    suffix: str, module: str, hint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # importing it now raises ImportError
    assert skip_reason(f"file{suffix}", b"anything") == hint


def test_index_lists_every_damaged_file_with_its_reason_and_no_traceback(tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nA readable note about herons.")
    (folder / "cut.docx").write_bytes(docx_bytes()[:5000])
    (folder / "fake.odt").write_bytes(b"not a zip")
    (folder / "fake.epub").write_bytes(zip_bytes({"x.txt": b"x"}))
    (folder / "junk.eml").write_bytes(b"\x00\xff\x00")
    (folder / "junk.rtf").write_bytes(b"hello")
    result = subprocess.run(
        [sys.executable, "-m", "offline_agent.cli", "index", str(folder), "--name", "mixed"],
        capture_output=True, text=True, env=cli_env(tmp_path / "home"), timeout=300,
    )  # fmt: skip
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert "indexed 1 passages from 1 documents in 1 files" in result.stdout
    assert "5 files skipped:" in result.stdout
    for name, reason in [
        ("cut.docx", "damaged or truncated DOCX"),
        ("fake.odt", "not an ODT (an ODT file is a zip archive"),
        ("fake.epub", "not an EPUB (no META-INF/container.xml"),
        ("junk.eml", "not an e-mail message (binary data)"),
        ("junk.rtf", "not an RTF file"),
    ]:
        assert f"{folder / name}: {reason}" in result.stdout, name
