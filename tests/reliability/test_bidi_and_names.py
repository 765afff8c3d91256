"""Bidirectional controls, C1 controls and escape sequences in documents, file names and typed paths never reach a
terminal raw: not in human output, not in `--json`, not in an error line.

A title or heading with U+202E (RIGHT-TO-LEFT OVERRIDE) or U+2066..U+2069 (isolates) reorders what a terminal
shows ("Trojan Source"); a mail subject can hold them as well. `ask --json` wrote U+009B (an 8-bit CSI) raw from a
question that held it. An
error line echoed a typed path's OSC sequence to the terminal, and a file name whose escape sequence was dropped
was shown as a path that does not exist. Now human output writes them as `\\u202e` and `\\x1b` (a path is escaped,
never cut), and JSON as `\\u202e` and `\\u009b`, which still decodes to the exact text.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest
from fake_servers import FakeServer
from harness import cli_bounded, one_line_error, outcome_of

RAW = re.compile("[\x1b\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")  # none may reach a terminal raw
BOUND_S = 90
ODD_NAME = "\x1b]0;pwned\x07report.md"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    (folder / "notes").mkdir(parents=True)
    (folder / "notes" / ODD_NAME).write_text(
        "# Harbour \u202egnp.exe\n\n## Tides \u2066left\u2069\n\n"
        "Curie's heron harbour opens at dawn \u009b31m and \u202e closes at dusk.\n",
        encoding="utf-8",
    )
    subject = base64.b64encode("Heron invoice \u202efdp.exe".encode()).decode()
    (folder / "mail.eml").write_bytes(
        f"Subject: =?utf-8?b?{subject}?=\nFrom: a@b.c\nContent-Type: text/plain; charset=utf-8\n\n"
        "The heron harbour mail body, for Curie.\n".encode()
    )
    return folder


def test_search_shows_bidi_controls_and_odd_file_names_escaped(corpus: Path, tmp_path: Path, ledger) -> None:
    result = cli_bounded("search", "heron harbour", "--corpus", str(corpus), home=tmp_path, timeout=BOUND_S)
    out = "" if result is None else result.stdout
    expected = ["Harbour \\u202egnp.exe", "Tides \\u2066left\\u2069", "Heron invoice \\u202efdp.exe"]
    ok = result is not None and result.returncode == 0 and not RAW.search(out)
    ok = ok and all(text in out for text in expected) and "notes/\\x1b]0;pwned\\x07report.md" in out
    ledger.record("terminal", outcome_of(result, ok))
    assert ok, (out, None if result is None else result.stderr[-1000:])


def test_search_json_escapes_them_and_decodes_to_the_exact_text(corpus: Path, tmp_path: Path, ledger) -> None:
    args = ("search", "heron harbour", "--corpus", str(corpus), "--json")
    result = cli_bounded(*args, home=tmp_path, timeout=BOUND_S)
    out = "" if result is None else result.stdout
    hits = json.loads(out)["hits"] if result is not None and result.returncode == 0 else []
    texts = {hit["title"]: hit for hit in hits}
    harbour = texts.get("Harbour \u202egnp.exe", {})
    ok = not RAW.search(out) and "\u009b31m" in harbour.get("text", "") and harbour.get("doc_id", "").endswith(ODD_NAME)
    ok = ok and "Heron invoice \u202efdp.exe" in texts
    ledger.record("terminal", outcome_of(result, ok))
    assert ok, (out[-2000:], None if result is None else result.stderr[-1000:])


def test_ask_json_writes_no_raw_c1_or_bidi_control(corpus: Path, tmp_path: Path, ledger) -> None:
    """A question that holds U+009B and U+202E (a fake model server answers): its trajectory decodes exactly."""
    question = "Who opens \u009b31m the harbour \u202e at dawn?"
    with FakeServer("llama-server") as server:
        args = ("ask", question, "--corpus", str(corpus), "--backend", "http", "--server-url", server.url, "--json")
        result = cli_bounded(*args, "--max-steps", "3", home=tmp_path, timeout=BOUND_S)
    out = "" if result is None else result.stdout
    trajectory = json.loads(out) if result is not None and result.returncode in (0, 3) else {}
    ok = bool(trajectory) and not RAW.search(out) and trajectory.get("question") == question
    ledger.record("terminal", outcome_of(result, ok))
    assert ok, (out[-2000:], None if result is None else result.stderr[-1000:])


def test_an_error_line_escapes_a_typed_path(tmp_path: Path, ledger) -> None:
    typed = str(tmp_path / "nowhere\x1b]0;pwned\x07\u202eq")
    result = cli_bounded("search", "heron", "--corpus", typed, home=tmp_path, timeout=BOUND_S)
    line = one_line_error(result) if result is not None else None
    ok = line is not None and not RAW.search(result.stderr) and "nowhere\\x1b]0;pwned\\x07\\u202eq" in line
    ledger.record("terminal", outcome_of(result, ok))
    assert ok, None if result is None else (result.returncode, result.stderr[-1000:])
