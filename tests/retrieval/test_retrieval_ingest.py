"""Ingestion: every format, chunk offsets, and every bad input skipped with a reason (never a crash)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from support import pdf_of

from offline_agent.errors import RetrievalError
from offline_agent.retrieval import IngestOptions, ingest_paths, open_corpus


def _reasons(ingested) -> dict[str, str]:
    return {Path(p).name: r for p, r in ingested.skipped}


def test_text_markdown_rst_and_html(docs_dir: Path) -> None:
    (docs_dir / "guide.rst").write_text("User Guide\n==========\n\nInstall it first.", encoding="utf-8")
    ingested = ingest_paths(docs_dir)
    by_doc = {p.doc_id: p for p in ingested.passages}
    assert sorted(by_doc) == ["eiffel.md", "guide.rst", "more/page.html", "thames.txt"]
    assert by_doc["eiffel.md"].title == "Eiffel Tower"
    assert by_doc["eiffel.md"].text.startswith("The Eiffel Tower")
    assert by_doc["thames.txt"].title == "thames"
    assert by_doc["guide.rst"].title == "User Guide" and by_doc["guide.rst"].text == "Install it first."
    html = by_doc["more/page.html"]
    assert html.title == "Big Ben" and "bell of the clock tower" in html.text
    assert "var tower" not in html.text and "<" not in html.text
    assert [p.id for p in ingested.passages] == list(range(len(ingested.passages)))


def test_offsets_point_into_the_source_document(tmp_path: Path) -> None:
    sentences = [f"Sentence number {i} talks about item{i} in some detail." for i in range(200)]
    text = "# Long\n\n" + " ".join(sentences)
    (tmp_path / "long.md").write_text(text, encoding="utf-8")
    passages = ingest_paths(tmp_path, IngestOptions(chunk_size=50, chunk_overlap=10)).passages
    assert len(passages) > 10
    for p in passages:
        assert text[p.start : p.end] == p.text
        assert len(p.text.split()) <= 50
        assert p.text.startswith("Sentence") and p.text.endswith(".")  # sentence boundaries kept
    assert passages[0].start == text.index("Sentence number 0")
    assert passages[-1].end == len(text)
    assert passages[1].start < passages[0].end  # overlap


def test_jsonl_hotpot_and_beir_shapes_and_broken_lines(tmp_path: Path) -> None:
    lines = [
        json.dumps({"id": "hp1", "title": "Ed Wood", "text": "Ed Wood is a 1994 film."}),
        "{broken json",
        json.dumps({"_id": "b2", "title": "T", "text": "BEIR style row."}),
        json.dumps({"question": "no text here"}),
        "",
        json.dumps(["not", "an", "object"]),
    ]
    (tmp_path / "pool.jsonl").write_text("\n".join(lines), encoding="utf-8")
    ingested = ingest_paths(tmp_path)
    assert [(p.doc_id, p.title) for p in ingested.passages] == [("hp1", "Ed Wood"), ("b2", "T")]
    notes = [n for _, n in ingested.notes]
    assert notes[0].startswith("line 2: invalid JSON")
    assert notes[1].startswith("line 4: no 'text/contents/content' field")
    assert notes[2].startswith("line 6: not a JSON object")


def test_json_list_and_object_of_records_and_custom_fields(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps([{"body": "first body", "name": "One", "key": "k1"}]))
    (tmp_path / "b.json").write_text(json.dumps({"x1": {"text": "keyed record"}}))
    (tmp_path / "c.json").write_text(json.dumps({"question": "no records"}))
    ingested = ingest_paths(tmp_path, IngestOptions(text_field=None, id_field="key"))
    assert [(p.doc_id, p.title, p.text) for p in ingested.passages] == [
        ("k1", "One", "first body"),
        ("x1", "", "keyed record"),
    ]
    assert _reasons(ingested)["c.json"].startswith("no records")


def test_csv_with_text_column_and_without(tmp_path: Path) -> None:
    (tmp_path / "good.csv").write_text('id,title,text\n1,First,"Hello, world."\n2,Second,Another row\n')
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n")
    (tmp_path / "data.tsv").write_text("doc_id\tcontent\nz\tTab separated text\n")
    ingested = ingest_paths(tmp_path)
    assert [(p.doc_id, p.title, p.text) for p in ingested.passages] == [
        ("z", "", "Tab separated text"),
        ("1", "First", "Hello, world."),
        ("2", "Second", "Another row"),
    ]
    assert _reasons(ingested)["bad.csv"] == "no text column (columns: a, b); choose one with --text-field"
    picked = ingest_paths(tmp_path / "bad.csv", IngestOptions(text_field="b"))
    assert [p.text for p in picked.passages] == ["2"]


def _minimal_pdf(text: str) -> bytes:
    return pdf_of([text])


def test_pdf_with_pypdf(tmp_path: Path) -> None:
    pytest.importorskip("pypdf")
    (tmp_path / "paper.pdf").write_bytes(_minimal_pdf("Hello from a PDF file"))
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 garbage")
    ingested = ingest_paths(tmp_path)
    assert [(p.doc_id, p.title, p.text.strip()) for p in ingested.passages] == [
        ("paper.pdf", "paper", "Hello from a PDF file")
    ]
    assert _reasons(ingested)["broken.pdf"].startswith("unreadable PDF")


def test_pdf_without_pypdf_is_skipped_with_a_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pypdf", None)  # importing it now raises ImportError
    (tmp_path / "paper.pdf").write_bytes(_minimal_pdf("Hello"))
    (tmp_path / "note.txt").write_text("some text")
    ingested = ingest_paths(tmp_path)
    assert _reasons(ingested) == {"paper.pdf": "PDF needs pypdf (pip install 'offline-agent[pdf]')"}


def test_bad_inputs_are_skipped_with_reasons(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "bad"
    root.mkdir()
    (root / "good.txt").write_text("Readable text stays.")
    (root / "binary.txt").write_bytes(b"\x7fELF\x00\x00\x01binary")
    (root / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (root / "empty.md").write_bytes(b"")
    (root / "blank.md").write_text("   \n\n ")
    (root / "huge.txt").write_text("x" * 5000)
    (root / "image.png").write_bytes(b"\x89PNG")
    (root / "locked.txt").write_text("secret")
    (root / ".hidden.txt").write_text("hidden")
    (root / "loop").symlink_to(root, target_is_directory=True)
    (root / "dangling.txt").symlink_to(root / "missing.txt")
    (root / "self.txt").symlink_to(root / "self.txt")

    real_read = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self.name == "locked.txt":
            raise PermissionError(13, "Permission denied")
        return real_read(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    ingested = ingest_paths(root, IngestOptions(max_file_bytes=4096))
    assert [p.text for p in ingested.passages] == ["Readable text stays."]
    reasons = _reasons(ingested)
    assert reasons["binary.txt"] == "binary file (NUL bytes)"
    assert reasons["latin1.txt"] == "not valid UTF-8 (byte 0xe9 at offset 3)"
    assert reasons["empty.md"] == "empty file"
    assert reasons["blank.md"] == "no text"
    assert reasons["huge.txt"] == "too large (4.9 KB > 4.0 KB; raise --max-file-size)"
    assert reasons["image.png"] == "unsupported file type .png"
    assert reasons["locked.txt"] == "permission denied"
    assert reasons["loop"].startswith("symlink loop")
    assert reasons["dangling.txt"] == "broken symlink"
    assert reasons["self.txt"] == "symlink loop"
    assert ".hidden.txt" not in reasons
    assert ingested.skip_summary().startswith("10 files skipped: ")


def test_unreadable_folder_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "ok.txt").write_text("fine")
    (tmp_path / "private").mkdir()
    real_scandir = os.scandir

    def scandir(path):
        if str(path).endswith("private"):
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    assert _reasons(ingest_paths(tmp_path)) == {"private": "permission denied"}


def test_a_gigantic_single_line_is_chunked_into_bounded_passages(tmp_path: Path) -> None:
    line = ("word" * 3000 + " ") * 30 + "tail"  # 30 "words" of 12,000 characters, no sentence end
    (tmp_path / "line.txt").write_text(line)
    passages = ingest_paths(tmp_path, IngestOptions(chunk_size=100, chunk_overlap=0)).passages
    assert all(len(p.text) <= 1200 for p in passages)
    assert "".join(p.text for p in passages).replace(" ", "") == line.replace(" ", "")


def test_open_corpus_errors(tmp_path: Path) -> None:
    with pytest.raises(RetrievalError, match=f"corpus not found: {tmp_path / 'nope'}"):
        open_corpus(tmp_path / "nope")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "a.bin").write_bytes(b"\x00\x01")
    (empty / "b.txt").write_bytes(b"")
    with pytest.raises(RetrievalError) as err:
        open_corpus(empty)
    assert str(err.value) == (f"corpus is empty: {empty} (2 files skipped: unsupported file type .bin; empty file)")


def test_open_corpus_accepts_folders_files_indexes_and_names(docs_dir: Path, tmp_path: Path) -> None:
    from offline_agent.retrieval import index_path

    built = open_corpus(docs_dir)
    assert built.search("eiffel").passages[0].doc_id == "eiffel.md"
    single = open_corpus(docs_dir / "thames.txt")
    assert [p.doc_id for p in single.search("thames").passages] == ["thames.txt"]
    built.save(tmp_path / "saved")
    assert len(open_corpus(tmp_path / "saved")) == len(built)
    built.save(index_path("mine"))
    assert len(open_corpus("mine")) == len(built)


def test_several_roots_prefix_doc_ids(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "README.md").write_text(f"# {name}\n\nroot {name}")
    ids = sorted(p.doc_id for p in ingest_paths([tmp_path / "a", tmp_path / "b"]).passages)
    assert ids == ["a/README.md", "b/README.md"]
