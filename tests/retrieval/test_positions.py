"""Where a passage sits: the heading path of its section (Markdown, reStructuredText), its line or its PDF page,
kept through the index on disk, and read as empty from an index written before they were kept."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from support import pdf_of

from offline_agent.errors import RetrievalError
from offline_agent.retrieval import (
    BM25Index,
    IngestOptions,
    Passage,
    build_from_paths,
    ingest_paths,
    update_from_paths,
)
from offline_agent.retrieval.chunking import document_passages
from offline_agent.retrieval.readers import Document, Section
from offline_agent.retrieval.readers.text import text_sections, text_title

BEFORE = Path(__file__).parent / "data" / "before_positions"  # an index written by the code before positions

MARKDOWN = """# Harbour Guide

The harbour of Kessa opens at dawn.

## Moorings

Visiting boats moor at the north quay.

```
# not a heading: inside a code fence
```

### Winter berths

From November the inner basin is kept for fishing boats.

Fees
----

A night at the quay costs eleven crowns. C# is no heading marker here.

## C#
"""


def test_markdown_headings_nest_by_level_and_skip_code_fences() -> None:
    sections = text_sections(MARKDOWN, ".md")
    assert [s.path for s in sections] == [
        ("Harbour Guide",),
        ("Harbour Guide", "Moorings"),
        ("Harbour Guide", "Moorings", "Winter berths"),
        ("Harbour Guide", "Fees"),  # a setext "---" underline is a second-level heading
        ("Harbour Guide", "C#"),  # a closing "#" needs a space before it
    ]
    assert [MARKDOWN[s.start :].split("\n", 1)[0] for s in sections] == [
        "# Harbour Guide",
        "## Moorings",
        "### Winter berths",
        "Fees",
        "## C#",
    ]


def test_rst_levels_follow_the_order_underline_styles_first_appear() -> None:
    rst = "Guide\n=====\n\nintro\n\nMoorings\n--------\n\ntext\n\nWinter\n~~~~~~\n\nmore\n\nFees\n----\n\nend\n"
    assert [s.path for s in text_sections(rst, ".rst")] == [
        ("Guide",),
        ("Guide", "Moorings"),
        ("Guide", "Moorings", "Winter"),
        ("Guide", "Fees"),
    ]
    assert text_sections("a\n\n-----\n\nb\n", ".rst") == ()  # a transition line is not a title


@pytest.mark.parametrize("text", ["# " + "#" * 50_000 + "x", ("word" * 3000 + " ") * 30, "# # # " * 20_000])
def test_long_lines_do_not_slow_heading_search(text: str) -> None:
    for ext in (".md", ".rst"):
        text_sections(text, ext)  # each pattern tries a line once: these return at once
    assert text_title("# Title #\nbody", ".md") == ("Title", 10)


def test_a_passage_never_runs_across_a_heading_and_knows_its_line(tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text(MARKDOWN)
    passages = ingest_paths(tmp_path, IngestOptions(chunk_size=200, chunk_overlap=0)).passages
    assert [(p.heading[-1], p.line) for p in passages] == [
        ("Harbour Guide", 3),
        ("Moorings", 5),
        ("Winter berths", 13),
        ("Fees", 17),
        ("C#", 22),  # a heading with nothing after it at the end of the file stays a passage of its own
    ]
    for passage in passages:
        assert MARKDOWN.splitlines()[passage.line - 1] in passage.text
        assert passage.title == "Harbour Guide"


def test_a_heading_only_section_joins_the_next() -> None:
    text = "Chapter 4\n\n4.1 Moorings\n\nBoats moor at the quay.\n\n4.2 Fees\n\nA night costs eleven crowns."
    sections = (
        Section(0, ("Chapter 4",)),
        Section(11, ("Chapter 4", "4.1 Moorings")),
        Section(49, ("Chapter 4", "4.2 Fees")),
    )
    doc = Document("d", "Manual", text, sections=sections)
    passages = document_passages(doc, "manual.txt", 200, 40)
    assert [(p.text, p.heading) for p in passages] == [
        ("Chapter 4\n\n4.1 Moorings\n\nBoats moor at the quay.", ("Chapter 4", "4.1 Moorings")),
        ("4.2 Fees\n\nA night costs eleven crowns.", ("Chapter 4", "4.2 Fees")),
    ]


def test_records_have_no_line_and_pdf_passages_have_their_page(tmp_path: Path) -> None:
    pytest.importorskip("pypdf")
    (tmp_path / "rows.jsonl").write_text('{"id": "r1", "title": "T", "text": "one two"}\n')
    (tmp_path / "tides.pdf").write_bytes(pdf_of(["High water at six.", "Low water at noon.", "High water again."]))
    passages = ingest_paths(tmp_path, IngestOptions(chunk_size=4, chunk_overlap=0)).passages
    by_text = {p.text.strip(): p for p in passages}
    assert (by_text["one two"].line, by_text["one two"].page) == (0, 0)
    assert [by_text[t].page for t in ("High water at six.", "Low water at noon.", "High water again.")] == [1, 2, 3]
    assert by_text["Low water at noon."].place() == "page 2"


def test_headings_lines_and_pages_survive_save_load_and_update(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text(MARKDOWN)
    (docs / "other.md").write_text("# Other\n\nNothing to see.\n")
    report = build_from_paths([docs])
    report.index.save(tmp_path / "idx")
    loaded = BM25Index.load(tmp_path / "idx")
    hit = loaded.search("fishing boats inner basin", k=1).passages[0]
    assert (hit.heading, hit.line, hit.page) == (("Harbour Guide", "Moorings", "Winter berths"), 13, 0)
    (docs / "other.md").write_text("# Other\n\n## Changed\n\nNew words about pilots.\n")
    update_from_paths(loaded, [docs])
    loaded.save(tmp_path / "idx")
    again = BM25Index.load(tmp_path / "idx")
    assert again.search("pilots", k=1).passages[0].heading == ("Other", "Changed")
    assert again.search("fishing boats inner basin", k=1).passages[0].line == 13  # kept rows keep theirs


def test_an_index_written_before_positions_opens_with_empty_headings(tmp_path: Path) -> None:
    """The folder was written by the code of main before heading paths and lines were kept (no heading or
    position arrays): it loads, searches, takes new passages, saves, and updates from its files."""
    index_dir = tmp_path / "index"
    shutil.copytree(BEFORE / "index", index_dir)
    old = BM25Index.load(index_dir, verify=True)
    hit = old.search("harbour master berths radio", k=1).passages[0]
    assert hit.title == "Harbour Guide" and "channel 12" in hit.text
    assert (hit.heading, hit.line, hit.page, hit.place()) == ((), 0, 0, "")
    old.add(
        [Passage(0, "extra.md", "Pilots", "Book a pilot on channel 14.", "extra.md", 0, 27, ("Pilots", "Booking"), 5)]
    )
    old.save(index_dir)
    new = BM25Index.load(index_dir, verify=True)
    assert new.search("pilot channel 14", k=1).passages[0].heading == ("Pilots", "Booking")
    assert new.search("harbour master berths radio", k=1).passages[0].heading == ()  # old rows: still empty
    # The index records its files where they were (another folder): updating from a copy reads them all again.
    shutil.copytree(BEFORE / "docs", tmp_path / "docs")
    report = update_from_paths(new, [tmp_path / "docs"])
    assert sorted(Path(p).name for p in report.added_files) == ["guide.md", "notes.jsonl"]
    new.save(index_dir)
    hit = BM25Index.load(index_dir).search("harbour master berths radio", k=1).passages[0]
    assert (hit.heading, hit.line) == (("Harbour Guide", "Moorings"), 5)


def test_a_damaged_position_array_is_one_clear_error(tmp_path: Path) -> None:
    report = build_from_paths([BEFORE / "docs"])
    report.index.save(tmp_path / "idx")
    generation = next(p for p in (tmp_path / "idx").iterdir() if p.name.startswith("g"))
    np.save(generation / "p_line.npy", np.zeros(1, np.int32))  # the wrong length
    with pytest.raises(RetrievalError, match="p_line.npy"):
        BM25Index.load(tmp_path / "idx", verify=False)
