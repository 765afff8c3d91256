"""`offline-agent index` and `offline-agent search`: build, update, inspect and query BM25 indexes of your
files.

`index` is a group whose default command is `build`, so `index PATH... --name NAME` and the subcommands `index
list | info NAME | rm NAME` live side by side (`index build PATH...` also works, and is how to index a folder
that happens to be called "list"). Progress bars go to stderr, results and summaries to stdout.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from offline_agent import incoming, jsonio
from offline_agent.errors import ConfigError
from offline_agent.terminal import shown, shown_name

_CONTEXT = {"help_option_names": ["-h", "--help"]}
_SIZE_RE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)?\s*", re.IGNORECASE)


class _DefaultBuildGroup(click.Group):
    """A group that runs `build` when the first argument is not one of its subcommands."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["build", *args]
        return super().parse_args(ctx, args)


def _parse_size(value: str) -> int:
    m = _SIZE_RE.fullmatch(value)
    if not m:
        raise click.BadParameter(f"not a size: {value!r} (try 512MB or 2GB)")
    unit = (m.group(2) or "").lower().rstrip("b").rstrip("i")
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[unit]
    return int(float(m.group(1)) * scale)


@contextmanager
def _progress(enabled: bool = True) -> Iterator[Any]:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[done]}"),
        TextColumn("{task.fields[extra]}"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
        disable=not (enabled and console.is_terminal),
    )
    with progress:
        yield progress


class _BuildProgress:
    """Callbacks for catalog.build_from_paths/update_from_paths that drive two rich bars: the files read (by their
    bytes, with files and MB done), then the passages tokenized."""

    def __init__(self, progress: Any) -> None:
        self.progress = progress
        self.files_task = None
        self.passages_task = None
        self.passages = 0
        self.files = self.total_files = 0
        self.bytes = self.total_bytes = 0

    def on_files(self, entries: Any) -> None:
        self.total_files, self.total_bytes = len(entries), sum(e.size for e in entries)
        self.files_task = self.progress.add_task("reading", total=self.total_bytes or None, done="", extra="")

    def on_file(self, entry: Any, n_passages: int) -> None:
        self.passages += n_passages
        self.files += 1
        self.bytes += entry.size
        task = next(t for t in self.progress.tasks if t.id == self.files_task)
        rate = self.bytes / task.elapsed / 1e6 if task.elapsed else 0.0
        self.progress.update(
            self.files_task,
            advance=entry.size,
            done=f"{self.files:,}/{self.total_files:,} files  {self.bytes / 1e6:,.1f}/{self.total_bytes / 1e6:,.1f} MB",
            extra=f"{self.passages:,} passages ({rate:,.1f} MB/s)",
        )

    def on_passages(self, n: int) -> None:
        if self.passages_task is None:
            self.passages_task = self.progress.add_task("indexing", total=self.passages or None, done="", extra="")
        task = next(t for t in self.progress.tasks if t.id == self.passages_task)
        self.progress.update(self.passages_task, advance=n, done=f"{int(task.completed) + n:,} passages")


@click.group("index", cls=_DefaultBuildGroup, context_settings=_CONTEXT, invoke_without_command=True)
@click.pass_context
def index(ctx: click.Context) -> None:
    """Build and manage BM25 indexes of your files.

    \b
    offline-agent index PATH... --name NAME            build (or rebuild) an index
    offline-agent index PATH... --name NAME --update   add new/changed files, drop deleted ones
    offline-agent index list | info NAME | rm NAME

    Supported files: text (.txt .md .rst), .html, records (.json .jsonl .csv .tsv), e-mail (.eml .mbox), source
    code (.py .js .ts .go .rs .java .c .sql .sh ... titled by their path), and with their extras .pdf, .docx,
    .odt, .epub and .rtf (pip install 'offline-agent[formats]' adds them all); see docs/formats.md. Generated
    files (search indexes, minified scripts) are skipped, a title suffix that a site's pages all repeat is left
    out of their titles, and a footer or banner they all repeat out of their passages (`index build --help`).
    Indexes live under $OFFLINE_AGENT_HOME/indexes (default: the user cache folder).
    """
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


