"""QA datasets for `offline-agent eval`: the official HotpotQA JSON, and JSONL question files.

Two formats, told apart by content (not by file name):
- HotpotQA JSON (as `hotpot_dev_distractor_v1.json`): a list of records with `_id`, `question`, `answer`,
  `type`, `level`, `supporting_facts` ([title, sentence index] pairs) and `context` ([title, sentences] pairs);
- JSONL, one record a line: `{id, question, answer[, answers][, supporting_titles][, type][, level]}` (the sample
  questions of corpora/sample). `answers` lists every accepted variant of the answer (the answer among them or
  not); an answer is scored against its best-matching variant. A JSON list of such records is read the same way.

A JSONL record with `"answerable": false` is a question whose answer the corpus does not hold: it has no answer
(an `answer` it gives is ignored), and the right outcome is an abstention ("the documents do not say").

Every record needs an id (resume matches on it), a question and an answer (unless it is unanswerable); ids must be
unique. Anything else is
refused with a DatasetError naming the file and the record, before a model is loaded. The file's sha256 is
kept so a run folder can tell that its dataset changed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offline_agent import incoming, jsonio
from offline_agent.errors import ConfigError


class DatasetError(ConfigError):
    """A dataset file that cannot be read as questions: not JSON, a record without a field, duplicate ids."""


@dataclass(frozen=True)
class Paragraph:
    """One context paragraph of a HotpotQA record: its title, its text (sentences joined) and the sentences
    as the file has them (their positions are the sentence ids of supporting facts)."""

    title: str
    text: str
    sentences: tuple[str, ...] = ()


@dataclass(frozen=True)
class QARecord:
    """One question with its gold answer (and every accepted variant of it, the answer first), and what the dataset
    says about it (support, type, level, context)."""

    id: str
    question: str
    answer: str
    answers: tuple[str, ...] = ()
    supporting_titles: tuple[str, ...] = ()
    type: str | None = None
    level: str | None = None
    context: tuple[Paragraph, ...] = ()
    supporting_facts: tuple[tuple[str, int], ...] = ()  # HotpotQA's (title, sentence id) pairs, as in the file
    # False: the corpus does not hold the answer (`answer` is ""): the right outcome is an abstention.
    answerable: bool = True


@dataclass
class Dataset:
    """The records of one file in file order, its format ("hotpotqa" or "jsonl") and its sha256."""

    path: Path
    format: str
    sha256: str
    records: list[QARecord] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[QARecord]:
        return iter(self.records)

    @property
    def has_context(self) -> bool:
        """Whether every record carries its own paragraphs (what the distractor setting searches)."""
        return bool(self.records) and all(record.context for record in self.records)

    def paragraphs(self) -> list[Paragraph]:
        """Every distinct context paragraph of the file, in first-seen order (the pooled setting's corpus)."""
        seen: dict[tuple[str, str], Paragraph] = {}
        for record in self.records:
            for paragraph in record.context:
                seen.setdefault((paragraph.title, paragraph.text), paragraph)
        return list(seen.values())


def load_dataset(path: str | Path, *, limit: int | None = None) -> Dataset:
    """Read a HotpotQA JSON or a JSONL question file; `limit` keeps the first N records (all are checked)."""
    path = Path(path)
    kind = incoming.not_a_file(path)
    if kind is not None and kind != "a folder":
        raise DatasetError(f"the dataset {path} is {kind}, not a file")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DatasetError(f"dataset not found: {path}") from None
    except IsADirectoryError:
        raise DatasetError(f"dataset is a folder, not a file: {path}") from None
    except OSError as exc:
        raise DatasetError(f"cannot read the dataset {path}: {exc.strerror or exc}") from None
    digest = hashlib.sha256(data).hexdigest()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    rows, fmt = _parse_rows(path, text)
    records: list[QARecord] = []
    seen: dict[str, str] = {}
    for where, row in rows:
        try:
            record = _record(path, where, row)
        except RecursionError:  # str() of a field nested almost as deeply as json could read
            raise DatasetError(f"{path}: {where}: a field nested too deeply to read") from None
        if record.id in seen:
            raise DatasetError(f"{path}: duplicate id {record.id!r} ({seen[record.id]} and {where})")
        seen[record.id] = where
        records.append(record)
    if not records:
        raise DatasetError(f"{path}: no questions in the file")
    if limit is not None:
        records = records[:limit]
    return Dataset(path=path, format=fmt, sha256=digest, records=records)


def _parse_rows(path: Path, text: str) -> tuple[list[tuple[str, Any]], str]:
    """(where, raw record) pairs and the format name; `where` is "record N" or "line N" for messages."""
    stripped = text.lstrip()
    if not stripped:
        raise DatasetError(f"{path}: the file is empty")
    if stripped.startswith("["):
        try:
            data = jsonio.loads(text)
        except jsonio.JSONReadError as exc:
            raise DatasetError(f"{path}: {_where_unreadable(text, exc)}") from None
        rows = [(f"record {number}", row) for number, row in enumerate(data, start=1)]
        is_hotpot = any(isinstance(row, dict) and "context" in row for _, row in rows)
        return rows, "hotpotqa" if is_hotpot else "json"
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((f"line {number}", jsonio.loads(line)))
        except jsonio.JSONReadError as exc:
            if exc.kind != "syntax":
                raise DatasetError(f"{path}: line {number}: {exc}") from None
            raise DatasetError(
                f"{path}: line {number} is not valid JSON ({exc.reason}); expected HotpotQA JSON or JSONL records"
            ) from None
    return rows, "jsonl"


def _where_unreadable(text: str, exc: jsonio.JSONReadError) -> str:
    """Why a JSON list cannot be read, naming the first record that fails when the list itself is valid."""
    if exc.kind != "syntax":
        try:
            _, members = jsonio.loads_members(text)
        except jsonio.JSONReadError:
            return str(exc)
        for number, (_, value) in enumerate(members, start=1):
            if isinstance(value, jsonio.JSONReadError):
                return f"record {number}: {value}"
        return str(exc)
    return f"not valid JSON (line {exc.line}, column {exc.column}: {exc.reason})"


def _record(path: Path, where: str, row: Any) -> QARecord:
    if not isinstance(row, dict):
        raise DatasetError(f"{path}: {where} is not a JSON object")
    rid = row.get("_id", row.get("id"))
    if rid is None or str(rid).strip() == "":
        raise DatasetError(f"{path}: {where} has no id (`id` or `_id`)")
    question = row.get("question")
    if not isinstance(question, str) or not question.strip():
        raise DatasetError(f"{path}: {where} (id {rid!r}) has no question")
    answerable = row.get("answerable", True)
    if not isinstance(answerable, bool):
        raise DatasetError(f"{path}: {where} (id {rid!r}): answerable must be true or false")
    answer = row.get("answer") if answerable else ""
    if isinstance(answer, (int, float)) and not isinstance(answer, bool):
        answer = str(answer)
    if answerable and (not isinstance(answer, str) or not answer.strip()):
        raise DatasetError(f"{path}: {where} (id {rid!r}) has no answer")
    assert isinstance(answer, str)
    answers = _variants(path, where, rid, answer.strip(), row.get("answers")) if answerable else ()
    context = _context(path, where, row.get("context"))
    facts = _facts(path, where, row["supporting_facts"]) if row.get("supporting_facts") is not None else ()
    supporting = row.get("supporting_titles")
    if supporting is None and facts:
        supporting = [title for title, _ in facts]
    if supporting is not None and not (
        isinstance(supporting, list) and all(isinstance(title, str) for title in supporting)
    ):
        raise DatasetError(f"{path}: {where} (id {rid!r}): supporting_titles must be a list of strings")
    return QARecord(
        id=str(rid),
        question=question.strip(),
        answer=answer.strip(),
        answers=answers,
        supporting_titles=tuple(dict.fromkeys(supporting or ())),
        type=_optional_text(row.get("type")),
        level=_optional_text(row.get("level")),
        context=context,
        supporting_facts=facts,
        answerable=answerable,
    )


def _variants(path: Path, where: str, rid: Any, answer: str, answers: Any) -> tuple[str, ...]:
    """The accepted answers of a record: its answer, then the other variants `answers` lists (None: none)."""
    if answers is None:
        return (answer,)
    if not isinstance(answers, list) or not all(isinstance(variant, str) and variant.strip() for variant in answers):
        raise DatasetError(f"{path}: {where} (id {rid!r}): answers must be a list of non-empty strings")
    return tuple(dict.fromkeys([answer, *(variant.strip() for variant in answers)]))


def _context(path: Path, where: str, context: Any) -> tuple[Paragraph, ...]:
    if context is None:
        return ()
    paragraphs = []
    try:
        for title, sentences in context:
            if isinstance(sentences, str):
                sentences = [sentences]
            text = "".join(str(sentence) for sentence in sentences).strip()
            paragraphs.append(Paragraph(str(title), " ".join(text.split()), tuple(str(s) for s in sentences)))
    except (TypeError, ValueError):
        raise DatasetError(f"{path}: {where}: context must be a list of [title, sentences] pairs") from None
    return tuple(paragraphs)


def _facts(path: Path, where: str, facts: Any) -> tuple[tuple[str, int], ...]:
    try:
        return tuple((str(title), int(sentence)) for title, sentence in facts)
    except (TypeError, ValueError):
        raise DatasetError(f"{path}: {where}: supporting_facts must be a list of [title, sentence] pairs") from None


def _optional_text(value: Any) -> str | None:
    return None if value is None or str(value).strip() == "" else str(value)
