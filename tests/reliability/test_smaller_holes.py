"""The smaller holes, one case each: whole trace lines, FIFOs, a scope path with a typo, usage errors, one overlong
chat question, MCP's malformed lines, duplicated result lines in `report`, and `min(1,000)` in the calculator.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from harness import cli, cli_bounded, on_small_disk, outcome_of
from support import ROOT
from test_hostile_text import _mcp_exchange

from offline_agent.errors import ToolError

MODEL = ("--model", "smollm2-135m-instruct")
QUICK = (*MODEL, "--agent", "standard", "--max-tokens", "48", "--seed", "0")
HANG_S = 90  # a guard: reading a FIFO waits for a writer for ever


def _lines_parse(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.model
def test_a_trace_with_a_torn_last_line_gets_whole_lines(tiny_corpus: Path, tmp_path: Path, ledger) -> None:
    """A writer killed mid-line (or whose cut-back failed on a full disk) left half a record: the next trajectory
    starts on a line of its own, and the torn half is cut off."""
    trace = tmp_path / "trace.jsonl"
    first = cli("ask", "Where is Warsaw?", "--corpus", str(tiny_corpus), *QUICK, "-q", "--trace", str(trace))
    assert first.returncode == 0, first.stderr[-1000:]
    whole = trace.read_bytes()
    trace.write_bytes(whole + whole[: len(whole) // 2])  # half of a second record, no newline
    again = cli("ask", "Where is Gdansk?", "--corpus", str(tiny_corpus), *QUICK, "-q", "--trace", str(trace))
    try:
        rows = _lines_parse(trace)
    except ValueError:
        rows = []
    ok = again.returncode == 0 and [row["question"] for row in rows] == ["Where is Warsaw?", "Where is Gdansk?"]
    ledger.record("lost answer (--trace)", "lost" if again.returncode == 0 and not ok else outcome_of(again, ok))
    assert ok, (again.stderr[-1000:], trace.read_text(encoding="utf-8")[-300:])


_FULL = r"""
import json, os, sys
from pathlib import Path
from offline_agent.cli.ask import append_trace
from offline_agent.errors import OfflineAgentError
from offline_agent.steps import Trajectory
disk = Path(sys.argv[1])
trace = disk / "trace.jsonl"
big = Trajectory(question="q" * 30000, agent="react", answer="a", stop_reason="final")
append_trace(trace, Trajectory(question="first", agent="react", answer="a", stop_reason="final"))
filler = disk / "filler"
with open(filler, "wb", buffering=0) as fh:  # the disk full to its last few kilobytes
    try:
        while os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize > 12000:
            fh.write(b"x" * 4096)
    except OSError:
        pass
out = {}
try:
    append_trace(trace, big)
    out["full"] = "written"
except OfflineAgentError as exc:
    out["full"] = str(exc)
filler.unlink()
append_trace(trace, Trajectory(question="after", agent="react", answer="a", stop_reason="final"))
try:
    out["questions"] = [json.loads(line)["question"][:5] for line in trace.read_text().splitlines()]
except ValueError as exc:
    out["questions"] = f"not whole lines: {exc}"
