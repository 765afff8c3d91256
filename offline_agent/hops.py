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


@dataclass(frozen=True)
class _Step:
    """What hops needs of a step, from a StepRecord or from a saved trajectory's step."""

    action: str | None
    argument: Any
    observation: str | None
    failed: bool


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _joined(text: str) -> str:
    """The text's words, case aside, one space apart and one at each end (so a phrase is found as whole words)."""
    return f" {' '.join(_words(text)).casefold()} "


def bridge(question: str, query: str, read: Sequence[str]) -> tuple[str, int]:
    """The bridge of `query` (see the module's docstring) and the index in `read` of the first text that writes it;
    ("", -1) where no run of its words is both read and new."""
    words = _words(query)
    asked = {word.casefold() for word in _words(question)}

    def own(word: str) -> bool:
        folded = word.casefold()
        return folded not in asked and folded not in ENGLISH_STOPWORDS

    def function(word: str) -> bool:
        return word.casefold() in ENGLISH_STOPWORDS

    texts = [_joined(text) for text in read]
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


def _hops(question: str, steps: Iterable[_Step]) -> list[Hop]:
    read: list[str] = []
    read_steps: list[int] = []
    found: list[Hop] = []
    for index, step in enumerate(steps):
        if step.action in SEARCH_TOOLS and isinstance(step.argument, str) and not step.failed:
            name, where = bridge(question, step.argument, read)
            if name:
                found.append(Hop(index, step.argument, name, read_steps[where]))
        if step.action in READING_TOOLS and step.observation and not step.failed:
            read.append(step.observation)
            read_steps.append(index)
    return found


def hops(question: str, steps: Iterable[Any]) -> list[Hop]:
    """The hops of a run of `question`, in order, from its StepRecords (steps.py)."""
    return _hops(question, (_Step(s.action, s.argument, s.observation, s.tool_error) for s in steps))


def saved_hops(question: str, steps: Iterable[Mapping[str, Any]]) -> list[Hop]:
    """The same from a saved trajectory's steps (the dicts of a results.jsonl row or a trace line)."""
    return _hops(
        question,
        (_Step(s.get("action"), s.get("argument"), s.get("observation"), bool(s.get("tool_error"))) for s in steps),
    )


__all__ = ["READING_TOOLS", "SEARCH_TOOLS", "Hop", "bridge", "hops", "saved_hops"]
