"""Any bytes, no traceback: text that is not valid Unicode where it comes in (offline_agent/incoming.py's policy).

- file names that are not UTF-8 (`\\xff\\xfe.txt`): `index`, `search` (text and --json), `index --update` (each
  file found again by its name), `search --corpus`; their bytes are shown as `\\xNN`, one note on stderr;
- lone surrogates in JSON text (`"\\ud800"` in a corpus record, an eval question, an MCP message): `search`,
  `ask`, `eval` and `mcp` work on, with U+FFFD in their place;
- bytes that are not UTF-8 in a question on the command line, a search query and a `chat` line: replaced, counted
  on stderr ("1 invalid character replaced with U+FFFD in the question"), and the chat goes on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from harness import cli, outcome_of
from support import ROOT, cli_env

MODEL = ("--model", "smollm2-135m-instruct")
RUN = (*MODEL, "--agent", "react", "--max-steps", "3", "--max-tokens", "48", "--seed", "0")
ODD = os.fsdecode(b"\xff\xfe")  # two bytes that are not UTF-8, as Python hands them over (lone surrogates)


def _named(folder: Path, raw: bytes, text: str) -> None:
    try:
        (folder / os.fsdecode(raw)).write_text(text, encoding="utf-8")
    except (OSError, UnicodeEncodeError) as exc:  # a file system that refuses names that are not UTF-8
        pytest.skip(f"cannot create a file named {raw!r} here: {exc}")


@pytest.fixture
def odd_names(tmp_path: Path) -> Path:
    folder = tmp_path / "odd"
    folder.mkdir()
    _named(folder, b"\xff\xfe.txt", "Warsaw is the capital of Poland.")
    _named(folder, b"a\xff.txt", "The Vistula flows through Warsaw to the Baltic Sea.")
    _named(folder, b"a\xfe.txt", "Krakow lies on the Vistula too.")
    (folder / "plain.txt").write_text("Gdansk is a port on the Baltic Sea.", encoding="utf-8")
    return folder


def test_file_names_that_are_not_utf8_index_search_and_update(odd_names: Path, tmp_path: Path, ledger) -> None:
    home = tmp_path / "home"
    area = "odd bytes: file names"
    built = cli("index", str(odd_names), "--name", "odd", "--json", home=home)
    ok = built.returncode == 0 and json.loads(built.stdout or "{}").get("documents") == 4
    ok = ok and "note: 3 file names not valid UTF-8" in built.stderr
    ledger.record(area, outcome_of(built, ok))
    assert ok, built.stderr[-2000:]

    found = cli("search", "Vistula Warsaw", "--index", "odd", "--json", home=home)
    ok = found.returncode == 0
    sources = sorted(hit["source"] for hit in json.loads(found.stdout)["hits"]) if ok else []
    expected = sorted(str(odd_names / name) for name in ("a\\xfe.txt", "a\\xff.txt", "\\xff\\xfe.txt"))
    ok = ok and sources == expected
    ledger.record(area, outcome_of(found, ok))
    assert ok, (sources, found.stderr[-2000:])

    for args in (("search", "Warsaw", "--index", "odd"), ("search", "Warsaw", "--corpus", str(odd_names))):
        shown = cli(*args, home=home)
        ok = shown.returncode == 0 and "\\xff\\xfe" in shown.stdout
        ledger.record(area, outcome_of(shown, ok))
        assert ok, shown.stderr[-2000:]

    again = cli("index", str(odd_names), "--name", "odd", "--update", home=home)
    ok = again.returncode == 0 and "0 new, 0 changed, 0 removed, 4 unchanged files" in again.stdout
    ledger.record(area, outcome_of(again, ok))
    assert ok, again.stdout + again.stderr[-2000:]


@pytest.fixture
def surrogate_corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "records"
    folder.mkdir()
    rows = [
        '{"id": "r1", "title": "Warsaw \\ud800", "text": "Warsaw is the capital of Poland \\udfff and lies on the '
        'Vistula."}',
        '{"id": "r2", "title": "Vistula", "text": "The Vistula \\ud83d\\ude00 flows into the Baltic Sea at Gdansk."}',
    ]
    (folder / "records.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return folder


def test_lone_surrogates_in_json_text_are_replaced_for_search(surrogate_corpus: Path, tmp_path: Path, ledger) -> None:
    area = "odd bytes: JSON text"
    home = tmp_path / "home"
    texts = cli("search", "Warsaw", "--corpus", str(surrogate_corpus), home=home)
    ok = texts.returncode == 0 and "Poland \ufffd and" in texts.stdout
    ledger.record(area, outcome_of(texts, ok))
    assert ok, texts.stderr[-2000:]
    as_json = cli("search", "Vistula", "--corpus", str(surrogate_corpus), "--json", home=home)
    ok = as_json.returncode == 0
    hits = json.loads(as_json.stdout)["hits"] if ok else []
    ok = ok and {hit["title"] for hit in hits} == {"Warsaw \ufffd", "Vistula"}
    ok = ok and any("\U0001f600" in hit["text"] for hit in hits)  # a valid pair stays what it is
    ledger.record(area, outcome_of(as_json, ok))
    assert ok, as_json.stderr[-2000:]
    built = cli("index", str(surrogate_corpus), "--name", "recs", home=home)
    saved = cli("search", "Warsaw", "--index", "recs", "--json", home=home)
    ok = built.returncode == 0 and saved.returncode == 0 and "\ufffd" in saved.stdout
    ledger.record(area, outcome_of(saved if built.returncode == 0 else built, ok))
    assert ok, built.stderr[-1000:] + saved.stderr[-1000:]


@pytest.mark.model
def test_lone_surrogates_in_json_text_for_ask_and_eval(surrogate_corpus: Path, tmp_path: Path, ledger) -> None:
    area = "odd bytes: JSON text"
    asked = cli("ask", "Where is Warsaw?", "--corpus", str(surrogate_corpus), *RUN, "--json", home=tmp_path / "h")
    ok = asked.returncode in (0, 3) and json.loads(asked.stdout or "{}").get("steps") is not None
    ledger.record(area, outcome_of(asked, ok))
    assert ok, asked.stderr[-2000:]
    dataset = tmp_path / "questions.jsonl"
    dataset.write_text('{"id": "q\\ud800", "question": "Where is Warsaw \\udc00?", "answer": "Poland"}\n', "utf-8")
    out = tmp_path / "run"
    pool = str(surrogate_corpus / "records.jsonl")
    args = ("eval", str(dataset), "--pool", pool, *RUN, "--out", str(out), "--quiet")
    evaluated = cli(*args, home=tmp_path / "h")
    rows = (out / "results.jsonl").read_text(encoding="utf-8").splitlines() if (out / "results.jsonl").exists() else []
    ok = evaluated.returncode == 0 and len(rows) == 1 and json.loads(rows[0])["question"] == "Where is Warsaw \ufffd?"
    ledger.record(area, outcome_of(evaluated, ok))
    assert ok, evaluated.stderr[-2000:]


@pytest.mark.model
def test_bytes_that_are_not_utf8_in_a_question_and_a_query(tmp_path: Path, tiny_corpus: Path, ledger) -> None:
    area = "odd bytes: questions and chat lines"
    question = "Where is Warsaw \udcff?"  # as Python decodes the argument b"Where is Warsaw \xff?"
    asked = cli("ask", question, "--corpus", str(tiny_corpus), *RUN, "--json", home=tmp_path)
    ok = asked.returncode in (0, 3) and json.loads(asked.stdout or "{}").get("question") == "Where is Warsaw \ufffd?"
    ok = ok and "note: 1 invalid character replaced with U+FFFD in the question" in asked.stderr
    ledger.record(area, outcome_of(asked, ok))
    assert ok, asked.stderr[-2000:]
    searched = cli("search", "Vistula \udcff\udcfe", "--corpus", str(tiny_corpus), "--json", home=tmp_path)
    ok = searched.returncode == 0 and json.loads(searched.stdout)["query"] == "Vistula \ufffd\ufffd"
    ledger.record(area, outcome_of(searched, ok))
    assert ok, searched.stderr[-2000:]


@pytest.mark.model
def test_a_chat_line_that_is_not_utf8_is_answered_and_the_chat_goes_on(
    tmp_path: Path, tiny_corpus: Path, ledger
) -> None:
    lines = b"Where is Warsaw \xff\xfe?\nWhich sea does the Vistula reach?\n"
    command = [sys.executable, "-m", "offline_agent.cli", "chat", "--corpus", str(tiny_corpus), *RUN, "--json", "-q"]
    env = dict(cli_env(tmp_path), OFFLINE_AGENT_THREADS="1")
    result = subprocess.run(command, input=lines, capture_output=True, env=env, cwd=ROOT, timeout=1800)
    stderr = result.stderr.decode("utf-8", "replace")
    turns = [json.loads(line) for line in result.stdout.decode("utf-8").splitlines() if line.strip()]
    ok = result.returncode == 0 and [turn["question"] for turn in turns] == [
        "Where is Warsaw \ufffd\ufffd?",
        "Which sea does the Vistula reach?",
    ]
    ok = ok and "note: 2 invalid characters replaced with U+FFFD in a chat line" in stderr
    outcome = "handled" if ok else "traceback" if "Traceback" in stderr else "failed"
    ledger.record("odd bytes: questions and chat lines", outcome)
    assert ok, stderr[-2000:]


def _mcp_exchange(lines: list[bytes], home: Path, index: Path | None, answers: int) -> tuple[list[dict], str]:
    """Send `lines` to `offline-agent mcp` (serving `index`, or every named index of `home` when None) after the
    handshake and a last request; the replies (JSON objects, until `answers` of them besides the handshake's and the
    last one's have come) and stderr."""
    pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install -e '.[test]'")
    hello = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    ready = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    last = {"jsonrpc": "2.0", "id": 99, "method": "tools/list"}
    data = b"".join(json.dumps(m).encode() + b"\n" for m in (hello, ready)) + b"".join(line + b"\n" for line in lines)
    data += json.dumps(last).encode() + b"\n"
    command = [sys.executable, "-m", "offline_agent.cli", "mcp", *(("--index", str(index)) if index else ())]
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env(home), cwd=ROOT
    )
    replies: list[dict] = []

    def read() -> None:  # in a thread: a server that never answers must not hang the test
        for line in proc.stdout:  # type: ignore[union-attr]
            replies.append(json.loads(line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert proc.stdin is not None
    proc.stdin.write(data)
    proc.stdin.flush()
    end = time.monotonic() + 120  # the SDK answers out of order: wait for the last request and the others
    while time.monotonic() < end and not (any(r.get("id") == 99 for r in replies) and len(replies) >= answers + 2):
        time.sleep(0.05)
    proc.stdin.close()
    proc.stdin = None
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return replies, err.decode("utf-8", "replace")


def test_mcp_reads_lone_surrogates_and_bytes_that_are_not_utf8(tmp_path: Path, tiny_corpus: Path, ledger) -> None:
    call = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"search","arguments":{"query":"%s"}}}'
    lines = [
        (call % (1, "Vistula \\ud800")).encode(),
        (call % (2, "Vistula")).encode().replace(b"Vistula", b"Vistula \xff"),
    ]
    replies, err = _mcp_exchange(lines, tmp_path / "home", tiny_corpus, answers=2)
    by_id = {reply.get("id"): reply for reply in replies}
    for number in (1, 2):
        reply = by_id.get(number, {})
        content = (reply.get("result") or {}).get("content") or [{}]
        ok = "Vistula \ufffd" in content[0].get("text", "") and not (reply.get("result") or {}).get("isError")
        ledger.record("odd bytes: MCP messages", "handled" if ok else "traceback" if "Traceback" in err else "failed")
        assert ok, (number, reply, err[-1000:])
