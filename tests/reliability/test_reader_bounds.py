"""Hostile files for the readers (issue 73): every file in, nothing lost, nothing hangs, memory bounded.

Each case builds its file with tests/hostile_inputs.py and indexes it with the CLI (exit status, one line, what
was indexed) or reads it with the reader (what it holds, the memory Python allocated on the way, measured with
tracemalloc). A case that could hang runs under a bound far past what the fixed reader needs (`cli_bounded`), so
that the code before the fix shows as a hang rather than holding the suite. Time grows linearly with the input:
`test_work_is_linear_in_the_input` counts the function calls of each reader at n and 2n (never the seconds).
"""

from __future__ import annotations

import json
import sys
import tracemalloc
from pathlib import Path

import hostile_inputs as hostile
import pytest
from harness import cli, cli_bounded, outcome_of

from offline_agent.retrieval.readers import Fields, ReadLimits, SkipFile, read_document_file

CONTROL_CHARACTERS = {"form feed": "\x0c", "escape": "\x1b", "backspace": "\x08", "SOH": "\x01", "VT": "\x0b"}
BLOCKS = ("p", "pre", "h1", "div")
HANG = 90  # seconds: the fixed readers need one or two; the quadratic ones took minutes


def index_json(folder: Path, tmp_path: Path, *args: str, timeout: float = HANG) -> tuple[dict | None, object]:
    """`index FOLDER --json` as a user runs it: the summary (None when the run failed or hung) and the run."""
    result = cli_bounded("index", str(folder), "--name", "t", "--json", *args, timeout=timeout, home=tmp_path / "h")
    if result is None or result.returncode != 0:
        return None, result
    return json.loads(result.stdout), result


