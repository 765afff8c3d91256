"""Named indexes under `home_dir()/indexes/NAME`, `open_corpus`, and building or updating an index from files.

This is the layer the CLI and the agent call: it turns "a name, an index folder, or a folder of documents"
into a ready BM25Index, and an `--update` into the smallest change (new, changed and deleted files only).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from offline_agent import incoming
from offline_agent.errors import ConfigError, RetrievalError
from offline_agent.retrieval import storage
from offline_agent.retrieval.analyzer import Analyzer
from offline_agent.retrieval.boilerplate import TitleBoilerplate, detect_titles, is_page
from offline_agent.retrieval.boilerplate_blocks import (
    BlockBoilerplate,
    block_texts,
    boilerplate_of,
    find_blocks,
    holding,
    recorded_pages,
)
from offline_agent.retrieval.duplicates import twins_to_read
from offline_agent.retrieval.encode import PassageEncoder
from offline_agent.retrieval.index import BM25Index
from offline_agent.retrieval.ingest import FileEntry, Ingested, IngestOptions, ingest_paths, read_entries, walk
from offline_agent.retrieval.passages import Passage

_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def indexes_dir() -> Path:
    """Where named indexes live: `home_dir()/indexes`."""
    from offline_agent.models import home_dir

    return home_dir() / "indexes"


def index_path(name: str) -> Path:
    """The folder of the index called `name` (which must be a plain name, not a path)."""
    if not _NAME_RE.fullmatch(name) or name.endswith(".tmp"):
        raise ConfigError(f"bad index name {name!r}: use letters, digits, '.', '_' and '-' (not a path)")
    return indexes_dir() / name


def list_indexes() -> list[dict[str, Any]]:
    """Name, path, passages, documents, size and build time of every named index, by name."""
    root = indexes_dir()
    out = []
    if not root.is_dir():
        return out
    for child in sorted(root.iterdir()):
        if child.name.startswith(".") or not storage.is_index_dir(child):
            continue
        try:
            out.append(describe(child))
        except RetrievalError as exc:
            out.append({"name": child.name, "path": str(child), "error": str(exc)})
    return out


def describe(path: Path, *, duplicates: bool = False) -> dict[str, Any]:
    """What `index info` shows, from the manifest and meta.json only (no arrays are read); with `duplicates`, the
    files not indexed because another file holds the same text, each with that file."""
    manifest = storage.read_manifest(path)
    _, meta, extra, _ = storage.read_index(path, mmap=True)
    files = extra.get("files", {})
    twins = [{"path": p, "same_as": f["duplicate_of"]} for p, f in files.items() if f.get("duplicate_of")]
    data = {
        "name": path.name,
        "path": str(path),
        "passages": meta.get("passages"),
        "documents": meta.get("documents"),
        "terms": meta.get("terms"),
        "postings": meta.get("postings"),
        "bytes": storage.disk_size(path),
        "written_at": manifest.get("written_at"),
        "written_by": manifest.get("written_by"),
        "format_version": manifest.get("version"),
        "bm25": meta.get("bm25"),
        "analyzer": {k: v for k, v in (meta.get("analyzer") or {}).items() if k != "stopwords"},
        "roots": extra.get("roots", []),
        "files": len(files),
        "duplicates": len(twins),
        "ingest": extra.get("ingest", {}),
        "boilerplate": boilerplate_record(extra.get("boilerplate")),
    }
    if duplicates:
        data["duplicate_files"] = twins
    return data


def remove(name: str) -> Path:
    """Delete the named index; RetrievalError if there is none."""
    path = index_path(name)
    if not storage.is_index_dir(path):
        raise RetrievalError(f"no index named {name!r} (see `offline-agent index list`)")
    storage.remove_index(path)
    return path


def open_corpus(path_or_name: str | Path, options: IngestOptions | None = None) -> BM25Index:
    """A ready index from a saved index folder, an index name, or documents (a folder or file, built here).

    Missing path: RetrievalError("corpus not found: PATH"); nothing to index: RetrievalError("corpus is empty:
    PATH (N files skipped: reasons)").
    """
    path = Path(path_or_name).expanduser()
    if storage.is_index_dir(path):
        return BM25Index.load(path)
    if path.exists():
        return build_from_paths([path], options=options).index
    if isinstance(path_or_name, str) and _NAME_RE.fullmatch(path_or_name):
        named = indexes_dir() / path_or_name
        if storage.is_index_dir(named):
            return BM25Index.load(named)
    raise RetrievalError(f"corpus not found: {path_or_name}")


def open_saved(name_or_path: str | Path) -> BM25Index:
    """A saved index: the named index NAME (under indexes_dir()), or the folder of an index; never documents.

    A plain name means the named index even when a folder of that name is in the current directory.
    """
    text = str(name_or_path)
    if isinstance(name_or_path, str) and _NAME_RE.fullmatch(text) and not text.endswith(".tmp"):
        named = indexes_dir() / text
        if storage.is_index_dir(named):
            return BM25Index.load(named)
    path = Path(name_or_path).expanduser()
    if storage.is_index_dir(path):
        return BM25Index.load(path)
    if path.exists():
        raise RetrievalError(
            f"{path} is not an index (no {storage.MANIFEST}); to search documents without indexing them, use "
            f"--corpus {text}, or build an index with `offline-agent index {text} --name NAME`"
        )
    raise RetrievalError(f"no index named {text!r} (see `offline-agent index list`)")


@dataclass
class BuildReport:
    """An index built or updated from files, and what happened to each file."""

    index: BM25Index
    ingested: Ingested
    added_files: list[str] = field(default_factory=list)
    changed_files: list[str] = field(default_factory=list)
    removed_files: list[str] = field(default_factory=list)
    unchanged_files: int = 0


def build_from_paths(
    paths: Sequence[str | Path],
    *,
    options: IngestOptions | None = None,
    analyzer: Analyzer | None = None,
    variant: str = "okapi",
    workers: int = 1,
    on_file: Callable[[FileEntry, int], None] | None = None,
    on_files: Callable[[Sequence[FileEntry]], None] | None = None,
    on_passages: Callable[[int], None] | None = None,
) -> BuildReport:
    """Ingest `paths` and build an index in memory (RetrievalError when no passage comes out); `workers` processes
    read the files while this one tokenizes their passages (encode.PassageEncoder). The pages that hold blocks of
    text the corpus repeats (boilerplate_blocks.py) are read twice: to find them, then to leave them out."""
    options = options or IngestOptions()
    entries, skipped = _walk_checked(paths, options)
    titles, page_titles = detect_titles(entries)
    options = replace(options, titles=titles)
    if on_files is not None:
        on_files(entries)
    analyzer = analyzer if analyzer is not None else Analyzer()
    encoder = PassageEncoder(analyzer, workers=workers)
    ingested = ingest_paths(paths, options, progress=on_file, entries=entries, workers=workers, on_read=encoder.add)
    ingested.skipped[:0] = skipped
    # The blocks the pages repeat are known once every page is read: the pages that hold them are read again.
    blocks = _blocks_found(ingested.files, entries, options, BlockBoilerplate())
    if blocks:
        options = replace(options, blocks=blocks)
        affected = holding(ingested.files, blocks.keys())
        again = _read_again([e for e in entries if e.source in affected], options, workers, encoder)
        _replace_passages(ingested, again)
    if not ingested.passages:
        raise RetrievalError(_empty_message(paths, ingested))
    index = BM25Index.build(
        ingested.passages,
        analyzer=analyzer,
        variant=variant,
        progress=on_passages,
        encoded=encoder.encoded(ingested.passages),
    )
    _keep_page_titles(ingested.files, page_titles)
    index.extra = {
        "roots": [incoming.file_name(Path(p).absolute()) for p in paths],
        "ingest": options.to_dict(),
        "files": ingested.files,
        "boilerplate": {**options.titles.to_dict(), **options.blocks.to_dict()},
    }
    return BuildReport(index, ingested, added_files=sorted(ingested.files))


def update_from_paths(
    index: BM25Index,
    paths: Sequence[str | Path] | None = None,
    *,
    options: IngestOptions | None = None,
    workers: int = 1,
    on_file: Callable[[FileEntry, int], None] | None = None,
    on_files: Callable[[Sequence[FileEntry]], None] | None = None,
    on_passages: Callable[[int], None] | None = None,
) -> BuildReport:
    """Bring `index` in line with the files under `paths` (default: the roots it was built from).

    Files whose size and mtime are unchanged are not read; others are re-read and compared by sha256. Passages
    of changed and deleted files are deleted, those of new and changed files added, in one weight update. A file
    noted as the duplicate of one that changed or went is read again too (it may now be indexed itself), and a
    file read now that duplicates one in the index gives no passages (duplicates.py). Where the title affixes or
    the blocks of text that the pages repeat differ from those the index left out (boilerplate.py,
    boilerplate_blocks.py), the pages they concern are read again, as a fresh build would read them.
    """
    extra = index.extra or {}
    if paths is None or not paths:
        paths = extra.get("roots") or []
        if not paths:
            raise ConfigError("this index has no recorded source folders; give the paths to update from")
    if options is None:
        options = saved_options(index)
    old_files: dict[str, dict[str, Any]] = dict(extra.get("files") or {})
    entries, skipped = _walk_checked(paths, options)
    titles, page_titles = detect_titles(entries, old_files)
    # Pages are read with the blocks the index left out; where the blocks found once they are read differ, the
    # pages that hold one that came or went are read again.
    old_blocks = BlockBoilerplate.from_dict(extra.get("boilerplate"))
    options = replace(options, titles=titles, blocks=old_blocks)
    # Pages titled with other boilerplate than the corpus now shows are read again, as a build would title them.
    retitle = options.titles.affixes() != TitleBoilerplate.from_dict(extra.get("boilerplate")).affixes()
    seen = {e.source for e in entries}
    to_read = [
        e
        for e in entries
        if (f := old_files.get(e.source)) is None
        or (f["size"], f["mtime_ns"]) != (e.size, e.mtime_ns)
        or (retitle and is_page(e.path))
        or "blocks" not in f  # recorded before blocks were looked for: their blocks are not known
    ]
    reading = {e.source for e in to_read}
    reading |= twins_to_read(old_files, reading | (set(old_files) - seen))
    to_read = [e for e in entries if e.source in reading]
    staying = {s: f for s, f in old_files.items() if s in seen and s not in reading and not f.get("duplicate_of")}
    indexed_before = {s for s, f in old_files.items() if not f.get("duplicate_of")}
    if on_files is not None:
        on_files(to_read)
    encoder = PassageEncoder(index.analyzer, workers=workers)
    ingested = ingest_paths(
        paths,
        options,
        progress=on_file,
        entries=to_read,
        workers=workers,
        indexed=staying,
        known=indexed_before,
        on_read=encoder.add,
    )
    ingested.skipped[:0] = skipped
    report = BuildReport(index, ingested, unchanged_files=len(entries) - len(to_read))
    new_files = {k: v for k, v in old_files.items() if k in seen}
    by_source: dict[str, list[Any]] = {}
    for p in ingested.passages:
        by_source.setdefault(p.source, []).append(p)
    dropped = [s for s in old_files if s not in seen]
    report.removed_files = sorted(dropped)
    add: dict[str, list[Passage]] = {}
    for source, fingerprint in ingested.files.items():
        before = old_files.get(source)
        was_indexed = before is not None and not before.get("duplicate_of")
        is_indexed = not fingerprint.get("duplicate_of")
        same = before is not None and before.get("sha256") == fingerprint["sha256"] and was_indexed == is_indexed
        if same and not (retitle and is_indexed and is_page(source)):
            # touched but identical (or a duplicate still): keep its passages, or its note
            new_files[source] = dict(fingerprint, passages=before.get("passages", fingerprint.get("passages")))
            report.unchanged_files += 1
            continue
        (report.changed_files if before is not None else report.added_files).append(source)
        if was_indexed:
            dropped.append(source)
        new_files[source] = fingerprint
        add[source] = by_source.get(source, [])
    # A file that used to be indexed and is now skipped (emptied, made unreadable) loses its passages.
    for source, _why in ingested.skipped:
        if source in old_files and source in seen:
            dropped.append(source)
            new_files.pop(source, None)
            report.removed_files.append(source)
    blocks = _blocks_found(new_files, entries, options, old_blocks)
    if blocks.keys() != old_blocks.keys():
        options = replace(options, blocks=blocks)
        affected = holding(new_files, blocks.keys() ^ old_blocks.keys())
        again = _read_again([e for e in entries if e.source in affected], options, workers, encoder)
        for source, outcome in again.items():
            kept = source not in add  # its passages, in the index, were made with the blocks left out before
            if kept:
                dropped.append(source)
                report.unchanged_files -= 1
            if isinstance(outcome, str):  # changed on disk since, and now skipped
                add.pop(source, None)
                new_files.pop(source, None)
                ingested.skipped.append((source, outcome))
                report.removed_files.append(source)
                continue
            if kept:
                report.changed_files.append(source)
            add[source] = outcome[0]
            new_files[source] = dict(new_files[source], **outcome[1], passages=len(outcome[0]))
    else:
        options = replace(options, blocks=blocks)  # the same blocks, on as many pages as now hold them
    added = [p for passages in add.values() for p in passages]
    delete_ids = index.ids_of_sources(set(dropped))
    if added or delete_ids:
        index.update(add=added, delete=delete_ids, progress=on_passages, encoded=encoder.encoded(added))
    _keep_page_titles(new_files, page_titles)
    roots = [str(Path(p).absolute()) for p in paths]
    boilerplate = {**options.titles.to_dict(), **options.blocks.to_dict()}
    index.extra = dict(extra, files=new_files, roots=roots, ingest=options.to_dict(), boilerplate=boilerplate)
    if len(index) == 0:
        raise RetrievalError(_empty_message(paths, ingested))
    return report


def saved_options(index: BM25Index) -> IngestOptions:
    """The ingest options `index` was built (or last updated) with: chunking, record fields, size limit and the
    --include/--exclude patterns, which `--update` applies again unless it is given others."""
    saved = (index.extra or {}).get("ingest") or {}
    return IngestOptions(**{k: v for k, v in saved.items() if k in IngestOptions.__dataclass_fields__})


def boilerplate_record(recorded: dict[str, Any] | None) -> dict[str, Any]:
    """The boilerplate an index recorded (title affixes and blocks; none of a kind it was written before), as
    `index info` shows it."""
    return {**TitleBoilerplate.from_dict(recorded).to_dict(), **BlockBoilerplate.from_dict(recorded).to_dict()}


def _blocks_found(
    files: dict[str, dict[str, Any]], entries: Sequence[FileEntry], options: IngestOptions, known: BlockBoilerplate
) -> BlockBoilerplate:
    """The blocks that the pages among `files` (the index's records) repeat (boilerplate_blocks.py), each with its
    text: from `known` where it was found before, else from a page that holds it, read again (a block whose page
    cannot be read again is left out)."""
    found = find_blocks(recorded_pages(files))
    texts = {key: text for key, text, _ in known.blocks}
    missing = set(found) - set(texts)
    if missing:
        by_source = {e.source: e for e in entries}
        for source in holding(files, missing):
            if (entry := by_source.get(source)) is not None:
                texts.update(block_texts(entry.path, entry.doc_id, options.fields, missing))
                missing -= set(texts)
            if not missing:
                break
    return boilerplate_of({key: n for key, n in found.items() if key not in missing}, texts)


def _read_again(
    entries: Sequence[FileEntry], options: IngestOptions, workers: int, encoder: PassageEncoder
) -> dict[str, tuple[list[Passage], dict[str, Any]] | str]:
    """Each of `entries` read again (with other boilerplate blocks left out): its passages and fingerprint, or the
    reason it is now skipped; the passages are tokenized as they come, in the place of those read before."""
    out: dict[str, tuple[list[Passage], dict[str, Any]] | str] = {}
    for entry, outcome in read_entries(entries, options, workers):
        if not isinstance(outcome, str):
            encoder.add(entry.source, outcome[0])  # replaces what it was given for the file before
            outcome = outcome[:2]
        out[entry.source] = outcome
    return out


def _replace_passages(ingested: Ingested, again: dict[str, tuple[list[Passage], dict[str, Any]] | str]) -> None:
    """`ingested` with the passages (and records) of the files read `again` in the place of those read before,
    every passage numbered again from 0."""
    passages: list[Passage] = []
    for source, run in itertools.groupby(ingested.passages, key=lambda p: p.source):
        outcome = again.get(source)
        if isinstance(outcome, str):  # changed on disk since, and now skipped
            del ingested.files[source]
            ingested.skipped.append((source, outcome))
            continue
        if outcome is not None:
            run = outcome[0]
            ingested.files[source].update(outcome[1], passages=len(outcome[0]))
        base = len(passages)
        passages.extend(p.with_id(base + i) for i, p in enumerate(run))
    ingested.passages = passages


def _keep_page_titles(files: dict[str, dict[str, Any]], page_titles: dict[str, str]) -> None:
    """Record each page's `<title>` with its file, for the next update's look at the titles (boilerplate.py)."""
    for source, record in files.items():
        if source in page_titles:
            record["page_title"] = page_titles[source]


def _walk_checked(paths: Sequence[str | Path], options: IngestOptions) -> tuple[list[FileEntry], list[tuple[str, str]]]:
    for p in paths:
        if not Path(p).exists() and not Path(p).is_symlink():
            raise RetrievalError(f"corpus not found: {p}")
    return walk(paths, options.path_filter)


def _empty_message(paths: Sequence[str | Path], ingested: Ingested) -> str:
    where = ", ".join(str(p) for p in paths)
    summary = ingested.skip_summary()
    if not summary and ingested.notes:
        summary = f"{len(ingested.notes)} records skipped: {ingested.notes[0][1]}"
    return f"corpus is empty: {where} ({summary or '0 files skipped'})"
