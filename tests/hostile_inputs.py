"""Hostile files for the readers, made by code in a second or two (nothing large is committed): the probes of the
reliability suite's reader cases (tests/reliability/test_reader_bounds.py) and of
benchmarks/speed/reader_bounds_bench.py. Each takes a size `n`, so that a test can double it."""

from __future__ import annotations

import io
import struct
import zipfile

WORDS = "harbour lantern keeper storm"


def zip_bytes(entries: dict[str, bytes], stored: tuple[str, ...] = ()) -> bytes:
    """A zip of `entries` (deflated, but those named in `stored`)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data, zipfile.ZIP_STORED if name in stored else zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


def understate(data: bytes, name: str, size: int) -> bytes:
    """The zip `data` with the entry `name` declaring it inflates to `size` bytes (in its local header and the
    central directory), whatever it inflates to."""
    out = bytearray(data)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        info = archive.getinfo(name)
    struct.pack_into("<L", out, info.header_offset + 22, size)
    central = out.find(b"PK\x01\x02")
    while central != -1:
        name_length = struct.unpack_from("<H", out, central + 28)[0]
        if out[central + 46 : central + 46 + name_length] == name.encode():
            struct.pack_into("<L", out, central + 24, size)
            return bytes(out)
        central = out.find(b"PK\x01\x02", central + 4)
    raise ValueError(name)


# ---- HTML ------------------------------------------------------------------------------------------------------
def html_control_character(char: str, tag: str) -> bytes:
    """A page with `char` (a C0 control character) in the text of a `tag` block."""
    return f"<html><body><{tag}>before{char}after {WORDS}</{tag}><p>second block</p></body></html>".encode()


def html_crowded(n: int) -> bytes:
    """A page whose one element has `n` attributes (libxml2 compares each with all before it)."""
    attributes = " ".join(f'a{i}="v"' for i in range(n))
    return f"<html><body><p {attributes}>{WORDS} crowded</p><p>after the crowd</p></body></html>".encode()


def html_latin1() -> bytes:
    """A Latin-1 page that declares its charset."""
    page = '<html><head><meta charset="iso-8859-1"><title>Crème brûlée</title></head><body><p>Café au lait'
    return (page + f" {WORDS}</p></body></html>").encode("latin-1")


def html_paragraphs(n: int) -> bytes:
    """A page of `n` short paragraphs (about 40 bytes each)."""
    return ("<html><body>" + "".join(f"<p>{WORDS} {i}</p>" for i in range(n)) + "</body></html>").encode()


def html_deep_terms(n: int) -> bytes:
    """A page of `n` unclosed <div>s (too deep for libxml2 past 2,048: the standard parser reads it) and then `n`
    description list terms without a list."""
    return ("<html><body>" + "<div>" * n + f"<dt>{WORDS}</dt><dd>entry</dd>" * n + "</body></html>").encode()


# ---- DOCX ------------------------------------------------------------------------------------------------------
_W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def docx_paragraphs(n: int, styles: int | None = None) -> bytes:
    """A DOCX of `n` empty paragraphs, each in one of `styles` styles (default: one style each), and a last one of
    text; python-docx's own template around them."""
    import docx

    buffer = io.BytesIO()
    docx.Document().save(buffer)
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as archive:
        entries = {info.filename: archive.read(info) for info in archive.infolist()}
    styles = styles or n
    style_xml = "".join(
        f'<w:style w:type="paragraph" w:styleId="S{i}"><w:name w:val="Style {i}"/>'
        + (f'<w:basedOn w:val="S{i - 1}"/>' if i % 8 else "")
        + "</w:style>"
        for i in range(styles)
    )
    entries["word/styles.xml"] = f"<w:styles {_W}>{style_xml}</w:styles>".encode()
    body = "".join(f'<w:p><w:pPr><w:pStyle w:val="S{i % styles}"/></w:pPr></w:p>' for i in range(n))
    body += f"<w:p><w:r><w:t>{WORDS} last paragraph</w:t></w:r></w:p>"
    entries["word/document.xml"] = f"<w:document {_W}><w:body>{body}</w:body></w:document>".encode()
    return zip_bytes(entries)


def docx_lying(inflated: int) -> bytes:
    """A DOCX whose document.xml inflates to `inflated` bytes and declares 2 KB."""
    import docx

    buffer = io.BytesIO()
    docx.Document().save(buffer)
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as archive:
        entries = {info.filename: archive.read(info) for info in archive.infolist()}
    padding = b" " * inflated
    entries["word/document.xml"] = f"<w:document {_W}><w:body>".encode() + padding + b"</w:body></w:document>"
    return understate(zip_bytes(entries), "word/document.xml", 2048)


