"""The passages an answer rests on, found exactly: those whose text, as the searches showed it, holds the answer.

An answer that is a span of what the tools returned (a grounded answer always is) was taken from the passages that
showed it. A search step records the ids of the passages it showed (`details.tool.ids`), in the order of its
Observation's lines `[k] Title: text` (retrieve shows one passage without a number), so the answer found in line k
of a step's Observation (case and spacing aside, on word boundaries) rests on passage ids[k - 1]; an answer found
in a `lookup` sentence rests on the passage of the looked-up document (the first one the last search showed) that
holds it. Every passage that showed the answer is a source, in the order they were shown.

An answer written in no passage that was shown (taken from the question, a yes or no, or words of the model's own)
has no source, and `find_sources` says so with an empty list rather than guess. Each source gives the file (or
the record's document id), the document's title, the heading path, the line or PDF page, and the sentence that
holds the answer.

A run that abstained (the documents do not say) has no answer to find: its sources are the nearest passages it
found instead, the first `NEAREST` its searches showed (each search's best first, in the order searched), each with
its opening sentence, so a user sees where the agent looked.

This is a pure function of the trajectory and the index the run searched; the CLI, the MCP server and the
evaluation call it and show or store what it returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from offline_agent.jsonio import fields_dict
from offline_agent.listing import entries
from offline_agent.steps import Trajectory

NOT_WRITTEN = "none: the answer is not written word for word in the passages the searches returned"
ABSTAINED = "The documents do not say."  # what every surface shows for a run that abstained
NEAREST = 3  # the passages an abstention shows


@dataclass(frozen=True)
class Source:
    """A passage an answer rests on: where it is, and the sentence that holds the answer."""

    passage_id: int
    doc_id: str
    title: str
    path: str  # the file it was read from (a record's corpus file), or its document id where there is none
    heading: tuple[str, ...]
    line: int  # the line of the sentence in the document's text (0: not known, as for a record)
    page: int  # its PDF page (0: not a paged document)
    sentence: str
    step: int  # the step (from 1) whose Observation showed the passage

    def to_dict(self) -> dict[str, Any]:
        return fields_dict(self)


def find_sources(trajectory: Trajectory, index: Any) -> list[Source]:
    """The passages the trajectory's answer was taken from (see the module's docstring); [] when it has no answer or
    the answer is not written in any passage the run was shown."""
    if trajectory.abstained:
        return nearest_passages(trajectory, index)
    answer = trajectory.answer
    if trajectory.stop_reason != "final" or not answer or not _words(answer):
        return []
    needle = _normal(answer)
    if needle in ("yes", "no"):
        return []  # an answer to a yes/no question is never a span of what was read
    found: dict[int, Source] = {}
    last_ids: list[int] = []  # the passages the last search showed: a lookup reads the first one's document
    for step in trajectory.steps:
        ids = step.details.tool.ids if step.details is not None and step.details.tool is not None else None
        observation = step.observation or ""
        if ids:
            last_ids = list(ids)
            for number, line in _shown(observation, len(ids)).items():
                if _holds(line, needle):
                    _add(found, index, ids[number - 1], needle, step.index)
        elif step.action == "lookup" and last_ids and _holds(observation, needle):
            for passage in _document_of(index, last_ids[0]):
                if _holds(passage.text, needle):
                    _add(found, index, passage.id, needle, step.index)
    return list(found.values())


def nearest_passages(trajectory: Trajectory, index: Any, most: int = NEAREST) -> list[Source]:
    """The first `most` passages the run's searches showed (a passage once), each with its opening sentence: what an
    abstention shows of where the agent looked."""
    from offline_agent.retrieval import split_sentences

    found: dict[int, Source] = {}
    ranked = [
        (rank, step.index, passage_id)
        for step in trajectory.steps
        if step.details is not None and step.details.tool is not None and step.details.tool.ids
        for rank, passage_id in enumerate(step.details.tool.ids)
    ]
    for _, step_index, passage_id in sorted(ranked):  # each search's best first, then each one's second, ...
        if len(found) >= most or passage_id in found:
            continue
        try:
            passage = index.passage(int(passage_id))
        except KeyError:
            continue
        first = next(iter(split_sentences(passage.text)), (0, len(passage.text)))
        opening = " ".join(passage.text[first[0] : first[1]].split())
        found[passage_id] = _source(passage, opening, getattr(passage, "line", 0), step_index)
    return list(found.values())


def attach_sources(trajectory: Trajectory, index: Any) -> Trajectory:
    """Set `trajectory.sources` (JSON-ready) from `find_sources`; returns the trajectory."""
    trajectory.sources = [source.to_dict() for source in find_sources(trajectory, index)]
    return trajectory


def format_sources(trajectory: Trajectory) -> list[str]:
    """The lines that tell a user what the answer rests on, or for an abstention the nearest passages found ([]
    for a run without an answer or without sources found): each passage's file, place, heading path and the
    sentence holding the answer."""
    from offline_agent.retrieval.passages import passage_label

    if trajectory.abstained and trajectory.sources:
        lines = ["Nearest passages found:"]
    elif trajectory.stop_reason != "final" or trajectory.answer is None or trajectory.sources is None:
        return []
    elif not trajectory.sources:
        return [f"Sources: {NOT_WRITTEN}."]
    else:
        lines = ["Sources:"]
    for number, source in enumerate(trajectory.sources, 1):
        place = f"page {source['page']}" if source.get("page") else ""
        place = place or (f"line {source['line']}" if source.get("line") else "")
        where = f"{source['path']}, {place}" if place else source["path"]
        lines.append(f"  [{number}] {where}")
        label = passage_label(source.get("title") or "", source.get("heading") or ())
        if label:
            lines.append(f"      {label}")
        lines.append(f'      "{source["sentence"]}"')
    return lines


def _add(found: dict[int, Source], index: Any, passage_id: int, needle: str, step: int) -> None:
    if passage_id in found:
        return
    try:
        passage = index.passage(int(passage_id))
    except KeyError:  # the index changed since the run: the passage is gone
        return
    sentence, line = _sentence(passage, needle)
    found[passage_id] = _source(passage, sentence, line, step)


def _source(passage: Any, sentence: str, line: int, step: int) -> Source:
    """The Source of `passage`, showing `sentence` (at `line` of its file), read at step `step` (from 0)."""
    return Source(
        passage_id=int(passage.id),
        doc_id=passage.doc_id,
        title=passage.title,
        path=passage.source or passage.doc_id,
        heading=tuple(getattr(passage, "heading", ())),
        line=line,
        page=getattr(passage, "page", 0),
        sentence=sentence,
        step=step + 1,
    )


def _shown(observation: str, count: int) -> dict[int, str]:
    """The text each numbered line of an Observation showed (1..count); one passage shown without a number (a
    retrieve) is the whole Observation."""
    listed = [entry for entry in entries(observation) if 1 <= entry.rank <= count]
    if not listed:
        return {1: observation} if count == 1 else {}
    out: dict[int, str] = {}
    for entry in listed:
        out.setdefault(entry.rank, entry.shown)
    return out


def _document_of(index: Any, passage_id: int) -> list[Any]:
    try:
        first = index.passage(int(passage_id))
    except KeyError:
        return []
    return list(index.passages_of(first.doc_id)) or [first]


def _words(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


def _normal(text: str) -> str:
    return _normal_with_offsets(text)[0]


def _holds(text: str, needle: str) -> bool:
    return _find(_normal(text), needle) >= 0


def _find(haystack: str, needle: str) -> int:
    """Where `needle` starts in `haystack` on word boundaries (an answer "no" is not in "not"), or -1."""
    at = haystack.find(needle)
    while at >= 0:
        before = haystack[at - 1] if at else " "
        after = haystack[at + len(needle)] if at + len(needle) < len(haystack) else " "
        if not (needle[0].isalnum() and before.isalnum()) and not (needle[-1].isalnum() and after.isalnum()):
            return at
        at = haystack.find(needle, at + 1)
    return -1


def _sentence(passage: Any, needle: str) -> tuple[str, int]:
    """The sentence (or sentences) of the passage that hold the answer, spaces collapsed, and the line of the
    document it starts on; the passage's label where the answer is in its title or headings only."""
    from offline_agent.retrieval import split_sentences

    text = passage.text
    normal, where = _normal_with_offsets(text)
    at = _find(normal, needle)
    if at < 0:
        heading = tuple(getattr(passage, "heading", ()))
        return " > ".join(heading) if heading else passage.title, getattr(passage, "line", 0)
    start, end = where[at], where[at + len(needle) - 1] + 1
    spans = [(s, e) for s, e in split_sentences(text) if s < end and e > start] or [(start, end)]
    first, last = spans[0][0], spans[-1][1]
    line = getattr(passage, "line", 0)
    if line:
        line += text.count("\n", 0, first)
    return " ".join(text[first:last].split()), line


def _normal_with_offsets(text: str) -> tuple[str, list[int]]:
    """`_normal(text)` and, for each of its characters, the offset in `text` it came from."""
    chars: list[str] = []
    where: list[int] = []
    space = False
    for offset, ch in enumerate(text):
        if ch.isspace():
            space = bool(chars)
            continue
        if space:
            chars.append(" ")
            where.append(offset)
            space = False
        for lowered in ch.lower():
            chars.append(lowered)
            where.append(offset)
    return "".join(chars), where