def index_files(tmp_path: Path, files: dict[str, bytes], *args: str) -> tuple[dict | None, object, list[str]]:
    """`index_json` of a folder holding `files` (name -> bytes), and the notes on what was skipped inside them."""
    folder = tmp_path / "files"
    folder.mkdir(exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    summary, result = index_json(folder, tmp_path, *args)
    return summary, result, [] if summary is None else [n["reason"] for n in summary["skipped_records"]]


def read(name: str, data: bytes, limits: ReadLimits | None = None) -> tuple[list, list[str]]:
    return read_document_file(Path(name), data, name, Fields(limits=limits or ReadLimits()))


def peak_mib(name: str, data: bytes, limits: ReadLimits | None = None) -> tuple[float, object]:
    """MiB Python allocated at most while the reader read `data` (lxml's own C memory aside), and its outcome."""
    tracemalloc.start()
    try:
        outcome: object = read(name, data, limits)
    except SkipFile as why:
        outcome = str(why)
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak / (1 << 20), outcome


# ---- HTML ------------------------------------------------------------------------------------------------------
def test_a_control_character_in_a_block_loses_nothing(tmp_path: Path, ledger) -> None:
    folder = tmp_path / "pages"
    folder.mkdir()
    for label, char in CONTROL_CHARACTERS.items():
        for tag in BLOCKS:
            (folder / f"{label.replace(' ', '-')}-{tag}.html").write_bytes(hostile.html_control_character(char, tag))
    summary, result = index_json(folder, tmp_path)
    pages = len(CONTROL_CHARACTERS) * len(BLOCKS)
    ok = summary is not None and summary["files_read"] == pages and not summary["skipped"]
    for _ in range(pages):  # one case a page: the run before the fix lost them all
        ledger.record("html", outcome_of(result, ok))
    assert ok, summary["skipped"] if summary else getattr(result, "stderr", "hang")
    docs, _ = read("p.html", hostile.html_control_character("\x1b", "p"))
    assert "before\x1bafter harbour" in docs[0].text


def test_a_page_crowded_with_attributes_is_read_in_linear_time(tmp_path: Path, ledger) -> None:
    summary, result, _ = index_files(tmp_path, {"crowded.html": hostile.html_crowded(60_000)})
    ok = summary is not None and summary["files_read"] == 1 and summary["passages"] >= 1
    ledger.record("html", outcome_of(result, ok))
    assert ok, getattr(result, "stderr", "hang")
    docs, _ = read("crowded.html", hostile.html_crowded(5000))
    assert "harbour lantern keeper storm crowded" in docs[0].text and "after the crowd" in docs[0].text


def test_a_latin1_page_that_declares_its_charset_is_read(tmp_path: Path, ledger) -> None:
    try:
        docs, _ = read("latin1.html", hostile.html_latin1())
        ok = docs[0].title == "Crème brûlée" and "Café au lait" in docs[0].text
    except SkipFile:
        ok = False
    ledger.record("html", "handled" if ok else "lost")
    assert ok


def test_a_page_past_the_part_bound_is_read_up_to_it_with_one_line(tmp_path: Path, ledger) -> None:
    page = hostile.html_paragraphs(20_000)  # about 800 KB
    summary, result, notes = index_files(tmp_path, {"long.html": page}, "--limit", "part-bytes=64KB")
    ok = summary is not None and summary["files_read"] == 1 and any("part-bytes bound (64 KB" in n for n in notes)
    ledger.record("html", outcome_of(result, ok))
    assert ok, (notes, getattr(result, "stderr", "hang"))


# ---- DOCX ------------------------------------------------------------------------------------------------------
def test_a_docx_of_many_paragraphs_in_many_styles_is_read_in_linear_time(tmp_path: Path, ledger) -> None:
    # 2,000 paragraphs in 2,000 styles took 142 s before the fix
    summary, result, _ = index_files(tmp_path, {"styles.docx": hostile.docx_paragraphs(2500)})
    ok = summary is not None and summary["files_read"] == 1 and not summary["skipped"]
    ledger.record("docx", outcome_of(result, ok))
    assert ok, getattr(result, "stderr", "hang")


# (area, file, its bytes, the reason it is skipped): a DOCX that declares 2 KB and inflates to 200 MB, a chapter
# that inflates to 100 MB (past the default part bound); each skipped before more than a few MB are held
ZIP_BOMBS = {
    "lying docx": ("docx", "lying.docx", lambda: hostile.docx_lying(200 << 20), "past the size its zip declares"),
    "big chapter": ("epub", "big.epub", lambda: hostile.epub_inflating(100 << 20), "part-bytes bound (64 MB"),
}


@pytest.mark.parametrize("case", sorted(ZIP_BOMBS))
def test_a_zip_that_inflates_past_a_bound_is_skipped_in_bounded_memory(case: str, ledger) -> None:
    area, name, make, reason = ZIP_BOMBS[case]
    peak, outcome = peak_mib(name, make())
    ok = isinstance(outcome, str) and reason in outcome and peak < 32
    ledger.record(area, "handled" if ok else "failed")
    assert ok, (peak, outcome)


def test_index_skips_a_lying_docx_with_one_line_and_indexes_the_rest(tmp_path: Path, ledger) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "lying.docx").write_bytes(hostile.docx_lying(8 << 20))
    (folder / "good.docx").write_bytes(hostile.docx_paragraphs(10))
    summary, result = index_json(folder, tmp_path)
    reasons = {} if summary is None else {Path(s["path"]).name: s["reason"] for s in summary["skipped"]}
    ok = summary is not None and summary["files_read"] == 1 and "zip bomb" in reasons.get("lying.docx", "")
    ledger.record("docx", outcome_of(result, ok))
    assert ok, (reasons, getattr(result, "stderr", "hang"))


# ---- EPUB ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("depth", [300, 1000, 3000])
def test_text_nested_deep_in_a_chapter_is_kept(depth: int, ledger) -> None:
    docs, _ = read("deep.epub", hostile.epub_deep(depth))
    text = "\n".join(doc.text for doc in docs)
    ok = "deep bottom" in text and "plain chapter" in text
    ledger.record("epub", "handled" if ok else "lost")
    assert ok, text[:300]


def test_text_below_the_depth_bound_is_kept_flattened(ledger) -> None:
    docs, _ = read("deep.epub", hostile.epub_deep(500), ReadLimits(depth=50))
    ok = "harbour lantern keeper storm deep bottom" in docs[0].text
    ledger.record("epub", "handled" if ok else "lost")
    assert ok


