"""Duplicate documents are indexed once and noted, through builds and updates; files read by worker processes give
the same passages as files read in one."""

from __future__ import annotations

import functools
import os
from pathlib import Path

from offline_agent.retrieval import IngestOptions, build_from_paths, ingest_paths, update_from_paths
from offline_agent.retrieval.duplicates import source_copy_of
from offline_agent.retrieval.ingest import _read_with, walk
from offline_agent.retrieval.parallel import read_in_processes

PAGE = "<html><head><title>Tides</title></head><body><h1>Tides</h1><p>High water comes {when}.</p></body></html>"
SOURCE = "Tides\n=====\n\nHigh water comes {when}.\n"


def _files(report) -> dict[str, dict]:
    return {Path(k).name: v for k, v in report.index.extra["files"].items()}


def _texts(index) -> list[str]:
    return sorted(index.passage(int(i)).text for i in index.ids())


def test_the_same_text_under_two_paths_is_indexed_once(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Quay\n\nThe quay is 200 metres long.\n")
    (tmp_path / "copy").mkdir()
    (tmp_path / "copy" / "a.md").write_text("# Quay\n\nThe quay is 200 metres long.\n")
    (tmp_path / "b.md").write_text("# Pier\n\nThe pier is shorter.\n")
    report = build_from_paths([tmp_path])
    assert report.ingested.duplicates == [(str(tmp_path / "copy" / "a.md"), str(tmp_path / "a.md"))]
    assert len(report.index) == 2
    record = report.index.extra["files"][str(tmp_path / "copy" / "a.md")]
    assert record["duplicate_of"] == str(tmp_path / "a.md") and record["passages"] == 0


def test_sphinx_source_copies_are_noted_beside_their_page(tmp_path: Path) -> None:
    (tmp_path / "_sources" / "guide").mkdir(parents=True)
    (tmp_path / "guide").mkdir()
    (tmp_path / "guide" / "tides.html").write_text(PAGE.format(when="twice a day"))
    (tmp_path / "_sources" / "guide" / "tides.rst.txt").write_text(SOURCE.format(when="twice a day"))
    (tmp_path / "_sources" / "guide" / "gone.rst.txt").write_text("Gone\n====\n\nIts page is not here.\n")
    report = build_from_paths([tmp_path])
    copy = str(tmp_path / "_sources" / "guide" / "tides.rst.txt")
    assert report.ingested.duplicates == [(copy, str(tmp_path / "guide" / "tides.html"))]
    assert [p.title for p in report.ingested.passages] == ["Gone", "Tides"]  # a copy without its page is indexed
    assert report.ingested.passages[0].heading == ("Gone",)
    assert source_copy_of("/d/_sources/a/b.rst.txt") == "/d/a/b.html"
    assert source_copy_of("/d/_sources/old.txt") == "/d/old.html"  # older Sphinx dropped the source suffix
    assert source_copy_of("/d/notes/b.rst.txt") is None


def test_an_update_that_changes_one_copy_does_the_right_thing(tmp_path: Path) -> None:
    first, second = tmp_path / "a.md", tmp_path / "b.md"
    first.write_text("# Quay\n\nThe quay is 200 metres long.\n")
    second.write_text("# Quay\n\nThe quay is 200 metres long.\n")
    report = build_from_paths([tmp_path])
    index = report.index
    assert _files(report)["b.md"]["duplicate_of"] == str(first) and len(index) == 1

    _rewrite(second, "# Quay\n\nThe quay was lengthened to 260 metres.\n")  # the copy changes: now its own text
    report = update_from_paths(index, [tmp_path])
    assert report.changed_files == [str(second)] and "duplicate_of" not in _files(report)["b.md"]
    assert _texts(index) == ["The quay is 200 metres long.", "The quay was lengthened to 260 metres."]

    _rewrite(second, "# Quay\n\nThe quay is 200 metres long.\n")  # the same text again: a duplicate once more
    report = update_from_paths(index, [tmp_path])
    assert _files(report)["b.md"]["duplicate_of"] == str(first)
    assert _texts(index) == ["The quay is 200 metres long."]

    _rewrite(first, "# Quay\n\nThe quay is closed for repairs.\n")  # the indexed one changes: its twin is indexed
    report = update_from_paths(index, [tmp_path])
    assert sorted(report.changed_files) == [str(first), str(second)]
    assert _texts(index) == ["The quay is 200 metres long.", "The quay is closed for repairs."]

    _rewrite(first, "# Quay\n\nThe quay is 200 metres long.\n")  # and back: the one indexed before keeps its place
    report = update_from_paths(index, [tmp_path])
    assert _files(report)["a.md"]["duplicate_of"] == str(second) and "duplicate_of" not in _files(report)["b.md"]
    assert _texts(index) == ["The quay is 200 metres long."]

    second.unlink()  # the indexed one goes: its twin is indexed in its place
    report = update_from_paths(index, [tmp_path])
    assert report.removed_files == [str(second)] and "duplicate_of" not in _files(report)["a.md"]
    assert _texts(index) == ["The quay is 200 metres long."]
    assert [index.passage(int(i)).source for i in index.ids()] == [str(first)]


def test_touching_a_file_without_changing_it_keeps_its_duplicate(tmp_path: Path) -> None:
    (tmp_path / "_sources").mkdir()
    page, copy = tmp_path / "tides.html", tmp_path / "_sources" / "tides.rst.txt"
    page.write_text(PAGE.format(when="twice a day"))
    copy.write_text(SOURCE.format(when="twice a day"))
    report = build_from_paths([tmp_path])
    index = report.index
    os.utime(page, ns=(page.stat().st_mtime_ns + 10**9,) * 2)
    report = update_from_paths(index, [tmp_path])
    assert report.changed_files == [] and _files(report)["tides.rst.txt"]["duplicate_of"] == str(page)
    _rewrite(page, PAGE.format(when="four times a day"))  # the page changes: its source copy is still its copy
    report = update_from_paths(index, [tmp_path])
    assert report.changed_files == [str(page)] and _files(report)["tides.rst.txt"]["duplicate_of"] == str(page)
    assert _texts(index) == ["Tides\n\nHigh water comes four times a day."]


def test_worker_processes_give_the_same_passages_in_the_same_order(tmp_path: Path) -> None:
    words = ["harbour", "quay", "tide", "berth", "pilot", "ferry", "buoy", "anchor", "mooring", "rope"]
    for n in range(12):  # enough files and bytes for the pool to be used
        body = "\n\n".join(
            f"## Part {k}\n\n" + " ".join(words[(n + k + i) % 10] for i in range(2600)) + "." for k in range(12)
        )
        (tmp_path / f"f{n:02d}.md").write_text(f"# File {n}\n\n{body}\n")
    (tmp_path / "same.md").write_text((tmp_path / "f03.md").read_text())
    (tmp_path / "bad.md").write_bytes(b"\xff\xfe\x00bad")
    options = IngestOptions(chunk_size=120, chunk_overlap=20)
    entries, _ = walk([tmp_path])
    read = functools.partial(_read_with, options)
    assert read_in_processes([(e, True) for e in entries], read, 2) is not None  # worth a pool of two
    one = ingest_paths(tmp_path, options, workers=1)
    two = ingest_paths(tmp_path, options, workers=2)
    assert one.passages == two.passages
    assert (one.files, one.skipped, one.duplicates) == (two.files, two.skipped, two.duplicates)
    assert one.duplicates == [(str(tmp_path / "same.md"), str(tmp_path / "f03.md"))]


def _rewrite(path: Path, text: str) -> None:
    """Write `text` and move the modification time on, so an update sees the change even within one clock tick."""
    before = path.stat().st_mtime_ns
    path.write_text(text)
    os.utime(path, ns=(before + 10**9, before + 10**9))


def test_worker_processes_answer_in_order_and_pass_an_error_on() -> None:
    """workers.ordered_map: the answers in the items' order whatever worker gave each; an exception a worker's
    function raised is raised here, and the workers stop."""
    from offline_agent.retrieval.workers import ordered_map

    assert list(ordered_map(abs, range(-40, 0), 2, doing="testing")) == list(range(40, 0, -1))
    answers = ordered_map(int, ["1", "2", "three", "4"], 2, doing="testing")
    assert next(answers) == 1
    try:
        list(answers)
    except ValueError as exc:
        assert "three" in str(exc)
    else:
        raise AssertionError("the worker's ValueError was not raised")
