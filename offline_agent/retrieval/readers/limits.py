"""The bounds every reader works under, in one place: `ReadLimits`, with defaults no real document meets.

A hostile file (a zip that inflates a thousandfold, a chapter nested 3,000 deep, an element with 500,000
attributes, a 100 MB e-mail) must not stop, hang or exhaust an index run. Each reader checks the bounds that
apply to it; a file past one is skipped, or read up to the bound, with one line naming the bound and the
`--limit NAME=VALUE` that raises it. Time is linear in the input everywhere, so the size bounds bound it too:
there is no clock, which would make an index depend on how busy the machine was.

- `inflated_bytes`: what a DOCX, ODT or EPUB may inflate to in all, counted while inflating (a declared size is
  never trusted; an entry that inflates past the size its zip directory declares is a zip bomb, and skipped).
- `part_bytes`: one part that is parsed as markup: a DOCX's document.xml, an ODT's content.xml, an EPUB chapter
  (over it, the file is skipped), and an HTML page (read up to it).
- `message_bytes`: one e-mail message, read up to it (the email package holds 12 times what it parses).
- `depth`: how deep the elements of an HTML or EPUB page are followed; the text of deeper ones is kept, flattened
  into the element at the bound.
- `attributes`: attributes of one HTML element that libxml2 is given; a page with more on one element (libxml2's
  time grows with their square: 40,000 took 36 s) is read by the standard library's parser, which is linear.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields, replace

from offline_agent.errors import ConfigError

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
_VALUE = re.compile(r"\s*(\d+)\s*([kmg]?)i?b?\s*", re.IGNORECASE)


@dataclass(frozen=True)
class ReadLimits:
    """Bounds on what a reader reads from one file (see the module's docstring)."""

    inflated_bytes: int = 1 << 30
    part_bytes: int = 64 << 20
    message_bytes: int = 16 << 20
    depth: int = 1000
    attributes: int = 200

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"limit {option_name(item.name)} must be a whole number >= 1, got {value!r}")

    def with_options(self, given: tuple[str, ...] | list[str]) -> ReadLimits:
        """These limits with `NAME=VALUE` options applied ("part-bytes=256MB", "depth=5000")."""
        changes: dict[str, int] = {}
        for option in given:
            name, sep, value = option.partition("=")
            key = name.strip().replace("-", "_")
            if not sep or key not in self.__dataclass_fields__:
                names = ", ".join(option_name(f.name) for f in fields(self))
                raise ConfigError(f"--limit {option!r}: expected NAME=VALUE with NAME one of {names}")
            m = _VALUE.fullmatch(value)
            kind = "size" if key.endswith("bytes") else "number"
            if not m or (m.group(2) and kind == "number"):
                raise ConfigError(f"--limit {option!r}: {value!r} is not a {kind}")
            changes[key] = int(m.group(1)) * _UNITS[m.group(2).lower()]
        return replace(self, **changes)

    def to_dict(self) -> dict[str, int]:
        return {item.name: getattr(self, item.name) for item in fields(self)}

    @classmethod
    def from_dict(cls, saved: dict[str, int] | None) -> ReadLimits:
        """The limits saved with an index (`to_dict`); names this version does not know are ignored."""
        return cls(**{k: v for k, v in (saved or {}).items() if k in cls.__dataclass_fields__})


DEFAULT_LIMITS = ReadLimits()


def option_name(name: str) -> str:
    """The name a limit has on the command line: "part-bytes" for `part_bytes`."""
    return name.replace("_", "-")


def size_text(n: int) -> str:
    """A byte count as people write it: "64 MB", "1 GB", "512 KB", "300 B"."""
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


def past(name: str, limits: ReadLimits) -> str:
    """The words that name a bound a file went past: "the part-bytes bound (64 MB; raise it with --limit
    part-bytes=...)"."""
    value = getattr(limits, name)
    shown = size_text(value) if name.endswith("bytes") else f"{value:,}"
    return f"the {option_name(name)} bound ({shown}; raise it with --limit {option_name(name)}=...)"