def test_index_reads_a_book_under_a_raised_bound(tmp_path: Path, ledger) -> None:
    folder = tmp_path / "books"
    folder.mkdir()
    (folder / "big.epub").write_bytes(hostile.epub_inflating(2 << 20))
    low, low_run = index_json(folder, tmp_path, "--limit", "part-bytes=1MB")
    high, high_run = index_json(folder, tmp_path, "--limit", "part-bytes=4MB")
    ok = low is None and "part-bytes bound (1 MB" in getattr(low_run, "stderr", "") and high is not None
    ok = ok and high["files_read"] == 1
    ledger.record("epub", outcome_of(high_run, ok))
    assert ok, (getattr(low_run, "stderr", "hang"), getattr(high_run, "stderr", "hang"))


# ---- mail and JSONL --------------------------------------------------------------------------------------------
def test_a_large_message_is_read_up_to_the_bound_in_bounded_memory(ledger) -> None:
    peak, outcome = peak_mib("big.mbox", hostile.mbox_with_big_message(8 << 20), ReadLimits(message_bytes=1 << 20))
    titles = [doc.title for doc in outcome[0]] if isinstance(outcome, tuple) else []
    notes = outcome[1] if isinstance(outcome, tuple) else []
    ok = titles == ["First", "Big", "Last"] and any("message-bytes bound (1 MB" in n for n in notes) and peak < 40
    ledger.record("mail", "handled" if ok else "failed")
    assert ok, (peak, titles, notes)


def test_index_reads_every_message_of_an_mbox_with_a_message_past_the_default_bound(tmp_path: Path, ledger) -> None:
    summary, result, notes = index_files(tmp_path, {"big.mbox": hostile.mbox_with_big_message(20 << 20)})
    ok = summary is not None and summary["documents"] == 3 and any("message-bytes bound (16 MB" in n for n in notes)
    ledger.record("mail", outcome_of(result, ok))
    assert ok, (notes, getattr(result, "stderr", "hang"))


def test_a_jsonl_line_that_is_not_utf8_loses_only_its_record(tmp_path: Path, ledger) -> None:
    summary, result, notes = index_files(tmp_path, {"records.jsonl": hostile.jsonl_with_bad_line(5)})
    ok = (
        summary is not None
        and summary["documents"] == 4
        and notes == ["line 2: not valid UTF-8 (byte 0xe9 at column 26)"]
    )
    ledger.record("jsonl", outcome_of(result, ok))
    assert ok, (notes, getattr(result, "stderr", "hang"))


def test_a_bad_limit_is_one_line(tmp_path: Path, ledger) -> None:
    result = cli("index", str(tmp_path), "--name", "t", "--limit", "depth=deep", home=tmp_path / "h")
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    ok = result.returncode != 0 and "Traceback" not in result.stderr and len(lines) == 1 and "--limit" in lines[0]
    ledger.record("reader bounds", outcome_of(result, ok))
    assert ok, result.stderr


# ---- time linear in the input ----------------------------------------------------------------------------------
def work(name: str, data: bytes) -> int:
    """Lines of Python run and functions called (C ones too) while reading `data`: the reader's work, counted,
    not timed (a loop in Python shows in its lines, a call into C in its calls)."""
    count = 0

    def lines(frame, event, arg):  # noqa: ANN001, ANN202 - sys.settrace's signature
        nonlocal count
        count += 1
        return lines

    def calls(frame, event, arg) -> None:  # noqa: ANN001
        nonlocal count
        if event == "c_call":
            count += 1

    sys.settrace(lines)
    sys.setprofile(calls)
    try:
        read(name, data)
    finally:
        sys.settrace(None)
        sys.setprofile(None)
    return count


LINEAR = {
    "html": ("page.html", hostile.html_paragraphs),
    "html crowded": ("page.html", hostile.html_crowded),
    "html deep terms": ("page.html", hostile.html_deep_terms),
    "docx": ("doc.docx", hostile.docx_paragraphs),
    "epub": ("book.epub", hostile.epub_chapters),
    "epub deep": ("book.epub", hostile.epub_deep),
    "jsonl": ("records.jsonl", hostile.jsonl_with_bad_line),
    "mail": ("box.mbox", hostile.mbox_messages),
}


@pytest.mark.parametrize("kind", sorted(LINEAR))
def test_work_is_linear_in_the_input(kind: str, ledger) -> None:
    name, make = LINEAR[kind]
    n = 3000
    once, twice = work(name, make(n)), work(name, make(2 * n))
    ok = twice <= 2.3 * once
    ledger.record(kind.split()[0], "handled" if ok else "hang")
    assert ok, (once, twice)