@index.command("build", context_settings=_CONTEXT)
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--name",
    "-n",
    required=True,
    envvar="OFFLINE_AGENT_INDEX",
    help="Index name (or env OFFLINE_AGENT_INDEX).",
)
@click.option("--update", is_flag=True, help="Update an existing index: re-read only new and changed files.")
@click.option("--chunk-size", type=click.IntRange(min=1), default=None, help="Words per passage (default 200).")
@click.option(
    "--chunk-overlap",
    type=click.IntRange(min=0),
    default=None,
    help="Words shared by neighbours (default 40).",
)
@click.option("--text-field", default=None, help="Record field (JSON/JSONL) or column (CSV) holding the text.")
@click.option("--title-field", default=None, help="Record field or column holding the title.")
@click.option("--id-field", default=None, help="Record field or column holding the document id.")
@click.option("--max-file-size", default="256MB", show_default=True, help="Skip files larger than this.")
@click.option("--limit", "limits", multiple=True, metavar="NAME=VALUE",
              help="Raise (or lower) a bound the readers work under; repeatable: inflated-bytes=1GB (all a DOCX, ODT "
              "or EPUB inflates to), part-bytes=64MB (one parsed part: a chapter, a document.xml, an HTML page), "
              "message-bytes=16MB (one e-mail), depth=1000 (element nesting followed), attributes=200 (on one HTML "
              "element). Kept with the index for --update; docs/formats.md.")  # fmt: skip
@click.option("--include", multiple=True, metavar="GLOB",
              help="Read only the files under a folder whose path (relative to it) matches GLOB: '*.md' (any depth), "
              "'docs/**/*.rst' (anchored); repeatable. Kept with the index for --update.")  # fmt: skip
@click.option("--exclude", multiple=True, metavar="GLOB",
              help="Leave out files and folders matching GLOB: 'drafts/*', 'node_modules'; repeatable, wins over "
              "--include. Kept with the index for --update.")  # fmt: skip
@click.option("--stem/--no-stem", default=False, show_default=True, help="English Snowball stemming (needs PyStemmer).")
@click.option("--stopwords", type=click.Choice(["en", "none"]), default="en", show_default=True)
@click.option("--variant", type=click.Choice(["okapi", "lucene", "plus"]), default="okapi", show_default=True,
              help="BM25 variant (okapi = rank-bm25's BM25Okapi).")  # fmt: skip
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Processes that read files and tokenize passages (default: every core, at most 8).")  # fmt: skip
@click.option(
    "--scope",
    metavar="TEXT_OR_FILE",
    default=None,
    help="What the documents are about, in a sentence or two (or a file holding it): `ask` then refuses questions "
    "outside it. Kept with the index (scope.txt); --update keeps it unless given again.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def build(
    paths: tuple[Path, ...],
    name: str,
    update: bool,
    chunk_size: int | None,
    chunk_overlap: int | None,
    text_field: str | None,
    title_field: str | None,
    id_field: str | None,
    max_file_size: str,
    limits: tuple[str, ...],
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    stem: bool,
    stopwords: str,
    variant: str,
    workers: int | None,
    scope: str | None,
    as_json: bool,
) -> None:
    """Index files and folders under a name (the default command of `index`).

    --include and --exclude match paths relative to each folder given, with "/" between folders: `*` and `?`
    stay within a name, `**` spans folders, a pattern without "/" matches a name at any depth, and a pattern
    that matches a folder matches all it holds (docs/formats.md). --update reuses the patterns the index was
    built with; one given with --update replaces the stored one of its kind, and the files that then fall out
    are dropped from the index, those that come in are added.

    Generated files are skipped, each with the reason: search indexes (Sphinx's searchindex.js), minified
    JavaScript and CSS (a .min.js name, or lines averaging over 300 characters) and source maps; an --include
    pattern that matches the file itself reads it ('--include searchindex.js'). A title suffix or prefix that
    the corpus's HTML pages repeat (a site's name and version: at least 5 pages, and most pages of the folder
    that holds them) is left out of their titles, and a paragraph that pages of any format repeat among their
    first or last four (a footer, a version banner) out of their passages; both are kept with the index (`index
    info` shows them); see docs/ingestion.md.
    """
    scope_text = None
    if scope is not None:  # importing the agents' package costs a second: only for --scope
        from offline_agent.agents.scope import read_scope

        scope_text = read_scope(scope)  # a bad scope file fails before the build
    from offline_agent.retrieval import Analyzer, BM25Index, IngestOptions, ReadLimits, index_path
    from offline_agent.retrieval.catalog import build_from_paths, saved_options, update_from_paths
    from offline_agent.retrieval.encode import auto_workers
    from offline_agent.retrieval.storage import is_index_dir, writer_lock

    workers = workers or auto_workers()
    target = index_path(name)
    if is_index_dir(target):  # one writer at a time, from reading the index to saving it: no update is lost
        lock = writer_lock(
            target, on_wait=lambda who: click.echo(f"waiting for {who} to finish writing {name}", err=True)
        )
        click.get_current_context().with_resource(lock)
    size_given = chunk_size is not None or chunk_overlap is not None
    fields_given = any(f is not None for f in (text_field, title_field, id_field))
    options = IngestOptions(
        chunk_size=chunk_size or 200,
        chunk_overlap=40 if chunk_overlap is None else chunk_overlap,
        text_field=text_field,
        title_field=title_field,
        id_field=id_field,
        max_file_bytes=_parse_size(max_file_size),
        include=include,
        exclude=exclude,
        limits=ReadLimits().with_options(limits),  # a bad --limit fails here, before any file is read
    )
    if update:
        if not is_index_dir(target):
            raise ConfigError(f"no index named {name!r} to update; drop --update to build it")
        index_obj = BM25Index.load(target, mmap=True)
        options = _update_options(index_obj, options if (size_given or fields_given) else None, include, exclude)
        if limits:  # given on top of the limits the index was built with
            options = dataclasses.replace(options, limits=saved_options(index_obj).limits.with_options(limits))
        with _progress() as bars:
            cb = _BuildProgress(bars)
            report = update_from_paths(
                index_obj, list(paths), options=options, workers=workers, on_file=cb.on_file,
                on_files=cb.on_files, on_passages=cb.on_passages,
            )  # fmt: skip
    else:
        if not paths:
            raise click.UsageError("give at least one file or folder to index")
        analyzer = Analyzer(stopwords=None if stopwords == "none" else stopwords, stemmer="english" if stem else None)
        with _progress() as bars:
            cb = _BuildProgress(bars)
            report = build_from_paths(
                list(paths), options=options, analyzer=analyzer, variant=variant, workers=workers,
                on_file=cb.on_file, on_files=cb.on_files, on_passages=cb.on_passages,
            )  # fmt: skip
    report.index.save(target)
    if scope_text is not None:
        from offline_agent.runner import save_scope

        save_scope(target, scope_text)
    _print_build_summary(name, target, report, update, as_json)


