"""The formats beyond plain text (DOCX, ODT, EPUB, e-mail, RTF, source code), made by the test with the libraries
that write them and read back through the reader registry, `ingest_paths` and `offline-agent index` as a user
runs it; then searched."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from format_files import CODE, eml_bytes, mbox_bytes, message, write_all
from support import cli_env

from offline_agent.retrieval import ingest_paths, open_corpus
from offline_agent.retrieval.readers import Fields, Section, read_document_file, reader_for


def read(path: Path, doc_id: str | None = None):
    return read_document_file(path, path.read_bytes(), doc_id or path.name, Fields())


@pytest.fixture(scope="module")
def formats_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_all(tmp_path_factory.mktemp("formats"))


def cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "offline_agent.cli", *args], capture_output=True, text=True, env=cli_env(home),
        timeout=300,
    )  # fmt: skip


def test_every_suffix_has_its_reader() -> None:
    expected = {".docx": "docx", ".odt": "odt", ".epub": "epub", ".eml": "mail", ".mbox": "mail", ".rtf": "rtf"}
    expected |= {suffix: "code" for suffix in (".py", ".js", ".ts", ".go", ".rs", ".java", ".c", ".h", ".sql")}
    expected |= {".cpp": "code", ".sh": "code", ".rb": "code", ".yaml": "code", ".toml": "code"}
    assert {suffix: reader_for(Path(f"x{suffix}")).name for suffix in expected} == expected


def test_docx_paragraphs_tables_title_and_heading_paths(formats_dir: Path) -> None:
    (doc,), notes = read(formats_dir / "lichens.docx")
    assert doc.title == "Field Guide to Lichens" and notes == []
    assert "Lichens grow on bark" in doc.text and "Xanthoria | orange" in doc.text
    assert [s.path for s in doc.sections] == [("Habitats",), ("Habitats", "Crustose lichens"), ("Identification",)]
    assert [doc.text[s.start :].split("\n")[0] for s in doc.sections] == [
        "Habitats",
        "Crustose lichens",
        "Identification",
    ]
    # the table sits in the section of the heading above it
    table_at = doc.text.index("Xanthoria")
    assert max((s for s in doc.sections if s.start <= table_at), key=lambda s: s.start).path[-1] == "Crustose lichens"


def test_odt_headings_lists_tables_and_title(formats_dir: Path) -> None:
    (doc,), _ = read(formats_dir / "garden.odt")
    assert doc.title == "Garden Notes"
    assert "Turn the compost heap every two weeks." in doc.text and "Nitrogen | grass clippings" in doc.text
    assert [s.path for s in doc.sections] == [("Soil",), ("Soil", "Compost"), ("Watering",)]
    assert doc.text[doc.sections[1].start :].startswith("Compost")


def test_epub_gives_one_document_per_chapter_with_its_place_in_the_book(formats_dir: Path) -> None:
    docs, _ = read(formats_dir / "sea-stories.epub", "books/sea-stories.epub")
    assert [(d.doc_id, d.title) for d in docs] == [
        ("books/sea-stories.epub:text/harbour.xhtml", "The Harbour (Sea Stories)"),
        ("books/sea-stories.epub:text/open-water.xhtml", "Open Water (Sea Stories)"),
    ]
    harbour, open_water = docs
    assert harbour.sections == (
        Section(0, ("The Harbour",)),
        Section(harbour.text.index("Tides"), ("The Harbour", "Tides")),
    )
    assert open_water.sections == (Section(0, ("Part Two: Voyages", "Open Water")),)
    # the file the table of contents does not name continues its chapter; the navigation page is left out
    assert "come up blowing spray" in open_water.text
    assert all("Part Two: Voyages" not in d.text for d in docs)


def test_a_message_is_titled_by_its_subject_and_opens_with_sender_and_date(tmp_path: Path) -> None:
    path = tmp_path / "budget.eml"
    path.write_bytes(eml_bytes())
    (doc,), notes = read(path)
    assert doc.title == "Budget meeting on Thursday"
    first, _, body = doc.text.partition("\n\n")
    assert first == "From: Ada Lovelace <ada@example.org> | Date: Mon, 04 Mar 2024 10:15:00 +0100"
    assert body.startswith("The budget meeting moves to Thursday at nine.")  # the text/plain part, not the HTML
    assert "<b>" not in doc.text
    assert notes == ["attachment 'drawings.pdf' not indexed"]


def test_an_html_only_message_is_read_through_the_html_reader(tmp_path: Path) -> None:
    path = tmp_path / "news.eml"
    html = "<html><head><style>p {color: red}</style></head><body><p>Tickets for the <i>opera</i> are sold out.</p>"
    path.write_bytes(message("Opera", "", html=html + "</body></html>").as_bytes())
    (doc,), _ = read(path)
    assert doc.text.endswith("\n\nTickets for the opera are sold out.") and "color" not in doc.text


def test_an_mbox_gives_one_document_per_message(tmp_path: Path) -> None:
    path = tmp_path / "invoices.mbox"
    path.write_bytes(mbox_bytes(4, attachment_bytes=100))
    docs, notes = read(path, "mail/invoices.mbox")
    assert [(d.doc_id, d.title) for d in docs] == [(f"mail/invoices.mbox:{n}", f"Invoice {n}") for n in range(1, 5)]
    assert docs[1].text.startswith("From: Ada Lovelace <ada@example.org> | Date: Wed, 06 Mar 2024")
    assert docs[3].text.endswith("Invoice number 4 for the analytical engine is paid.")  # its HTML part's text
    assert notes == [f"message {n}: attachment 'invoice-{n}.pdf' not indexed" for n in range(1, 5)]


def test_rtf_text_and_title(formats_dir: Path) -> None:
    (doc,), _ = read(formats_dir / "log.rtf")
    assert doc.title == "Lighthouse Keeper's Log"
    assert "the café on the quay closed early." in doc.text and "\\par" not in doc.text and "Times" not in doc.text


def test_source_files_are_titled_by_their_path(formats_dir: Path) -> None:
    ingested = ingest_paths(formats_dir)
    titles = {p.doc_id: p.title for p in ingested.passages if p.doc_id in CODE}
    assert titles == {name: name for name in CODE}


def test_ingest_paths_reads_every_format(formats_dir: Path) -> None:
    ingested = ingest_paths(formats_dir)
    assert ingested.skipped == []
    per_file = {Path(source).name: fp["passages"] for source, fp in ingested.files.items()}
    # a document with headings is cut at each section (a passage never runs across a heading)
    assert per_file == {
        "lichens.docx": 4, "garden.odt": 3, "sea-stories.epub": 3, "budget.eml": 1, "invoices.mbox": 3,
        "log.rtf": 1, "retry.py": 1, "main.go": 1, "schema.sql": 1,
    }  # fmt: skip
    index = open_corpus(formats_dir)
    for query, doc_id in [
        ("crustose lichen crust", "lichens.docx"),
        ("compost heap", "garden.odt"),
        ("whales blowing spray", "sea-stories.epub:text/open-water.xhtml"),
        ("budget meeting thursday", "budget.eml"),
        ("invoice paid", "invoices.mbox:3"),
        ("lighthouse lens", "log.rtf"),
        ("retry_backoff attempt", "src/net/retry.py"),
        ("invoices amount_pence", "db/schema.sql"),
    ]:
        assert index.search(query, k=1).passages[0].doc_id == doc_id, query


def test_index_and_search_as_a_user_runs_them(formats_dir: Path, isolated_home: Path) -> None:
    built = cli("index", str(formats_dir), "--name", "formats", "--json", home=isolated_home)
    assert built.returncode == 0, built.stderr
    summary = json.loads(built.stdout)
    assert (summary["passages"], summary["documents"], summary["files_read"], summary["skipped"]) == (18, 12, 9, [])
    note = "attachment 'drawings.pdf' not indexed"
    assert summary["skipped_records"] == [{"path": str(formats_dir / "budget.eml"), "reason": note}]
    found = cli("search", "harbour tide mud", "--index", "formats", "--json", home=isolated_home)
    top = json.loads(found.stdout)["hits"][0]
    assert (top["title"], top["doc_id"]) == ("The Harbour (Sea Stories)", "sea-stories.epub:text/harbour.xhtml")
    assert top["source"] == str(formats_dir / "sea-stories.epub")
    found = cli("search", "Ada Lovelace invoice", "--index", "formats", "-k", "3", home=isolated_home)
    assert found.returncode == 0 and found.stdout.count("Invoice ") >= 2


def test_a_book_in_one_file_is_one_document_whose_headings_give_its_sections(tmp_path: Path) -> None:
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("poem-1")
    book.set_title("The Long Poem")
    whole = epub.EpubHtml(title="The Long Poem", file_name="poem.xhtml")
    whole.content = (
        "<h1>The Long Poem</h1><p>An opening note.</p><h2 id='i'>I. Morning</h2><p>Larks rise.</p>"
        "<h2 id='ii'>II. Evening</h2><p>Owls call.</p>"
    )
    book.add_item(whole)
    book.toc = (epub.Link("poem.xhtml#i", "I. Morning", "i"), epub.Link("poem.xhtml#ii", "II. Evening", "ii"))
    book.add_item(epub.EpubNcx())
    book.spine = [whole]
    path = tmp_path / "poem.epub"
    epub.write_epub(str(path), book)
    (doc,), _ = read(path)
    assert doc.title == "The Long Poem"  # its heading, not the title of its first section
    assert [s.path for s in doc.sections] == [
        ("The Long Poem",), ("The Long Poem", "I. Morning"), ("The Long Poem", "II. Evening")
    ]  # fmt: skip
