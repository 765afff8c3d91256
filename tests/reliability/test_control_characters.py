"""Control characters in documents: the grounded grammar compiles, and nothing a file holds drives the terminal.

- A grammar literal of any string (every code point but the surrogates) is read by both grammar languages as that
  string and only it: llama.cpp's GBNF as llguidance reads it, and llguidance's Lark (the decoder's two forms), in
  a sweep over all code points and a hypothesis property test. A grounded step grammar over evidence with ESC, BEL,
  DEL and NUL compiles and accepts a span that holds them.
- `ask` over an ANSI-coloured log answers (no "lexer error"), and neither `ask` nor `search` prints an escape
  sequence from a document (OSC window titles, hidden hyperlinks, colours) or a raw control character; a newline
  in a file name does not break `search`'s lines. `search --json` keeps the text exactly.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import llguidance
import pytest
from harness import cli, outcome_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from offline_agent.grammar import GbnfChecker, GrammarSpec, ToolSpec, _ByteTokenizer, build_grammar
from offline_agent.grounding import Grounding, _literal

ANSI_LOG = (
    "\x1b[32m2024-05-01 12:00:01 INFO\x1b[0m The backup of the Kestrel server finished in 41 seconds.\n"
    "\x1b]0;PWNED-TITLE\x07\x1b[31mERROR\x1b[0m The disk quota of the Kestrel server was reached\x07 at noon.\n"
    "\x1b]8;;http://evil.example/\x1b\\click for the Kestrel manual\x1b]8;;\x1b\\ and DEL\x7f here.\n"
)
SPEC = GrammarSpec(tools=(ToolSpec("search"),), grounded=True)
_TOKENIZER = llguidance.LLTokenizer(llguidance.TokenizerWrapper(_ByteTokenizer()))


def _lark_accepts(grammar: str, text: str) -> bool:
    matcher = llguidance.LLMatcher(_TOKENIZER, llguidance.grammar_from("lark", grammar), log_level=0)
    assert not matcher.is_error(), matcher.get_error()
    return all(matcher.consume_token(byte) for byte in text.encode("utf-8")) and matcher.is_accepting()


def _both_accepts(literal: str, text: str) -> tuple[bool, bool]:
    return GbnfChecker(f"root ::= {literal}\n").accepts(text), _lark_accepts(f"start: {literal}\n", text)


def _verdict(check) -> bool | str:
    try:
        return check()
    except Exception as exc:  # noqa: BLE001 - a grammar that does not compile is what this test looks for
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"


def test_a_literal_of_every_code_point_is_read_back_exactly(ledger) -> None:
    """All of Unicode but the surrogates, 8,192 code points to a literal, in GBNF and in Lark."""
    points = [p for p in range(0x110000) if not 0xD800 <= p <= 0xDFFF]
    wrong = []
    for start in range(0, len(points), 8192):
        text = "".join(map(chr, points[start : start + 8192]))
        got = _verdict(lambda text=text: _both_accepts(_literal(text), text))
        if got != (True, True):
            wrong.append((hex(points[start]), got))
    ledger.record("control characters: grammar literals", "handled" if not wrong else "failed")
    assert not wrong, wrong[:5]


_ANY_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_ANY_TEXT, other=_ANY_TEXT)
def test_a_literal_accepts_its_string_and_only_it(text: str, other: str) -> None:
    literal = _literal(text)
    assert _verdict(lambda: _both_accepts(literal, text)) == (True, True)
    if other != text:
        assert _verdict(lambda: _both_accepts(literal, other)) == (False, False)


def test_the_property_holds_for_the_ledger(ledger) -> None:
    """The property test above as one case of the table (hypothesis runs it; this records that it ran here)."""
    samples = ["\x1b[31m", "\x00", "\x07\x7f", 'a"b\\c', "\u2028\u0085\ufeff", "\U0010ffff"]
    ok = all(_verdict(lambda s=s: _both_accepts(_literal(s), s)) == (True, True) for s in samples)
    ok = ok and all(_verdict(lambda s=s: _both_accepts(_literal(s), s + "x")) == (False, False) for s in samples)
    ledger.record("control characters: grammar literals", "handled" if ok else "failed")
    assert ok


def test_a_grounded_grammar_over_evidence_with_control_characters_compiles(ledger) -> None:
    evidence = [ANSI_LOG, "[1] Nulls: The value\x00 of the field was zero\x1f units.", "Bell\x07 rang; del\x7f key."]
    grounding = Grounding(evidence)
    grammar = build_grammar(SPEC, grounding)
    checks = {
        "gbnf": lambda: GbnfChecker(grammar.gbnf).accepts("Thought: x\nFinal: reached\x07 at noon\n"),
        "lark": lambda: _lark_accepts(grammar.llguidance, "Thought: x\nFinal: value\x00 of the field\n"),
        "python": lambda: grounding.accepts("Kestrel server"),
    }
    for name, check in checks.items():
        got = _verdict(check)
        ledger.record("control characters: grammar literals", "handled" if got is True else "failed")
        assert got is True, (name, got)


def _corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "server.log.txt").write_text(ANSI_LOG, encoding="utf-8")
    (folder / "records.jsonl").write_text(
        json.dumps({"id": "n1", "title": "Nul\x00 title", "text": "The Kestrel server\x00 ran a NUL\x00 check."})
        + "\n",
        encoding="utf-8",
    )
    try:
        (folder / "two\nlines\x1b[2J.txt").write_text("The Kestrel server lives in a file with a newline.", "utf-8")
    except OSError as exc:
        pytest.skip(f"cannot create a file name with a newline here: {exc}")
    return folder


def _terminal_safe(text: str) -> bool:
    return not any(ch in text for ch in "\x1b\x07\x7f\x00\x9b\x9d")


@pytest.mark.model
def test_ask_over_an_ansi_coloured_log_answers_and_prints_no_escape(tmp_path: Path, ledger) -> None:
    corpus = _corpus(tmp_path)
    args = ("ask", "When was the disk quota of the Kestrel server reached?", "--corpus", str(corpus))
    run = (*args, "--model", "smollm2-135m-instruct", "--max-steps", "3", "--max-tokens", "48", "--seed", "0")
    result = cli(*run, home=tmp_path / "home")
    ok = result.returncode in (0, 3) and "grammar does not compile" not in result.stderr
    ok = ok and _terminal_safe(result.stdout + result.stderr) and "Observation:" in result.stderr
    ledger.record("control characters: ask and search output", outcome_of(result, ok))
    assert ok, (result.returncode, result.stderr[-3000:])


def test_search_prints_no_escape_and_keeps_each_hit_on_its_lines(tmp_path: Path, ledger) -> None:
    corpus = _corpus(tmp_path)
    result = cli("search", "Kestrel server", "--corpus", str(corpus), "-k", "5", home=tmp_path / "home")
    lines = result.stdout.splitlines()
    ok = result.returncode == 0 and _terminal_safe(result.stdout) and len(lines) == 3 * 3
    ok = ok and any("two\\nlines\\x1b[2J.txt" in line for line in lines)  # a path: escaped, never cut
    ledger.record("control characters: ask and search output", outcome_of(result, ok))
    assert ok, result.stdout + result.stderr[-2000:]
    exact = cli("search", "Kestrel quota", "--corpus", str(corpus), "--json", home=tmp_path / "home")
    texts = [hit["text"] for hit in json.loads(exact.stdout)["hits"]] if exact.returncode == 0 else []
    ok = any("\x1b]0;PWNED-TITLE\x07" in text for text in texts)
    ledger.record("control characters: ask and search output", outcome_of(exact, ok))
    assert ok, texts


def test_file_names_with_newlines_in_the_index_summary(tmp_path: Path, ledger) -> None:
    corpus = _corpus(tmp_path)
    (corpus / "bad\n\x1b]0;x\x07.txt").write_bytes(b"\xc3\x28 not text")
    result = cli("index", str(corpus), "--name", "logs", home=tmp_path / "home")
    skipped = [line for line in result.stdout.splitlines() if line.startswith("  ")]
    ok = result.returncode == 0 and _terminal_safe(result.stdout) and len(skipped) == 1
    ok = ok and skipped[0].strip().startswith(os.fspath(corpus / "bad\\n\\x1b]0;x\\x07.txt"))
    ledger.record("control characters: ask and search output", outcome_of(result, ok))
    assert ok, result.stdout