def _update_options(index_obj: Any, given: Any, include: tuple[str, ...], exclude: tuple[str, ...]) -> Any:
    """The options of an --update: those given, else the stored ones, with the --include/--exclude patterns given
    replacing the stored ones of their kind (a line on stderr says so when they differ)."""
    from dataclasses import replace

    from offline_agent.retrieval.catalog import saved_options

    saved = saved_options(index_obj)
    options = replace(given or saved, include=include or saved.include, exclude=exclude or saved.exclude)
    for kind, before, after in (
        ("include", saved.include, options.include),
        ("exclude", saved.exclude, options.exclude),
    ):
        if before != after:
            click.echo(
                f"--{kind} changed from {list(before) or 'none'} to {list(after)}: files now left out are dropped "
                "from the index, files now let in are added",
                err=True,
            )
    return options


def _print_build_summary(name: str, target: Path, report: Any, update: bool, as_json: bool) -> None:
    ingested = report.ingested
    summary = {
        "name": name,
        "path": str(target),
        "passages": len(report.index),
        "documents": len(report.index.doc_ids()),
        "files_read": len(ingested.files),
        "added_files": report.added_files,
        "changed_files": report.changed_files,
        "removed_files": report.removed_files,
        "unchanged_files": report.unchanged_files,
        "skipped": [{"path": p, "reason": r} for p, r in ingested.skipped],
        "skipped_records": [{"path": p, "reason": r} for p, r in ingested.notes],
        "duplicates": [{"path": p, "same_as": q} for p, q in ingested.duplicates],
        "boilerplate": report.index.extra.get("boilerplate", {}),
    }
    if as_json:
        click.echo(jsonio.dumps(summary, indent=2))
        return
    if update:
        click.echo(
            f"updated {name}: {len(report.added_files)} new, {len(report.changed_files)} changed, "
            f"{len(report.removed_files)} removed, {report.unchanged_files} unchanged files; "
            f"{summary['passages']:,} passages from {summary['documents']:,} documents"
        )
    else:
        click.echo(
            f"indexed {summary['passages']:,} passages from {summary['documents']:,} documents in "
            f"{len(ingested.files):,} files into {name} ({target})"
        )
    for line in _boilerplate_lines(summary["boilerplate"]):
        click.echo(line)
    if ingested.duplicates:
        click.echo(
            f"{len(ingested.duplicates):,} duplicate files indexed once (the same text as another file; "
            f"`offline-agent index info {name} --duplicates` lists them)"
        )
    _echo_skips("skipped", ingested.skipped, ingested.skip_summary())
    if ingested.notes:
        by_file: dict[str, int] = {}
        for path, _ in ingested.notes:
            by_file[path] = by_file.get(path, 0) + 1
        lines = [(p, f"{n} skipped, first: {next(r for q, r in ingested.notes if q == p)}") for p, n in by_file.items()]
        headline = f"{len(ingested.notes)} records, messages or attachments skipped in {len(by_file)} files"
        _echo_skips("skipped inside files", lines, headline)


