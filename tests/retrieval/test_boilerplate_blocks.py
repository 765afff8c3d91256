"""Blocks of text a corpus's pages all repeat (a footer, a version banner), found from the corpus whatever the
pages' format, left out of passages (and kept in the index's record), with the lines of what stays unchanged, and
`--update` leaving out what a fresh build would."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from support import cli_env

from offline_agent.retrieval import BM25Index, IngestOptions, build_from_paths, update_from_paths
from offline_agent.retrieval.boilerplate import MIN_PAGES
from offline_agent.retrieval.boilerplate_blocks import (
    EDGE_BLOCKS,
    BlockBoilerplate,
    block_key,
    find_blocks,
    page_blocks,
)
from offline_agent.retrieval.readers import read_document_file
from offline_agent.retrieval.readers.base import Document, Section

FOOTER = "Copyright 2024 Acme Corp. All rights reserved."
BANNER = "This documentation is for version 3.2; see the latest."
TOPICS = ["gizmo", "sprocket", "widget", "flange", "gasket", "spindle", "bracket", "ratchet", "lever", "pulley"]


def markdown(topic: str, banner: str = BANNER, footer: str = FOOTER) -> str:
    return (
        f"# The {topic}\n\n{banner}\n\n## Use\n\nThe {topic} turns the shaft.\nOil the {topic} weekly.\n\n"
        f"## Care\n\nKeep the {topic} dry.\n\n---\n\n{footer}\n"
    )


def text(topic: str, banner: str = BANNER, footer: str = FOOTER) -> str:
    return f"{banner}\n\nNotes on the {topic}.\nThe {topic} is made of steel\nand lasts for years.\n\n{footer}\n"


def html(topic: str, banner: str = BANNER, footer: str = FOOTER) -> str:
    return (
        f"<html><head><title>The {topic}</title></head><body><p>{banner}</p><h1>The {topic}</h1>"
        f"<p>A {topic} holds the frame\ntogether.</p><h2>Sizes</h2><p>Each {topic} comes in three sizes.</p>"
        f"<p>{footer}</p></body></html>"
    )


WRITERS = {".md": markdown, ".txt": text, ".html": html}


def write_pages(root: Path, topics: list[str], **parts: str) -> Path:
    """A page per topic, Markdown, text and HTML in turn, each with the banner and the footer (or `parts`)."""
    root.mkdir(parents=True, exist_ok=True)
    for n, topic in enumerate(topics):
        suffix = list(WRITERS)[n % len(WRITERS)]
        (root / f"{topic}{suffix}").write_text(WRITERS[suffix](topic, **parts), encoding="utf-8")
    return root


def texts_of(index: BM25Index) -> dict[str, list[tuple[str, int]]]:
    """Each document's passages (text and line), in order."""
    out: dict[str, list[tuple[str, int]]] = {}
    for doc_id in sorted(index.doc_ids()):
        out[doc_id] = [(p.text, p.line) for p in index.passages_of(doc_id)]
    return out


def all_text(index: BM25Index) -> str:
    return "\n".join(index.passage(int(i)).text for i in index.ids())


def recorded(index: BM25Index) -> list[tuple[str, int]]:
    return [(b["text"], b["pages"]) for b in index.extra["boilerplate"]["blocks"]]


def cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "offline_agent.cli", *args], capture_output=True, text=True, env=cli_env(home),
        timeout=300,
    )  # fmt: skip


def test_a_footer_and_a_banner_every_page_repeats_are_left_out(tmp_path: Path) -> None:
    root = write_pages(tmp_path / "pages", TOPICS[:7])
    index = build_from_paths([root]).index
    assert recorded(index) == [(FOOTER, 7), (BANNER, 7)]
    assert "Acme" not in all_text(index) and "version 3.2" not in all_text(index)
    assert not index.search("Acme rights reserved").passages and not index.search("documentation version").passages
    assert "Oil the gizmo weekly." in all_text(index) and "Each widget comes in three sizes." in all_text(index)
    assert len(index.doc_ids()) == 7
    # The rule above the Markdown footer goes with it.
    assert [p.text for p in index.passages_of("gizmo.md")][-1] == "## Care\n\nKeep the gizmo dry."


