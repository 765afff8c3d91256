"""A text as a literal of the grammar languages: the one escape every grammar offline_agent writes goes through.

Why a module of its own: the step grammar (grammar.py) and the grounded answer's rules (grounding.py) both write
literals of document text, and grammar.py builds on grounding, so the escape sits below both.
"""

from __future__ import annotations

# What a quoted literal must escape in both grammar languages (llama.cpp's GBNF, llguidance's GBNF and Lark): the
# quote and the backslash, and every ASCII control character, which llguidance's lexers refuse raw ("lexer error")
# and llama.cpp's parser would end at (NUL). `\xHH` is the one escape all three read alike (llguidance's GBNF reads
# `\u001b` as a raw control character again); newline, return and tab keep their short forms. Every other character
# stays as it is: all three take any other code point raw.
_QUOTED = str.maketrans(
    {
        **{chr(code): f"\\x{code:02X}" for code in [*range(0x20), 0x7F]},
        "\n": "\\n",
        "\r": "\\r",
        "\t": "\\t",
        "\\": "\\\\",
        '"': '\\"',
    }
)


def quoted(text: str) -> str:
    """`text` as a quoted literal that GBNF (llama.cpp's and llguidance's) and llguidance's Lark read as exactly
    `text`, whatever characters it holds (a lone surrogate aside: it cannot be written as UTF-8 at all)."""
    return '"' + text.translate(_QUOTED) + '"'


__all__ = ["quoted"]