SHOWN_BLOCKS = 3  # of the blocks found to be boilerplate, those shown (--json gives them all)
SHOWN_BLOCK_CHARS = 80


def _boilerplate_lines(boilerplate: dict[str, Any]) -> list[str]:
    """One line for each title affix found to be the corpus's boilerplate (retrieval/boilerplate.py), and for the
    blocks of text found to be (retrieval/boilerplate_blocks.py) their number and the first few, shortened."""
    lines = [
        f"title {kind} left out as boilerplate: {shown(repr(affix['text']), one_line=True)} ({affix['pages']:,} pages)"
        for kind in ("suffix", "prefix")
        for affix in boilerplate.get(f"title_{kind}es", ())
    ]
    blocks = boilerplate.get("blocks") or []
    if blocks:
        lines.append(
            f"{len(blocks):,} repeated block{'s' if len(blocks) > 1 else ''} left out of passages as boilerplate:"
        )
    for block in blocks[:SHOWN_BLOCKS]:
        text = block["text"]
        text = text if len(text) <= SHOWN_BLOCK_CHARS else text[: SHOWN_BLOCK_CHARS - 1] + "…"
        lines.append(f"  {shown(repr(text), one_line=True)} ({block['pages']:,} pages)")
    if len(blocks) > SHOWN_BLOCKS:
        lines.append(f"  ... and {len(blocks) - SHOWN_BLOCKS:,} more (--json lists them all)")
    return lines


def _echo_skips(label: str, items: list[tuple[str, str]], headline: str, limit: int = 20) -> None:
    if not items:
        return
    click.echo(headline)
    for path, reason in items[:limit]:
        click.echo(f"  {shown_name(path)}: {shown(reason, one_line=True)}")
    if len(items) > limit:
        click.echo(f"  ... and {len(items) - limit} more ({label}; --json lists them all)")


@index.command("list", context_settings=_CONTEXT)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_(as_json: bool) -> None:
    """List the named indexes."""
    from offline_agent.retrieval import indexes_dir, list_indexes

    rows = list_indexes()
    if as_json:
        click.echo(jsonio.dumps(rows, indent=2))
        return
    if not rows:
        click.echo(f"no indexes in {indexes_dir()}")
        return
    for row in rows:
        if "error" in row:
            click.echo(f"{row['name']}\tdamaged: {shown_name(row['error'])}")
        else:
            click.echo(
                f"{row['name']}\t{row['passages']:,} passages\t{row['documents']:,} documents\t"
                f"{_human(row['bytes'])}\t{row['written_at']}"
            )


