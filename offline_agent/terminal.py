"""Text from documents, made safe to print for people: no escape sequence of a file reaches the terminal.

A log file coloured with ANSI codes, a downloaded page, a file name with a newline: printed as they are, their
escape sequences set the window title, hide a hyperlink (OSC 8), move the cursor or clear the screen, and a
newline in a file name starts a line that looks like the next result. `shown` is what the human-readable output
of `search`, `ask` and `chat` passes document text (and what a model copied from it) through:

- escape sequences are dropped whole: CSI (`ESC [ ... final`), OSC (`ESC ] ... BEL` or `ESC \\`), DCS, SOS, PM and
  APC strings, the single-character escapes, and their 8-bit forms (U+009B CSI, U+009D OSC, ...);
- every other control character (C0 but tab and newline, DEL, C1) is shown as `\\xNN`, a carriage return as `\\r`
  (so that it cannot overwrite a line; a Windows line end `\\r\\n` is a newline), and the bidirectional
  embeddings, overrides and isolates (U+202A..U+202E, U+2066..U+2069, which reorder what a terminal shows: "Trojan
  Source") as `\\u202e`;
- with `one_line`, line breaks (newline, U+2028, U+2029) are shown as `\\n` too, for a file name, a title or an
  answer that must stay on its line.

`shown_name` is for a path (a file name, an error line that quotes one): nothing is dropped, every one of those
characters, ESC included, is written as its escape, so that what is shown names the file that is there.

`--json` output is not passed through here: it is written by jsonio.dumps, which escapes these characters as
`\\uXXXX` (JSON itself escapes only C0), so that a program reading it gets the text exactly as it is in the file
and a terminal that prints it is safe.
"""

from __future__ import annotations

import re

# An escape sequence, 7-bit or 8-bit: a control string (OSC, DCS, SOS, PM, APC) up to its terminator (BEL, ST) or
# the end of the text, a CSI sequence up to its final byte, or ESC and one character.
_SEQUENCE = re.compile(
    r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]?"
)
BIDI = "\u202a-\u202e\u2066-\u2069"  # embeddings, overrides and isolates: a character class's inside
_CONTROL = re.compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f{BIDI}]")
_CONTROL_OR_BREAK = re.compile(f"[\\x00-\\x08\\x0a-\\x1f\\x7f-\\x9f\\u2028\\u2029{BIDI}]")
_ANY_CONTROL = re.compile(f"[\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029{BIDI}]")


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    if char in "\n\u2028\u2029":
        return "\\n"
    if char == "\r":
        return "\\r"
    if char == "\t":
        return "\\t"
    return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"


def shown(text: str, *, one_line: bool = False) -> str:
    """`text` fit for a terminal: escape sequences dropped, other control characters written `\\xNN` (and with
    `one_line`, line breaks written `\\n`)."""
    if text.isprintable() and "\x1b" not in text:
        return text
    text = _SEQUENCE.sub("", text).replace("\r\n", "\n")
    return (_CONTROL_OR_BREAK if one_line else _CONTROL).sub(_escaped, text)


def shown_name(text: str) -> str:
    """A path (or a line that quotes one) fit for a terminal, on one line: every control character, ESC and line
    breaks included, and every bidirectional control written as its escape; nothing dropped."""
    if text.isprintable():
        return text
    return _ANY_CONTROL.sub(_escaped, text)


__all__ = ["BIDI", "shown", "shown_name"]