@pytest.mark.parametrize("workers", [1, 2])
def test_lines_shown_under_answers_are_those_of_the_text_read(tmp_path: Path, workers: int) -> None:
    root = write_pages(tmp_path / "pages", TOPICS[:9])
    index = build_from_paths([root], workers=workers).index
    assert recorded(index) == [(FOOTER, 9), (BANNER, 9)]
    for path in sorted(root.iterdir()):
        (doc,), _ = read_document_file(path, path.read_bytes(), path.name, IngestOptions().fields)
        lines = doc.text.split("\n")
        for passage in index.passages_of(path.name):
            first = passage.text.split("\n")[0]
            assert lines[passage.line - 1].strip().startswith(first.strip()), (path.name, passage)
    gizmo = index.passages_of("gizmo.md")
    assert [p.line for p in gizmo] == [5, 10]  # "## Use" (the banner before it is gone) and "## Care"
    assert [p.text.split("\n")[0] for p in gizmo] == ["## Use", "## Care"]
    assert [p.heading for p in gizmo] == [("The gizmo", "Use"), ("The gizmo", "Care")]


def test_a_block_on_a_minority_of_the_pages_stays(tmp_path: Path) -> None:
    root = write_pages(tmp_path / "pages", TOPICS[:10], banner="Nothing to announce here.", footer="The end.")
    sponsored = "Sponsored by the Gizmo Foundation this year."
    for topic in TOPICS[:3]:
        path = next(root.glob(f"{topic}.*"))
        path.write_text(path.read_text(encoding="utf-8").replace("The end.", sponsored), encoding="utf-8")
    index = build_from_paths([root]).index
    assert recorded(index) == [("Nothing to announce here.", 10)]  # "The end." has too few words to count
    assert all_text(index).count(sponsored) == 3 and all_text(index).count("The end.") == 7


@pytest.mark.parametrize("pages", [1, 2, MIN_PAGES - 1])
def test_a_corpus_of_few_pages_is_untouched(tmp_path: Path, pages: int) -> None:
    index = build_from_paths([write_pages(tmp_path / "pages", TOPICS[:pages])]).index
    assert index.extra["boilerplate"]["blocks"] == []
    assert all_text(index).count(FOOTER) == pages and all_text(index).count(BANNER) == pages
    assert all_text(index).count("---") == (pages + 2) // 3  # the Markdown pages' rule too


def test_a_page_made_only_of_boilerplate_keeps_it(tmp_path: Path) -> None:
    root = write_pages(tmp_path / "pages", TOPICS[:6])
    (root / "stub.md").write_text(f"# Stub\n\n{BANNER}\n\n{FOOTER}\n", encoding="utf-8")
    (root / "bare.txt").write_text(f"{BANNER}\n\n{FOOTER}\n", encoding="utf-8")
    (root / "noted.txt").write_text(f"Note\n\n{BANNER}\n\n{FOOTER}\n", encoding="utf-8")  # a label is no page
    index = build_from_paths([root]).index
    assert recorded(index) == [(FOOTER, 9), (BANNER, 9)]
    assert texts_of(index)["stub.md"] == [(f"{BANNER}\n\n{FOOTER}", 3)]
    assert texts_of(index)["bare.txt"] == [(f"{BANNER}\n\n{FOOTER}", 1)]
    assert texts_of(index)["noted.txt"] == [(f"Note\n\n{BANNER}\n\n{FOOTER}", 1)]
    found = {p.doc_id for p in index.search("Acme rights reserved", k=20).passages}
    assert found == {"stub.md", "bare.txt", "noted.txt"}


def test_records_are_no_pages_and_keep_their_text(tmp_path: Path) -> None:
    rows = [{"id": f"r{i}", "title": f"Row {i}", "text": f"Row {i} says hello.\n\n{FOOTER}"} for i in range(8)]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    index = build_from_paths([tmp_path]).index
    assert index.extra["boilerplate"]["blocks"] == [] and all_text(index).count(FOOTER) == 8
    assert index.extra["files"][str(tmp_path / "rows.jsonl")]["blocks"] is None