@index.command("info", context_settings=_CONTEXT)
@click.argument("name")
@click.option("--verify", is_flag=True, help="Also check every file's sha256 (reads the whole index).")
@click.option("--duplicates", "list_duplicates", is_flag=True,
              help="List the files not indexed because another file holds the same text.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def info(name: str, verify: bool, list_duplicates: bool, as_json: bool) -> None:
    """Show what an index holds and how it was built."""
    from offline_agent.errors import RetrievalError
    from offline_agent.retrieval import BM25Index, index_path
    from offline_agent.retrieval.catalog import describe
    from offline_agent.retrieval.storage import is_index_dir

    path = Path(name) if "/" in name or name.startswith(".") else index_path(name)
    if not is_index_dir(path):
        raise RetrievalError(f"no index named {name!r} (see `offline-agent index list`)")
    data = describe(path, duplicates=list_duplicates)
    if verify:
        BM25Index.load(path, verify=True)
        data["verified"] = True
    if list_duplicates and not as_json:
        for row in data["duplicate_files"]:
            click.echo(f"{shown_name(row['path'])}\tsame text as {shown_name(row['same_as'])}")
        return
    if as_json:
        click.echo(jsonio.dumps(data, indent=2))
        return
    for key in (
        "name",
        "path",
        "passages",
        "documents",
        "terms",
        "postings",
        "files",
        "duplicates",
        "written_at",
        "written_by",
    ):
        value = data[key]
        click.echo(f"{key}: {value:,}" if isinstance(value, int) else f"{key}: {shown_name(str(value))}")
    click.echo(f"size: {_human(data['bytes'])}")
    click.echo("bm25: " + ", ".join(f"{k}={v}" for k, v in (data["bm25"] or {}).items()))
    click.echo("analyzer: " + ", ".join(f"{k}={v}" for k, v in data["analyzer"].items()))
    click.echo("roots: " + ", ".join(shown_name(root) for root in data["roots"]))
    for kind in ("include", "exclude"):
        if data["ingest"].get(kind):
            click.echo(f"{kind}: " + " ".join(shown_name(p) for p in data["ingest"][kind]))
    for line in _boilerplate_lines(data["boilerplate"]):
        click.echo(line)
    if verify:
        click.echo("checksums: ok")


@index.command("rm", context_settings=_CONTEXT)
@click.argument("name")
def rm(name: str) -> None:
    """Delete a named index."""
    from offline_agent.retrieval.catalog import remove

    path = remove(name)
    click.echo(f"removed {name} ({path})")


def _human(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


@click.command("search", context_settings=_CONTEXT)
@click.argument("query")
@click.option("--index", "-i", "index_name", default=None, envvar="OFFLINE_AGENT_INDEX", metavar="NAME_OR_DIR",
              help="A saved index: its name, or its folder (env OFFLINE_AGENT_INDEX).")  # fmt: skip
@click.option("--corpus", "-c", "corpus_path", default=None, type=click.Path(path_type=Path), metavar="PATH",
              help="A folder or file of documents, indexed in memory for this search (nothing is saved).")  # fmt: skip
@click.option("-k", "k", type=click.IntRange(min=1), default=10, show_default=True, help="How many passages.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (one object with a list of hits).")
def search(query: str, index_name: str | None, corpus_path: Path | None, k: int, as_json: bool) -> None:
    """Search an index (--index) or a folder of documents (--corpus) and print the best passages with score,
    title and heading path, source with its line (or PDF page), and a snippet.

    --index NAME opens the index called NAME even when the current directory holds a folder of that name.
    """
    from offline_agent.retrieval import open_corpus
    from offline_agent.retrieval.catalog import open_saved
    from offline_agent.retrieval.snippets import highlight_spans, snippet

    query = incoming.clean(query, "the query")
    ctx = click.get_current_context()
    index_given = ctx.get_parameter_source("index_name") != click.core.ParameterSource.ENVIRONMENT
    if corpus_path is not None and index_name is not None and index_given:
        raise click.UsageError("give --index (a saved index) or --corpus (documents), not both")
    if corpus_path is not None:
        corpus, source = open_corpus(corpus_path), str(corpus_path)
    elif index_name:
        corpus, source = open_saved(index_name), index_name
    else:
        raise click.UsageError("give --index NAME (a saved index, see `offline-agent index list`) or --corpus PATH")
    result = corpus.search(query, k=k)
    if as_json:
        hits = []
        for rank, (passage, score) in enumerate(zip(result.passages, result.scores.tolist(), strict=True), 1):
            hit = dict(passage.dict(), rank=rank, score=score)
            hit["snippet"] = snippet(passage.text, query, corpus.analyzer)
            hit["highlights"] = highlight_spans(passage.text, query, corpus.analyzer)
            hits.append(hit)
        click.echo(jsonio.dumps({"query": query, "index": source, "hits": hits}, indent=2))
        return
    if not result.passages:
        click.echo(f"no passage matches {shown(repr(query))}")
        return
    tty = sys.stdout.isatty()
    mark = ("\x1b[1;33m", "\x1b[0m") if tty else ("**", "**")
    for rank, (passage, score) in enumerate(zip(result.passages, result.scores.tolist(), strict=True), 1):
        head = f"{rank}. [{score:.3f}] {shown(passage.label() if passage.title else passage.doc_id, one_line=True)}"
        click.echo(click.style(head, bold=True) if tty else head, color=tty)
        place = f" ({passage.place()})" if passage.place() else ""
        where = shown_name(passage.source or passage.doc_id)  # a path: escaped, never cut, so it names the file
        click.echo(f"   {where}{place} [{passage.start}:{passage.end}] id={passage.id}")
        click.echo(f"   {snippet(shown(passage.text), query, corpus.analyzer, mark=mark)}", color=tty)


COMMANDS = [index, search]
