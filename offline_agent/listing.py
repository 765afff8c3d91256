"""How a search lists passages in its Observation, `[k] LABEL: text` one to a line, and how the package reads it back.

The format is a contract between a search tool and what reads its results: the grounding keeps a label's words
apart from its text's (a title is no clause of the text), the injection guard weighs each passage alone, sources
find the passage an answer was read in, and the answer checks read what each line showed. A search tool that
writes its results with `listing` gets all of these, a user's own as much as the built-in one; an Observation with
no numbered line is read as one passage.

LABEL says where the passage is (a title, then its section's headings joined by " > "). Limits: a label ends at
the first ": " after at most LABEL_CHARS characters, so a title that itself holds ": " is read as cut there;
a numbered head with no ": " that near is an entry without a label; an entry runs to the next numbered line, so a
text with a line of its own that opens with "[k] " reads as two entries.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

LABEL_CHARS = 300
_HEAD = re.compile(rf"^\[(\d+)\] (?:([^\n]{{1,{LABEL_CHARS}}}?): )?", re.MULTILINE)


@dataclass(frozen=True)
class Entry:
    """One numbered passage of a listing: its rank, its label (None where the head has none) and its text, with
    where in the Observation it starts (its "[") and where its text starts and ends (the line break before the
    next entry is no part of it)."""

    rank: int
    label: str | None
    text: str
    start: int
    text_start: int
    end: int

    @property
    def shown(self) -> str:
        """What the entry showed after its number: the label and the text, as written."""
        return self.text if self.label is None else f"{self.label}: {self.text}"


def listing(lines: Iterable[tuple[str, str]]) -> str:
    """An Observation that lists (label, text) pairs, ranked from 1."""
    return "\n".join(f"[{rank}] {label}: {text}" for rank, (label, text) in enumerate(lines, 1))


def entries(observation: str) -> list[Entry]:
    """The numbered passages of `observation`, in order; none where it has no numbered line."""
    heads = list(_HEAD.finditer(observation))
    found = []
    for at, head in enumerate(heads):
        end = heads[at + 1].start() - 1 if at + 1 < len(heads) else len(observation)  # less the line break
        rank, label = int(head.group(1)), head.group(2)
        found.append(Entry(rank, label, observation[head.end() : end], head.start(), head.end(), end))
    return found


__all__ = ["LABEL_CHARS", "Entry", "entries", "listing"]