def test_only_the_edges_of_a_page_are_looked_at(tmp_path: Path) -> None:
    # An annotation that each page repeats among its entries is its content, not a footer: it stays.
    note = "Part of the stable interface."
    for topic in TOPICS[:7]:
        edge = "\n\n".join(f"Paragraph {k} on the {topic}." for k in range(EDGE_BLOCKS))
        entries = "\n\n".join(f"## {topic}_{k}()\n\nCall {topic} number {k}.\n\n{note}" for k in range(3))
        (tmp_path / f"{topic}.md").write_text(f"# {topic}\n\n{edge}\n\n{entries}\n\n{edge}\n")
    index = build_from_paths([tmp_path]).index
    assert index.extra["boilerplate"]["blocks"] == []
    assert all_text(index).count(note) == 7 * 3


def test_headings_and_short_blocks_are_no_boilerplate() -> None:
    text = "Intro text here.\n\nSee also\n\nRelated Pages Overview\n\nBody of it.\n"
    doc = Document("a.md", "A", text, sections=(Section(text.index("Related"), ("A", "Related Pages Overview")),))
    kept = [text[s:e] for s, e, _ in page_blocks(doc)]
    assert kept == ["Intro text here.", "Body of it."]  # a two-word line and a heading are not


def test_blocks_are_found_in_the_folder_that_holds_them() -> None:
    footer, other = block_key("Gizmo docs footer text"), block_key("something else entirely")
    pages = {f"other/o{i}.md": [other] if i < 5 else [] for i in range(40)}  # 5 of 40: chance
    pages |= {f"site/s{i}.md": [footer] for i in range(6)} | {f"site/deep/d{i}.md": [footer] for i in range(3)}
    pages |= {"site/x.md": []}
    assert find_blocks(pages) == {footer: 9}
    items = list(pages.items())
    random.Random(7).shuffle(items)
    assert find_blocks(dict(items)) == {footer: 9}
    assert find_blocks(dict(list(pages.items())[: MIN_PAGES - 1])) == {}


def test_the_record_reads_back() -> None:
    found = BlockBoilerplate(((block_key(FOOTER), FOOTER, 9), (block_key(BANNER), BANNER, 7)))
    assert BlockBoilerplate.from_dict(found.to_dict()) == found
    assert not BlockBoilerplate.from_dict({"title_suffixes": []})  # an index written before blocks were looked for


def test_update_leaves_out_what_a_fresh_build_would(tmp_path: Path) -> None:
    root = write_pages(tmp_path / "pages", TOPICS[:4])  # too few pages: nothing is boilerplate
    index = build_from_paths([root]).index
    assert all_text(index).count(FOOTER) == 4

    write_pages(root, TOPICS[:7])  # three more pages: the footer and the banner are the corpus's
    report = update_from_paths(index, [root])
    fresh = build_from_paths([root]).index
    assert texts_of(index) == texts_of(fresh) and recorded(index) == recorded(fresh) == [(FOOTER, 7), (BANNER, 7)]
    assert sorted(Path(p).name for p in report.changed_files) == [
        "flange.md",
        "gizmo.md",
        "sprocket.txt",
        "widget.html",
    ]
    assert sorted(Path(p).name for p in report.added_files) == ["bracket.md", "gasket.txt", "spindle.html"]
    query = "gizmo shaft"
    assert _scores(index, query) == _scores(fresh, query)

    (root / "spindle.html").unlink()
    (root / "gasket.txt").unlink()  # five pages: still the corpus's
    update_from_paths(index, [root])
    assert texts_of(index) == texts_of(build_from_paths([root]).index)
    assert recorded(index) == [(FOOTER, 5), (BANNER, 5)]

    (root / "bracket.md").unlink()  # four: no longer
    report = update_from_paths(index, [root])
    assert texts_of(index) == texts_of(build_from_paths([root]).index) and recorded(index) == []
    assert all_text(index).count(FOOTER) == 4 and len(report.changed_files) == 4

    for topic in TOPICS[4:]:  # six pages under another footer: that one is, the first one is too few
        (root / f"{topic}.md").write_text(markdown(topic, footer="Written by the Widget Guild, all years."))
    update_from_paths(index, [root])
    fresh = build_from_paths([root]).index
    assert texts_of(index) == texts_of(fresh) and recorded(index) == recorded(fresh)
    assert recorded(index) == [(BANNER, 10), ("Written by the Widget Guild, all years.", 6)]