print(json.dumps(out))
"""


def test_a_full_disk_never_tears_a_trace_line(tmp_path: Path, ledger) -> None:
    result = on_small_disk(tmp_path, "64k", _FULL, timeout=300)
    out = json.loads(result.stdout.strip().splitlines()[-1]) if result.returncode == 0 else {}
    ok = "No space left on device" in str(out.get("full")) and out.get("questions") == ["first", "after"]
    ledger.record("lost answer (--trace)", "handled" if ok else "traceback" if "Traceback" in result.stderr else "lost")
    assert ok, (out, result.stderr[-2000:])


def _fifo(tmp_path: Path) -> Path:
    fifo = tmp_path / "fifo"
    try:
        os.mkfifo(fifo)
    except (AttributeError, OSError) as exc:
        pytest.skip(f"cannot make a FIFO here: {exc}")
    return fifo


FIFO_CASES = {
    "grammar check": lambda fifo: ("grammar", "check", str(fifo)),
    "eval dataset": lambda fifo: ("eval", str(fifo), "--limit", "1", "--out", str(fifo.parent / "run")),
    "ask -o action_graph": lambda fifo: ("ask", "Who?", "--agent", "knowagent", "-o", f"action_graph={fifo}"),
    "ask --scope": lambda fifo: ("ask", "Who?", "--scope", str(fifo)),
    "index --scope": lambda fifo: (
        "index",
        str(ROOT / "corpora" / "sample" / "docs"),
        "--name",
        "s",
        "--scope",
        str(fifo),
    ),
}


# A strategy's option is checked as the command line is read: a bad value of one is a usage error (exit 2).
USAGE_CASES = {"ask -o action_graph"}


@pytest.mark.parametrize("case", list(FIFO_CASES))
def test_a_fifo_where_a_file_is_expected_is_one_line(case: str, tmp_path: Path, ledger) -> None:
    fifo = _fifo(tmp_path)
    result = cli_bounded(*FIFO_CASES[case](fifo), home=tmp_path / "home", timeout=HANG_S)
    text = "" if result is None else result.stdout + result.stderr
    code = 2 if case in USAGE_CASES else 1
    ok = result is not None and result.returncode == code and "FIFO" in text and "Traceback" not in text
    ok = ok and "model:" not in text  # refused before any model loads
    ledger.record("FIFOs and usage errors", outcome_of(result, ok))
    assert ok, text[-2000:]


USAGE = {
    "a scope path with a typo": (("ask", "Who?", "--scope", "/typo/path"), 1, "scope file not found: /typo/path"),
    "a scope file name with a typo": (("ask", "Who?", "--scope", "scope.txt"), 1, "scope file not found"),
    "an empty question": (("ask", "  "), 2, "the question is empty"),
    "temperature nan": (("ask", "Who?", "--temperature", "nan"), 2, "nan is not a number"),
    "server timeout nan": (("ask", "Who?", "--server-timeout", "nan"), 2, "nan is not a number of seconds"),
}


@pytest.mark.parametrize("case", list(USAGE))
def test_bad_values_are_refused_before_the_model_loads(case: str, tmp_path: Path, ledger) -> None:
    args, code, message = USAGE[case]
    result = cli_bounded(*args, "--corpus", str(ROOT / "corpora" / "sample" / "docs"), home=tmp_path, timeout=HANG_S)
    ok = result is not None and result.returncode == code and message in result.stderr
    ok = ok and "model:" not in result.stderr and "Traceback" not in result.stderr
    ledger.record("FIFOs and usage errors", outcome_of(result, ok))
    assert ok, None if result is None else (result.returncode, result.stderr[-1500:])


@pytest.mark.model
def test_one_overlong_chat_question_is_skipped_and_the_chat_goes_on(tiny_corpus: Path, tmp_path: Path, ledger) -> None:
    long = " ".join(["Warsaw"] * 3000)
    args = ("chat", "--corpus", str(tiny_corpus), *QUICK, "-q", "--json", "--scope", "Polish cities and rivers")
    result = cli_bounded(*args, stdin=f"{long}\nWhere is Warsaw?\n", home=tmp_path, timeout=900)
    turns = [json.loads(line) for line in result.stdout.splitlines()] if result is not None and result.stdout else []
    ok = result is not None and result.returncode == 0 and len(turns) == 1
    ok = ok and turns[0]["question"] == "Where is Warsaw?" and turns[0]["stop_reason"] != "error"
    ok = ok and "the question is too long" in result.stderr
    ledger.record("chat", outcome_of(result, ok))
    assert ok, None if result is None else (result.stdout[-500:], result.stderr[-1500:])


def test_mcp_answers_malformed_lines_with_json_rpc_errors(tmp_path: Path, tiny_corpus: Path, ledger) -> None:
    lines = [
        b"this is not json",
        b'{"jsonrpc": "2.0", "id": 5',
        b'{"jsonrpc": "2.0", "id": 6, "method": 7}',
        b"[]",
        b"[" * 100_000 + b"]" * 100_000,
        b'{"id": 8, "method": "tools/list"}',
    ]
    replies, err = _mcp_exchange(lines, tmp_path / "home", tiny_corpus, answers=len(lines))
    errors = [reply for reply in replies if "error" in reply]
    codes = sorted((reply["id"] if reply["id"] is not None else -1, reply["error"]["code"]) for reply in errors)
    expected = sorted([(-1, -32700), (-1, -32700), (6, -32600), (-1, -32600), (-1, -32700), (8, -32600)])
    answered_last = any(reply.get("id") == 99 and "result" in reply for reply in replies)
    for number in range(len(lines)):
        ok = number < len(codes) and codes == expected and answered_last
        ledger.record(
            "MCP messages (malformed lines)", "handled" if ok else "traceback" if "Traceback" in err else "failed"
        )
    assert codes == expected and answered_last, (replies, err[-1000:])


@pytest.mark.model
def test_report_counts_each_question_once(tmp_path: Path, ledger) -> None:
    out = tmp_path / "run"
    dataset = ROOT / "corpora" / "sample" / "questions.jsonl"
    ran = cli("eval", str(dataset), *QUICK, "--limit", "2", "--out", str(out), "--quiet", home=tmp_path)
    assert ran.returncode == 0, ran.stderr[-1000:]
    results = out / "results.jsonl"
    results.write_bytes(results.read_bytes() * 3)  # appended to itself twice
    shutil.rmtree(out / "summary.json", ignore_errors=True)
    report = cli("report", str(out), "--json", "--no-plots", "--out", str(tmp_path / "report"), home=tmp_path)
    summaries = json.loads(report.stdout) if report.returncode == 0 else {}
    questions = [summary.get("questions") for summary in summaries.values()]
    ok = questions == [2] and "4 duplicated result lines" in report.stderr
    ledger.record("eval and report", outcome_of(report, ok))
    assert ok, (questions, report.stdout[:500], report.stderr[-1000:])


@pytest.mark.parametrize("expression", ["min(1,000)", "max(1,000, 2)", "min(2,500,000)"])
def test_the_calculator_never_reads_a_thousands_comma_as_an_argument(expression: str, ledger) -> None:
    from offline_agent.tools.calculator import CalculatorTool

    try:
        got = CalculatorTool()({"expression": expression})
        ok = False
    except ToolError as exc:
        got, ok = str(exc), "could be one number" in str(exc)
    ledger.record("calculator (hostile expressions)", "handled" if ok else "failed")
    assert ok, got
