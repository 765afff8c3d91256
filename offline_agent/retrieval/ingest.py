"""From paths on disk to passages: walk folders, read each supported file, chunk long documents.

Every file that is not indexed is reported with a reason (binary, not UTF-8, empty, too large, unreadable,
symlink loop, unsupported type, broken records inside a JSONL, ...), so a user can see what the index holds; a
file whose text another file holds too is noted as that file's duplicate (duplicates.py).
Each file's size, modification time and sha256 are kept, so that `--update` re-reads only new and changed
files.

Document ids: the file path relative to the root it was found under (with the root's name in front when
several roots are given), or the record id for JSON/JSONL/CSV rows. Hidden files and folders (names starting
with ".") are skipped, and so are those the --include/--exclude patterns leave out (globs.py).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import Any

from offline_agent import incoming
from offline_agent.retrieval.boilerplate import TitleBoilerplate, is_page
from offline_agent.retrieval.boilerplate_blocks import BlockBoilerplate, page_keys
from offline_agent.retrieval.chunking import document_passages
from offline_agent.retrieval.duplicates import Candidate, content_key, find_duplicates, source_copy_of
from offline_agent.retrieval.generated import asked_for, generated_by_content, generated_by_name, may_be_generated
from offline_agent.retrieval.globs import PathFilter
from offline_agent.retrieval.passages import Passage
from offline_agent.retrieval.readers import Fields, SkipFile, read_document_file, supported_extensions
from offline_agent.retrieval.readers.limits import DEFAULT_LIMITS, ReadLimits

DEFAULT_MAX_FILE_BYTES = 256 << 20


@dataclass(frozen=True)
class IngestOptions:
    """How files become passages: chunk size and overlap in words, record fields, the file size limit, the
    --include/--exclude patterns of the walk, and the bounds the readers read under (`--limit`)."""

    chunk_size: int = 200
    chunk_overlap: int = 40
    text_field: str | None = None
    title_field: str | None = None
    id_field: str | None = None
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    limits: ReadLimits = DEFAULT_LIMITS
    # Found from the corpus (boilerplate.py, boilerplate_blocks.py) by the build, not given by the user: recorded
    # apart from the options.
    titles: TitleBoilerplate = field(default_factory=TitleBoilerplate)
    blocks: BlockBoilerplate = field(default_factory=BlockBoilerplate)

    def __post_init__(self) -> None:
        from offline_agent.errors import ConfigError

        if self.chunk_size < 1 or not 0 <= self.chunk_overlap < self.chunk_size:
            raise ConfigError(
                f"need chunk size >= 1 and 0 <= overlap < size, got {self.chunk_size} and {self.chunk_overlap}"
            )
        for name in ("include", "exclude"):  # lists, as read back from an index's JSON, or one pattern
            value = getattr(self, name)
            object.__setattr__(self, name, (value,) if isinstance(value, str) else tuple(value))
        PathFilter(self.include, self.exclude)  # a bad pattern fails here, before any file is read
        if not isinstance(self.limits, ReadLimits):  # as read back from an index's JSON
            object.__setattr__(self, "limits", ReadLimits.from_dict(self.limits))

    @property
    def fields(self) -> Fields:
        return Fields(self.text_field, self.title_field, self.id_field, self.limits)

    @property
    def path_filter(self) -> PathFilter:
        return PathFilter(self.include, self.exclude)

    def to_dict(self) -> dict[str, Any]:
        out = {
            f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v
            for f in dataclass_fields(self)
            if f.name not in ("titles", "blocks")
        }
        out["limits"] = self.limits.to_dict()
        return out


@dataclass(frozen=True)
class FileEntry:
    """A file found by the walk: where it is, its document id, and its fingerprint without reading it."""

    path: Path
    doc_id: str
    size: int
    mtime_ns: int
    read_generated: bool = False  # named on the command line or by an --include: read even if generated.py says not

    @property
    def source(self) -> str:
        return incoming.file_name(self.path)


@dataclass
class Ingested:
    """What ingestion produced: passages (ids 0..n-1), fingerprints of the files read, what was skipped."""

    passages: list[Passage] = field(default_factory=list)
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)
    duplicates: list[tuple[str, str]] = field(default_factory=list)  # (file, the file indexed in its place)
    n_files: int = 0

    def skip_summary(self, limit: int = 3) -> str:
        """'N files skipped: reason (count), ...' grouped by reason, or '' when none."""
        if not self.skipped:
            return ""
        reasons = Counter(_reason_kind(r) for _, r in self.skipped)
        parts = [f"{why} ({n})" if n > 1 else why for why, n in reasons.most_common(limit)]
        if len(reasons) > limit:
            parts.append(f"{len(reasons) - limit} other reasons")
        return f"{len(self.skipped)} files skipped: " + "; ".join(parts)


def _reason_kind(reason: str) -> str:
    # "not valid UTF-8 (byte 0xff at offset 3)" and "... offset 9" group together.
    return reason.split(" (", 1)[0] if reason.startswith(("not valid UTF-8", "too large", "generated file")) else reason


def walk(
    paths: Sequence[str | Path], filters: PathFilter | None = None
) -> tuple[list[FileEntry], list[tuple[str, str]]]:
    """Files under `paths` (sorted, symlinks followed once, hidden names and what `filters` leave out skipped)
    and the skipped entries."""
    entries: list[FileEntry] = []
    skipped: list[tuple[str, str]] = []
    roots = [Path(p) for p in paths]
    prefix = len(roots) > 1
    seen_dirs: set[tuple[int, int]] = set()
    seen_files: set[tuple[int, int]] = set()
    for root in roots:
        root = Path(os.path.abspath(root))
        label = root.name if prefix else ""

        def doc_id_for(path: Path, root: Path = root, label: str = label) -> str:
            rel = path.name if path == root else path.relative_to(root).as_posix()
            return incoming.file_name(f"{label}/{rel}" if label else rel, note=False)

        _walk_one(root, root, doc_id_for, entries, skipped, seen_dirs, seen_files, filters, explicit=True)
    return entries, [(incoming.file_name(path), why) for path, why in skipped]


def _walk_one(
    path: Path,
    root: Path,
    doc_id_for: Callable[[Path], str],
    entries: list[FileEntry],
    skipped: list[tuple[str, str]],
    seen_dirs: set[tuple[int, int]],
    seen_files: set[tuple[int, int]],
    filters: PathFilter | None = None,
    *,
    explicit: bool = False,
) -> None:
    try:
        st = path.stat()
    except FileNotFoundError:
        if path.is_symlink():
            skipped.append((str(path), "broken symlink"))
        elif explicit:
            skipped.append((str(path), "not found"))
        return
    except PermissionError:
        skipped.append((str(path), "permission denied"))
        return
    except OSError as exc:  # ELOOP for a symlink that points at itself, and friends
        skipped.append((str(path), "symlink loop" if exc.errno == 40 else f"cannot stat ({exc.strerror})"))
        return
    key = (st.st_dev, st.st_ino)
    relative = "" if explicit or not filters else path.relative_to(root).as_posix()
    if path.is_dir():
        if relative and (pattern := filters.excluded_folder(relative)):
            skipped.append((str(path), f"excluded by --exclude {pattern}"))
            return
        if key in seen_dirs:
            skipped.append((str(path), "symlink loop (folder already visited)"))
            return
        seen_dirs.add(key)
        try:
            children = sorted(os.scandir(path), key=lambda e: e.name)
        except PermissionError:
            skipped.append((str(path), "permission denied"))
            return
        except OSError as exc:
            skipped.append((str(path), f"cannot list folder ({exc.strerror})"))
            return
        for child in children:
            if child.name.startswith("."):
                continue
            _walk_one(Path(child.path), root, doc_id_for, entries, skipped, seen_dirs, seen_files, filters)
        return
    if not path.is_file():
        skipped.append((str(path), "not a regular file"))
        return
    if relative and (reason := filters.left_out(relative)):
        skipped.append((str(path), reason))
        return
    if key in seen_files:
        return  # the same file reached twice through symlinks: index it once
    seen_files.add(key)
    asked = explicit or (
        may_be_generated(path.name) and bool(filters) and asked_for(path.relative_to(root).as_posix(), filters.include)
    )
    if not asked and (reason := generated_by_name(path.name)):
        skipped.append((str(path), reason))
        return
    if not explicit and path.suffix.lower() not in supported_extensions():
        skipped.append((str(path), f"unsupported file type {path.suffix.lower()}"))
        return
    entries.append(FileEntry(path, doc_id_for(path), st.st_size, st.st_mtime_ns, asked))


def read_entry(
    entry: FileEntry, options: IngestOptions, *, chunk: bool = True
) -> tuple[list[Passage], dict[str, Any], list[str]]:
    """Passages (ids from 0) of one file, its fingerprint, and notes on records skipped inside it; without `chunk`,
    no passages (for a file expected to be a duplicate: its fingerprint is all that is needed).

    Raises SkipFile when the whole file is skipped.
    """
    if entry.size == 0:
        raise SkipFile("empty file")
    if entry.size > options.max_file_bytes:
        raise SkipFile(f"too large ({_size(entry.size)} > {_size(options.max_file_bytes)}; raise --max-file-size)")
    try:
        data = entry.path.read_bytes()
    except PermissionError:
        raise SkipFile("permission denied") from None
    except OSError as exc:
        raise SkipFile(f"unreadable ({exc.strerror or exc})") from None
    if not entry.read_generated and (reason := generated_by_content(entry.path.name, data)):
        raise SkipFile(reason)
    fingerprint = {"size": len(data), "mtime_ns": entry.mtime_ns, "sha256": hashlib.sha256(data).hexdigest()}
    docs, notes = read_document_file(entry.path, data, entry.doc_id, options.fields)
    del data
    fingerprint["content"] = content_key(docs)
    fingerprint["blocks"] = page_keys(docs)
    passages: list[Passage] = []
    for doc in docs if chunk else ():
        # a title taken from the file's name may hold its odd bytes
        title = incoming.file_name(doc.title, note=False)
        doc = dataclasses.replace(doc, title=options.titles.strip_title(title) if is_page(entry.path) else title)
        doc = options.blocks.strip(doc)
        size, overlap = options.chunk_size, options.chunk_overlap
        passages.extend(document_passages(doc, entry.source, size, overlap, first_id=len(passages)))
    if not chunk and any(doc.text[doc.body_start :].strip() for doc in docs):
        return passages, fingerprint, notes
    if not passages:
        raise SkipFile("no text" if not notes else f"no usable records ({notes[0]})")
    return passages, fingerprint, notes


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


def ingest_paths(
    paths: Sequence[str | Path] | str | Path,
    options: IngestOptions | None = None,
    *,
    progress: Callable[[FileEntry, int], None] | None = None,
    entries: Iterable[FileEntry] | None = None,
    workers: int = 1,
    indexed: dict[str, dict[str, Any]] | None = None,
    known: set[str] | frozenset[str] = frozenset(),
    on_read: Callable[[str, list[Passage]], None] | None = None,
) -> Ingested:
    """Read every supported file under `paths` into passages (ids 0..n-1), recording what was skipped and why, and
    which files duplicate another (duplicates.py: they give no passages).

    `progress` is called after each file with the entry and the number of passages it gave. Pass `entries` to
    read only those files (what `walk` found) instead of walking `paths`. `workers` > 1 reads files in that many
    processes (parallel.py), in the same order. For an update, `indexed` holds the records of the files that stay
    in the index as they are (a file read now that has the same text is their duplicate), and `known` the files
    read again that were indexed before (they keep their place before new duplicates). `on_read` is called with
    each file's source and passages (ids from 0) as soon as it is read, before duplicates are known (catalog.py
    tokenizes them there, while the workers read on).
    """
    options = options or IngestOptions()
    if isinstance(paths, (str, Path)):
        paths = [paths]
    out = Ingested()
    if entries is None:
        found, out.skipped = walk(paths, options.path_filter)
    else:
        found = list(entries)
    out.n_files = len(found)
    # Sphinx's copies of the pages' sources are read only for their fingerprint: chunking them, to find them
    # duplicates afterwards, cost as much as the pages themselves.
    pages = {e.source for e in found} | set(indexed or ())
    copies = {e.source for e in found if source_copy_of(e.source) in pages}
    read: list[tuple[FileEntry, list[Passage], dict[str, Any], list[str]]] = []
    for entry, outcome in read_entries(found, options, workers, unchunked=copies):
        if isinstance(outcome, str):
            out.skipped.append((entry.source, outcome))
            if progress is not None:
                progress(entry, 0)
            continue
        read.append((entry, *outcome))
        if on_read is not None:
            on_read(entry.source, outcome[0])
        if progress is not None:
            progress(entry, len(outcome[0]))
    candidates = [Candidate(entry.source, fp["content"], entry.source in known) for entry, _, fp, _ in read]
    twins = find_duplicates(candidates, indexed or {})
    for entry, passages, fingerprint, notes in read:
        if entry.source in copies and entry.source not in twins:  # its page was not read after all: index it
            outcome = read_outcome(entry, options)
            if isinstance(outcome, str):
                out.skipped.append((entry.source, outcome))
                continue
            passages, fingerprint, notes = outcome
        record = dict(fingerprint, doc_id=entry.doc_id)
        out.files[entry.source] = record
        if entry.source in twins:
            record.update(passages=0, duplicate_of=twins[entry.source])
            out.duplicates.append((entry.source, twins[entry.source]))
            continue
        base = len(out.passages)
        out.passages.extend(p.with_id(base + p.id) for p in passages)
        record["passages"] = len(passages)
        out.notes.extend((entry.source, n) for n in notes)
    return out


def read_entries(
    entries: Sequence[FileEntry], options: IngestOptions, workers: int = 1, unchunked: set[str] | None = None
) -> Iterator[tuple[FileEntry, tuple[list[Passage], dict[str, Any], list[str]] | str]]:
    """Each entry with what `read_entry` gave for it (not chunked for the sources in `unchunked`), or the reason
    it was skipped, in order; in `workers` processes where that pays (parallel.py)."""
    from offline_agent.retrieval.parallel import read_in_processes

    tasks = [(entry, entry.source not in (unchunked or ())) for entry in entries]
    if workers > 1:
        done = read_in_processes(tasks, functools.partial(_read_with, options), workers)
        if done is not None:
            yield from done
            return
    for entry, chunk in tasks:
        yield entry, read_outcome(entry, options, chunk)


def _read_with(options: IngestOptions, entry: FileEntry, chunk: bool) -> Any:
    """read_outcome with the options first, for a worker process (parallel.py calls read(entry, chunk))."""
    return read_outcome(entry, options, chunk)


def read_outcome(
    entry: FileEntry, options: IngestOptions, chunk: bool = True
) -> tuple[list[Passage], dict[str, Any], list[str]] | str:
    """`read_entry`, with a skipped file's reason as the outcome instead of an exception."""
    try:
        return read_entry(entry, options, chunk=chunk)
    except SkipFile as why:
        return str(why)