def _scores(index: BM25Index, query: str) -> dict[tuple[str, str], float]:
    result = index.search(query, k=100)
    return {(p.doc_id, p.text): float(s) for p, s in zip(result.passages, result.scores, strict=True)}


def test_an_update_with_the_same_blocks_reads_only_what_changed(tmp_path: Path) -> None:
    root = write_pages(tmp_path / "pages", TOPICS[:7])
    index = build_from_paths([root]).index
    (root / "gizmo.md").write_text(markdown("gizmo").replace("weekly", "daily"), encoding="utf-8")
    report = update_from_paths(index, [root])
    assert report.changed_files == [str(root / "gizmo.md")] and report.unchanged_files == 6
    assert texts_of(index) == texts_of(build_from_paths([root]).index)
    assert "Oil the gizmo daily." in all_text(index) and FOOTER not in all_text(index)


def test_an_index_written_before_blocks_were_looked_for_is_read_again(tmp_path: Path) -> None:
    root = write_pages(tmp_path / "pages", TOPICS[:7])
    index = build_from_paths([root], options=IngestOptions()).index
    for record in index.extra["files"].values():  # as an older version recorded it
        del record["blocks"]
    del index.extra["boilerplate"]["blocks"]
    report = update_from_paths(index, [root])
    assert texts_of(index) == texts_of(build_from_paths([root]).index)
    assert recorded(index) == [(FOOTER, 7), (BANNER, 7)] and report.unchanged_files == 0


def test_the_cli_lists_the_blocks_and_search_finds_none_of_them(tmp_path: Path) -> None:
    root = write_pages(tmp_path / "pages", TOPICS[:7])
    home = tmp_path / "home"
    done = cli("index", str(root), "--name", "demo", home=home)
    assert done.returncode == 0, done.stderr
    listed = [
        "2 repeated blocks left out of passages as boilerplate:",
        f"  {FOOTER!r} (7 pages)",
        f"  {BANNER!r} (7 pages)",
    ]
    assert "\n".join(listed) in done.stdout
    info = cli("index", "info", "demo", home=home)
    assert "\n".join(listed) in info.stdout
    as_json = json.loads(cli("index", "info", "demo", "--json", home=home).stdout)
    assert [b["text"] for b in as_json["boilerplate"]["blocks"]] == [FOOTER, BANNER]
    found = json.loads(cli("search", "Acme Corp rights reserved", "--index", "demo", "--json", home=home).stdout)
    assert found["hits"] == []
    found = json.loads(cli("search", "gizmo", "--index", "demo", "--json", home=home).stdout)
    assert found["hits"] and not any("Acme" in h["text"] for h in found["hits"])


def test_the_cli_shortens_and_escapes_what_it_shows(tmp_path: Path) -> None:
    odd = "A notice\x1b[31m in red that goes on " + "and on " * 20
    root = write_pages(tmp_path / "pages", TOPICS[:6], footer=odd)
    home = tmp_path / "home"
    done = cli("index", str(root), "--name", "demo", home=home)
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("  'A notice"))
    assert "\x1b" not in line and "…" in line and line.endswith("(6 pages)") and len(line) < 120


def test_worker_processes_find_and_leave_out_the_same_blocks(tmp_path: Path) -> None:
    from offline_agent.retrieval import parallel

    root = tmp_path / "pages"
    root.mkdir()
    body = "\n\n".join(f"Paragraph {k} on the {{topic}}, its care and its uses." for k in range(4000))
    for topic in TOPICS:  # large enough to be read by the worker processes, the second time too
        (root / f"{topic}.md").write_text(markdown(topic).replace("## Care", body.format(topic=topic) + "\n\n## Care"))
    assert len(TOPICS) >= parallel.MIN_FILES and sum(p.stat().st_size for p in root.iterdir()) >= parallel.MIN_BYTES
    one, two = build_from_paths([root]).index, build_from_paths([root], workers=2).index
    assert recorded(two) == recorded(one) == [(FOOTER, 10), (BANNER, 10)]
    assert texts_of(two) == texts_of(one) and FOOTER not in all_text(two)
