"""HTML pages keep their main content only, with a section for each heading: one real page of each kind that
documentation is written in (tests/retrieval/html_pages, written for these tests), read through lxml and through
the standard library's parser, which must agree."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offline_agent.retrieval import ingest_paths
from offline_agent.retrieval.readers.base import Fields
from offline_agent.retrieval.readers.html import HTMLReader, _read_lxml, _read_stdlib, html_content
from offline_agent.retrieval.readers.html_content import collapse_spaces, page_title

PAGES = Path(__file__).parent / "html_pages"

# page: (title, words that must stay, chrome that must go, heading paths of its sections)
EXPECTED = {
    "sphinx.html": (
        "Tide Tables",
        ["high and low water", "westerly wind", "Their range reaches 4.2 metres."],
        ["Navigation", "Previous topic", "Next topic", "This Page", "Quick search", "Copyright", "¶", "2.1 documen"],
        [("Tide Tables",), ("Tide Tables", "Reading a table"), ("Tide Tables", "Reading a table", "Spring tides")],
    ),
    "docbook.html": (
        "4.2. Mooring Lines",
        ["two bollards", "16 millimetres", "Chains are not allowed", "over 10 m 20 mm"],
        ["Prev", "Up", "Home", "Next", "Chapter 4. Moorings", "Table of Contents", "4.1. Introduction"],
        [("4.2. Mooring Lines",), ("4.2. Mooring Lines", "4.2.1. Rope")],  # the note's heading is no section
    ),
    "mkdocs.html": (
        "Anchoring",
        ["forbidden", "eight to fifteen metres", "Keep clear of the ferry lane."],
        ["Skip to content", "Harbour Guide", "Search", "Home", "Docs", "Previous", "Next", "Made with", "¶"],
        [("Anchoring",), ("Anchoring", "Outer roads")],
    ),
    "docusaurus.html": (
        "Pilotage",
        ["Vessels over 80 metres", "VHF channel 14"],
        ["Skip to main content", "Blog", "Introduction", "Home", "Edit this page", "Previous", "Copyright", "\u200b"],
        [("Pilotage",), ("Pilotage", "Booking")],
    ),
    "javadoc.html": (
        "TideClock (harbour 3.0 API)",
        ["time to the next high water", "minutesToHighWater()", "Minutes until the next high water."],
        ["Overview", "Help", "Summary:", "Copyright", "All rights reserved"],
        [("Class TideClock",), ("Class TideClock", "Method Summary")],
    ),
    # DocBook's reference entries: each term of a description list heads its description, one level below the
    # headings; a nested list's terms nest; after a list, the section around it goes on; a note's list is no entry
    "reference.html": (
        "5.3. Berth Settings",
        ["max_berths (integer)", "The default is 40 boats.", "Count a catamaran as two hulls.", "--wind=knots"],
        ["Prev", "Next", "Chapter 5. Harbour Settings"],
        [
            ("5.3. Berth Settings",),
            ("5.3. Berth Settings", "5.3.1. Sizes"),
            ("5.3. Berth Settings", "5.3.1. Sizes", "max_berths (integer)"),
            ("5.3. Berth Settings", "5.3.1. Sizes", "berth_length (integer)"),
            ("5.3. Berth Settings", "5.3.1. Sizes", "berth_length (integer)", "short"),
            ("5.3. Berth Settings", "5.3.1. Sizes", "berth_length (integer)", "long"),
            ("5.3. Berth Settings", "5.3.1. Sizes", "berth_length (integer)"),  # "The default is short."
            ("5.3. Berth Settings", "5.3.1. Sizes", "-w knots --wind=knots"),  # a <br> between the option's forms
            ("5.3. Berth Settings", "5.3.2. Fees"),
        ],
    ),
    "plain.html": (
        "Our Boat Club",
        ["every Thursday at seven", "Round the island", "Write to the secretary"],
        ["News", "Join", "Links", "Weather", "Last changed", "Top of page"],
        [("Our Boat Club",), ("Our Boat Club", "Racing"), ("Our Boat Club", "Contact")],
    ),
}


@pytest.mark.parametrize("page", sorted(EXPECTED))
def test_a_page_keeps_its_content_and_drops_its_chrome(page: str) -> None:
    title, kept, chrome, paths = EXPECTED[page]
    got_title, text, sections = html_content((PAGES / page).read_text(encoding="utf-8"))
    assert got_title == title
    for words in kept:
        assert words in text, words
    for words in chrome:
        assert words not in text, words
    assert [s.path for s in sections] == paths
    for before, section in zip([None, *sections], sections, strict=False):
        if before is not None and before.path[: len(section.path)] == section.path:
            continue  # the section around a description list, after the list: it starts at the text that follows
        # a section starts where its heading's text does (a heading is kept on one line)
        assert " ".join(text[section.start : section.start + 200].split()).startswith(section.path[-1])


@pytest.mark.parametrize("page", sorted(EXPECTED))
def test_lxml_and_the_standard_library_read_a_page_alike(page: str) -> None:
    html = (PAGES / page).read_text(encoding="utf-8")
    assert _read_lxml(html) == _read_stdlib(html).result()


@pytest.mark.parametrize("page", sorted(EXPECTED))
def test_the_file_reads_as_its_text_does(page: str) -> None:
    # The reader hands a UTF-8 file's bytes to lxml as they are; with a byte-order mark, or a NUL past the first
    # 8 KB (dropped from the text), it encodes the decoded text instead: the page reads the same each way.
    data = (PAGES / page).read_bytes()
    text = data.decode("utf-8")
    for raw in (data, b"\xef\xbb\xbf" + data, data + b" " * 9000 + b"\x00\n"):
        (doc,), _ = HTMLReader().read(PAGES / page, raw, page, Fields())
        assert (doc.title, doc.text, doc.sections) == html_content(text)


@pytest.mark.parametrize(
    "html",
    [
        "",
        "just text",
        "<p>a<p>b",
        "<html><body><nav>menu</nav></body></html>",
        "<main></main><p>outside</p>",  # a main element without text: the rest of the page is kept
        "<h2></h2><h2>Second</h2><p>x",
        "<div>" * 3000 + "deep" + "</div>" * 3000 + "<p>after",  # past libxml2's 2,048 levels: the fallback reads it
        "<title>T</title><svg><title>icon</title></svg><p>body",
        "<p>a\ue000b</p><h1>H</h1>",  # the page holds the heading marker itself
        "<p>a\ue001b</p><dl><dt>T</dt><dd>d</dd></dl>after",  # and the list end's
        "<dl><dt>a<dt>b<dd>c</dl><p>d",  # terms without descriptions, end tags left out
        "<dl><dt><h3>In a term</h3></dt><dd>x</dd></dl><h2>H<dl><dt>In a heading</dt></dl></h2>",
        "<dt>no list</dt><dd>d</dd><p>e",
        "<html><body><dl role='main'><dt>Term</dt><dd>the list is the main content</dd></dl></body></html>",
        "<dl><dt></dt><dd>empty term</dd></dl><p>f",
        "<table><tr><td>a<td>b</table><br>c<hr>d",
        "<div class='toc-backref'><a class='toc-backref'>kept words</a></div>",
    ],
)
def test_odd_pages_read_alike_through_both_parsers(html: str) -> None:
    lxml_read = _read_lxml(html)
    stdlib_read = _read_stdlib(html).result()
    assert html_content(html) == stdlib_read
    assert lxml_read is None or lxml_read == stdlib_read


def test_odd_pages_keep_what_they_should() -> None:
    assert html_content("<main></main><p>outside</p>")[1] == "outside"
    assert html_content("<div>" * 3000 + "deep" + "</div>" * 3000 + "<p>after")[1] == "deep\n\nafter"
    assert html_content("<title>T</title><svg><title>icon</title></svg><p>body")[:2] == ("T", "body")
    assert html_content("<p>a\ue000b</p><h1>H</h1>")[1] == "ab\n\nH"
    assert html_content("<table><tr><td>a<td>b</table><br>c<hr>d")[1] == "a b\n\nc\n\nd"
    # an inline element is dropped for a whole class name only ("toc-backref" names where the link goes)
    assert html_content("<h2><a class='toc-backref'>Why tabs?</a><a class='headerlink'>¶</a></h2>")[1] == "Why tabs?"
    # a body whose class has a word of chrome in it is still the page
    assert html_content("<body class='navigation-with-keyboard'><p>text</p></body>")[1] == "text"


def test_the_title_loses_the_site_name_only_where_a_part_is_the_first_heading() -> None:
    assert page_title("Built-in Types — Python 3.11.2 documentation", "Built-in Types") == "Built-in Types"
    assert page_title("Pilotage | Harbour Docs", "Pilotage") == "Pilotage"
    assert page_title("Anchoring - Harbour Guide", "anchoring") == "Anchoring"
    assert page_title("TideClock (harbour 3.0 API)", "Class TideClock") == "TideClock (harbour 3.0 API)"
    assert page_title("", "Heading") == "Heading"


def test_a_pages_passages_carry_their_heading_path_and_line(tmp_path: Path) -> None:
    (tmp_path / "tides.html").write_bytes((PAGES / "sphinx.html").read_bytes())
    passages = ingest_paths(tmp_path).passages
    assert [(p.title, p.heading) for p in passages] == [
        ("Tide Tables", ("Tide Tables",)),
        ("Tide Tables", ("Tide Tables", "Reading a table")),
        ("Tide Tables", ("Tide Tables", "Reading a table", "Spring tides")),
    ]
    text = html_content((PAGES / "sphinx.html").read_text())[1]
    for passage in passages:  # the line of the extracted text the passage starts on
        assert passage.line == text.count("\n", 0, passage.start) + 1
        assert text[passage.start : passage.end] == passage.text


@given(st.text(alphabet=st.sampled_from(list(" \t\r\f\v\u00a0\nab")), max_size=60))
def test_spaces_collapse_as_the_three_patterns_did(text: str) -> None:
    import re

    expected = re.sub(r"[ \t\r\f\v\u00a0]+", " ", text)
    expected = re.sub(r" ?\n ?", "\n", expected)
    assert collapse_spaces(text) == re.sub(r"\n{3,}", "\n\n", expected).strip()