# ---- EPUB ------------------------------------------------------------------------------------------------------
def epub_of(chapters: dict[str, bytes]) -> bytes:
    """An EPUB of the chapters (file name -> XHTML bytes) in that order, with a table of contents naming each;
    written by hand, as ebooklib rewrites a chapter through a parser that stops at 256 levels."""
    kind = "application/xhtml+xml"
    items = "".join(f'<item id="c{i}" href="{name}" media-type="{kind}"/>' for i, name in enumerate(chapters))
    spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
    opf = (
        '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="2.0" unique-identifier="id">'
        '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Hostile Book</dc:title>'
        '<dc:identifier id="id">hostile-1</dc:identifier><dc:language>en</dc:language></metadata>'
        f'<manifest><item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>{items}</manifest>'
        f'<spine toc="ncx">{spine}</spine></package>'
    )
    points = "".join(
        f'<navPoint id="p{i}" playOrder="{i + 1}"><navLabel><text>Chapter {i + 1}</text></navLabel>'
        f'<content src="{name}"/></navPoint>'
        for i, name in enumerate(chapters)
    )
    ncx = (
        '<?xml version="1.0"?><ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1"><head/>'
        f"<docTitle><text>Hostile Book</text></docTitle><navMap>{points}</navMap></ncx>"
    )
    container = (
        '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
        '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
        "</rootfiles></container>"
    )
    entries = {"mimetype": b"application/epub+zip", "META-INF/container.xml": container.encode()}
    entries |= {"OEBPS/content.opf": opf.encode(), "OEBPS/toc.ncx": ncx.encode()}
    entries |= {f"OEBPS/{name}": data for name, data in chapters.items()}
    return zip_bytes(entries, stored=("mimetype",))


def xhtml(body: str) -> bytes:
    return (
        f'<html xmlns="http://www.w3.org/1999/xhtml"><head><title>c</title></head><body>{body}</body></html>'.encode()
    )


def epub_deep(depth: int) -> bytes:
    """A book whose first chapter nests `depth` unclosed <div>s around its text, and a plain second chapter."""
    deep = f"<p>{WORDS} top</p>" + "<div>" * depth + f"<p>{WORDS} deep bottom</p>"
    return epub_of({"deep.xhtml": xhtml(deep), "plain.xhtml": xhtml(f"<p>{WORDS} plain chapter</p>")})


def epub_chapters(n: int) -> bytes:
    """A book of one chapter of `n` paragraphs."""
    return epub_of({"one.xhtml": xhtml("".join(f"<p>{WORDS} {i}</p>" for i in range(n)))})


def epub_inflating(inflated: int) -> bytes:
    """A book whose second chapter inflates to `inflated` bytes (spaces: a small file), after a plain first one."""
    big = xhtml("<p>" + " " * inflated + "</p>")
    return epub_of({"plain.xhtml": xhtml(f"<p>{WORDS} plain</p>"), "big.xhtml": big})


# ---- mail and records ------------------------------------------------------------------------------------------
def mbox_with_big_message(size: int) -> bytes:
    """An mbox of a message with an attachment of about `size` bytes (base64), between two plain messages."""
    import base64

    def message(subject: str, body: str, attachment: bytes = b"") -> bytes:
        head = f"From: ada@example.org\nSubject: {subject}\nMIME-Version: 1.0\n"
        if not attachment:
            return (head + f"Content-Type: text/plain\n\n{body}\n").encode()
        encoded = base64.encodebytes(attachment)
        return (
            (
                head + 'Content-Type: multipart/mixed; boundary="b"\n\n--b\nContent-Type: text/plain\n\n'
                f"{body}\n--b\nContent-Type: application/octet-stream\n"
                'Content-Disposition: attachment; filename="x.bin"\n'
                "Content-Transfer-Encoding: base64\n\n"
            ).encode()
            + encoded
            + b"--b--\n"
        )

    messages = [
        message("First", f"{WORDS} first message"),
        message("Big", f"{WORDS} big message body", b"\x00\x01" * (size * 3 // 8)),
        message("Last", f"{WORDS} last message"),
    ]
    return b"".join(b"From ada@example.org Mon Mar  4 10:15:00 2024\n" + m + b"\n" for m in messages)


def mbox_messages(n: int) -> bytes:
    """An mbox of `n` short plain messages."""
    one = "From ada@example.org Mon Mar  4 10:15:00 2024\nFrom: ada@example.org\nSubject: Note {i}\n\n{words} {i}\n\n"
    return "".join(one.format(i=i, words=WORDS) for i in range(n)).encode()


def jsonl_with_bad_line(n: int) -> bytes:
    """`n` JSON Lines records, the second of them holding a byte that is not UTF-8."""
    lines = [f'{{"id": "r{i}", "text": "{WORDS} record {i}"}}'.encode() for i in range(n)]
    lines[1] = b'{"id": "r1", "text": "caf\xe9 latin-1"}'
    return b"\n".join(lines) + b"\n"


# ---- sizes in MB and pages of many blocks, for benchmarks/speed/reader_bounds_bench.py ------------------------
def html_control_pages(n: int) -> bytes:
    """A page of `n` paragraphs with a form feed in each (lxml cannot mark them: the page goes to PageText)."""
    return ("<html><body>" + "".join(f"<p>{WORDS}\x0c{i}</p>" for i in range(n)) + "</body></html>").encode()


def docx_lying_mb(n: int) -> bytes:
    return docx_lying(n << 20)


def epub_inflating_mb(n: int) -> bytes:
    return epub_inflating(n << 20)


def mbox_with_big_message_mb(n: int) -> bytes:
    return mbox_with_big_message(n << 20)
