"""Real files of every format `index` reads beyond plain text, made here with the libraries that write them (or by
hand where the format is text: RTF, e-mail), each about its own subject so that a search can tell them apart."""

from __future__ import annotations

import io
import zipfile
from datetime import datetime, timedelta, timezone
from email.message import EmailMessage
from email.utils import format_datetime
from pathlib import Path

WHEN = datetime(2024, 3, 4, 10, 15, tzinfo=timezone(timedelta(hours=1)))


def docx_bytes() -> bytes:
    """A Word document: a Title paragraph, two levels of headings, a table."""
    import docx

    document = docx.Document()
    document.core_properties.title = "Field Guide to Lichens"
    document.add_paragraph("Field Guide to Lichens", style="Title")
    document.add_paragraph("Lichens are partnerships of a fungus and an alga.")
    document.add_heading("Habitats", 1)
    document.add_paragraph("Lichens grow on bark, on rock and on old roofs.")
    document.add_heading("Crustose lichens", 2)
    document.add_paragraph("Crustose lichens form a crust that cannot be peeled from the rock.")
    table = document.add_table(rows=2, cols=2)
    for (row, col), text in {(0, 0): "Species", (0, 1): "Colour", (1, 0): "Xanthoria", (1, 1): "orange"}.items():
        table.cell(row, col).text = text
    document.add_heading("Identification", 1)
    document.add_paragraph("A hand lens and a drop of bleach identify most lichens.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def odt_bytes() -> bytes:
    """An OpenDocument text: dc:title, headings at two levels, a list and a table."""
    from odf import dc
    from odf.opendocument import OpenDocumentText
    from odf.table import Table, TableCell, TableColumn, TableRow
    from odf.text import H, List, ListItem, P

    document = OpenDocumentText()
    document.meta.addElement(dc.Title(text="Garden Notes"))
    document.text.addElement(H(outlinelevel=1, text="Soil"))
    document.text.addElement(P(text="Clay soil holds water; sandy soil drains fast."))
    document.text.addElement(H(outlinelevel=2, text="Compost"))
    items = List()
    for text in ("Turn the compost heap every two weeks.", "Keep it as damp as a wrung sponge."):
        item = ListItem()
        item.addElement(P(text=text))
        items.addElement(item)
    document.text.addElement(items)
    table = Table()
    table.addElement(TableColumn(numbercolumnsrepeated=2))
    row = TableRow()
    for text in ("Nitrogen", "grass clippings"):
        cell = TableCell()
        cell.addElement(P(text=text))
        row.addElement(cell)
    table.addElement(row)
    document.text.addElement(table)
    document.text.addElement(H(outlinelevel=1, text="Watering"))
    document.text.addElement(P(text="Water tomatoes at the root in the early morning."))
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def epub_bytes() -> bytes:
    """A book of two chapters, the second under a part and split over two files, with a heading inside."""
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("sea-stories-1")
    book.set_title("Sea Stories")
    book.set_language("en")
    book.add_author("A. Sailor")
    harbour = epub.EpubHtml(title="The Harbour", file_name="text/harbour.xhtml", lang="en")
    harbour.content = (
        "<h1>The Harbour</h1><p>Fishing boats rest in the harbour at night.</p>"
        "<h2>Tides</h2><p>The tide rises twice a day and lifts the boats off the mud.</p>"
    )
    open_water = epub.EpubHtml(title="Open Water", file_name="text/open-water.xhtml", lang="en")
    open_water.content = "<h1>Open Water</h1><p>Far from land, whales swim beside the ship.</p>"
    split = epub.EpubHtml(title="Open Water (continued)", file_name="text/open-water-2.xhtml", lang="en")
    split.content = "<p>The whales dive for an hour and come up blowing spray.</p>"
    for chapter in (harbour, open_water, split):
        book.add_item(chapter)
    book.toc = (
        epub.Link("text/harbour.xhtml", "The Harbour", "harbour"),
        (epub.Section("Part Two: Voyages"), (epub.Link("text/open-water.xhtml", "Open Water", "open-water"),)),
    )
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", harbour, open_water, split]
    buffer = io.BytesIO()
    epub.write_epub(buffer, book)
    return buffer.getvalue()


def message(subject: str, body: str, *, sender: str = "Ada Lovelace <ada@example.org>", html: str | None = None,
            attachment: tuple[str, bytes] | None = None, when: datetime = WHEN) -> EmailMessage:  # fmt: skip
    """An e-mail: a text body (or an HTML one when `body` is ''), an HTML alternative, an attachment."""
    mail = EmailMessage()
    mail["From"] = sender
    mail["To"] = "Charles Babbage <charles@example.org>"
    mail["Subject"] = subject
    mail["Date"] = format_datetime(when)
    if body:
        mail.set_content(body)
        if html:
            mail.add_alternative(html, subtype="html")
    else:
        mail.set_content(html or "", subtype="html")
    if attachment:
        mail.add_attachment(attachment[1], maintype="application", subtype="pdf", filename=attachment[0])
    return mail


def eml_bytes() -> bytes:
    return message(
        "Budget meeting on Thursday",
        "The budget meeting moves to Thursday at nine.\nBring the engine drawings.",
        html="<p>The budget meeting moves to <b>Thursday</b> at nine.</p>",
        attachment=("drawings.pdf", b"%PDF-1.4 not really"),
    ).as_bytes()


def mbox_bytes(count: int = 3, *, attachment_bytes: int = 0, broken: int | None = None) -> bytes:
    """An mbox of `count` messages (the last one HTML only); message `broken` (from 1), if given, has no
    headers; `attachment_bytes` gives each message an attachment of that size."""
    parts = []
    for number in range(1, count + 1):
        if number == broken:
            raw = b"this line is no header and there is no blank line after it\n"
        else:
            html = f"<html><body><p>Invoice number {number} for the analytical engine is paid.</p></body></html>"
            mail = message(
                f"Invoice {number}",
                "" if number == count else f"Invoice number {number} for the analytical engine is due.",
                html=html if number == count else None,
                attachment=(f"invoice-{number}.pdf", b"x" * attachment_bytes) if attachment_bytes else None,
                when=WHEN + timedelta(days=number),
            )
            raw = mail.as_bytes()
        parts.append(b"From ada@example.org Mon Mar  4 10:15:00 2024\n" + raw.rstrip(b"\n") + b"\n\n")
    return b"".join(parts)


RTF = (
    rb"{\rtf1\ansi\ansicpg1252\deff0{\fonttbl{\f0\froman Times New Roman;}}"
    rb"{\info{\title Lighthouse Keeper's Log}{\author Grace Darling}}"
    rb"\pard\b Lighthouse Keeper's Log\b0\par"
    rb"\pard The lamp was lit at dusk; the caf\'e9 on the quay closed early.\par"
    rb"\pard Storm from the north-east: the lighthouse lens was cleaned twice.\par}"
)

CODE = {
    "src/net/retry.py": 'def retry_backoff(attempt: int) -> float:\n    """Seconds to wait before retrying."""\n'
    "    return min(60.0, 0.5 * 2**attempt)\n",
    "cmd/server/main.go": 'package main\n\nimport "fmt"\n\nfunc main() {\n\tfmt.Println("listening on 8080")\n}\n',
    "db/schema.sql": "CREATE TABLE invoices (id INTEGER PRIMARY KEY, amount_pence INTEGER NOT NULL);\n",
}


def write_all(folder: Path) -> Path:
    """`folder` holding one file of each format (and three source files); returns it."""
    files = {
        "lichens.docx": docx_bytes(),
        "garden.odt": odt_bytes(),
        "sea-stories.epub": epub_bytes(),
        "budget.eml": eml_bytes(),
        "invoices.mbox": mbox_bytes(),
        "log.rtf": RTF,
        **{name: text.encode() for name, text in CODE.items()},
    }
    for name, data in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return folder


def zip_bytes(entries: dict[str, bytes]) -> bytes:
    """A zip archive of `entries` (name -> bytes), deflated."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()
