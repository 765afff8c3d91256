"""The hops of a run: each search for a name the run had read in an earlier Observation and the question does not
write.

Why: a multi-hop question is answered by reading one page, taking a name from it (the intermediate answer: the
author of the book, the city of the birth) and searching for that name. A search whose words are all the question's
is no hop, and neither is a search for a name that only a Thought states: it was never read, so it is no bridge.
This is what eval counts per question type and what `ask` shows under each search, so that a reader sees whether a
run took the hops its question needs or answered from its first search.

The bridge of a search is the longest run of its argument's words that some earlier Observation of a reading tool
(search, retrieve, lookup) writes, as whole words with case aside, and that holds a word of its own: one neither in
the question nor a stop word. Function words at either end are dropped ("the Liffey" is the bridge "Liffey" where
"the" alone is shared). A refusal's Observation is not reading (it may quote the model's own proposal), nor is an
Observation of a tool that failed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from offline_agent.retrieval.analyzer import ENGLISH_STOPWORDS

# The tools that bring new documents into a run (eval counts their calls as searches, min_searches too): a call is a
# hop when it looks for a bridge.
SEARCH_TOOLS = ("search", "retrieve")
# The tools whose Observations are text of the documents, and whose argument names what they look for.
READING_TOOLS = (*SEARCH_TOOLS, "lookup")
_WORD = re.compile(r"\w+(?:['’.-]\w+)*")


@dataclass(frozen=True)
class Hop:
    """One hop: the search at step `step` (0-based) looked for `bridge`, read in step `read_at`'s Observation."""

    step: int
    query: str
    bridge: str
    read_at: int


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _joined(text: str) -> str:
    """The text's words, case aside, one space apart and one at each end (so a phrase is found as whole words)."""
    return f" {' '.join(_words(text)).casefold()} "


def bridge(question: str, query: str, read: Sequence[str]) -> tuple[str, int]:
    """The bridge of `query` (see the module's docstring) and the index in `read` of the first text that writes it;
    ("", -1) where no run of its words is both read and new."""
    return _bridge({word.casefold() for word in _words(question)}, query, [_joined(text) for text in read])


def _bridge(asked: set[str], query: str, texts: Sequence[str]) -> tuple[str, int]:
    """bridge() over the question's words, folded, and texts already _joined."""
    words = _words(query)

    def own(word: str) -> bool:
        folded = word.casefold()
        return folded not in asked and folded not in ENGLISH_STOPWORDS

    def function(word: str) -> bool:
        return word.casefold() in ENGLISH_STOPWORDS

    for length in range(len(words), 0, -1):
        for start in range(len(words) - length + 1):
            span = words[start : start + length]
            if not any(own(word) for word in span):
                continue
            phrase = f" {' '.join(span).casefold()} "
            where = next((at for at, text in enumerate(texts) if phrase in text), -1)
            if where >= 0:
                while function(span[0]):
                    span = span[1:]
                while function(span[-1]):
                    span = span[:-1]
                return " ".join(span), where
    return "", -1


class HopTracker:
    """Follows one run of `question` tool call by tool call: what its reading tools showed, and which of its
    searches are hops (`hops`, in order). hops() walks a finished run with it; `ask`'s live view feeds it each call
    as its tool ends."""

    def __init__(self, question: str) -> None:
        self.asked = {word.casefold() for word in _words(question)}
        self.hops: list[Hop] = []
        self._read_at: list[int] = []  # the step of each text read, in order
        self._read: list[str] = []  # what each showed, _joined once

    def tool_ran(
        self, step: int, action: str | None, argument: Any, observation: str | None, failed: bool
    ) -> Hop | None:
        """Note what ran at `step` (any step: one with no reading tool changes nothing): the hop it is, or None.
        Its own Observation counts as read only for the calls after it; a failed call reads nothing and is no hop."""
        if failed:
            return None
        hop = None
        if action in SEARCH_TOOLS and isinstance(argument, str):
            name, where = _bridge(self.asked, argument, self._read)
            if name:
                hop = Hop(step, argument, name, self._read_at[where])
                self.hops.append(hop)
        if action in READING_TOOLS and observation:
            self._read_at.append(step)
            self._read.append(_joined(observation))
        return hop


def hops(question: str, steps: Iterable[Any]) -> list[Hop]:
    """The hops of a run of `question`, in order, from its StepRecords (steps.py)."""
    tracker = HopTracker(question)
    for at, step in enumerate(steps):
        tracker.tool_ran(at, step.action, step.argument, step.observation, step.tool_error)
    return tracker.hops


def saved_hops(question: str, steps: Iterable[Mapping[str, Any]]) -> list[Hop]:
    """The same from a saved trajectory's steps (the dicts of a results.jsonl row or a trace line)."""
    tracker = HopTracker(question)
    for at, step in enumerate(steps):
        observation = step.get("observation")
        tracker.tool_ran(at, step.get("action"), step.get("argument"), observation, bool(step.get("tool_error")))
    return tracker.hops


__all__ = ["READING_TOOLS", "SEARCH_TOOLS", "Hop", "HopTracker", "bridge", "hops", "saved_hops"]
