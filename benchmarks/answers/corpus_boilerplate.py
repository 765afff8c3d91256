"""Boilerplate found from the corpus, on the PostgreSQL and Python manuals: every page's title before and after,
the generated files skipped with their reasons, the blocks of text left out of passages (and the passages that
held them before and after), and where the Python manual's searchindex.js ranks for ordinary questions before and
after (issue 73).

    python -m benchmarks.answers.corpus_boilerplate                  # both manuals (a few minutes on 2 cores)
    python -m benchmarks.answers.corpus_boilerplate --manual python --workers 1

"Before" is the code's behaviour with every part turned off: every file read (`--include '**'` reads generated
files too) and no boilerplate looked for, which is what the code did before; "after" is a default build
(`build_from_paths`). Nothing is cached: both indexes are built in this process. The manuals are Debian's
postgresql-doc-15 and python3-doc (scripts/install.sh installs them).
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from benchmarks.kit import PG_HTML
from offline_agent.retrieval import BM25Index, IngestOptions, build_from_paths, ingest_paths

MANUALS = {"postgresql": PG_HTML, "python": Path("/usr/share/doc/python3-doc/html")}  # Debian's python3-doc
QUERIES = [
    "how do I read a file line by line",
    "sort a list of dictionaries by a key",
    "regular expression named groups",
    "current date and time",
    "exception handling with finally",
    "which version of Python is this documentation for",
    "json dumps indent",
    "start a thread and wait for it",
]
WATCHED = "searchindex.js"
DEPTH = 100


def page_titles(passages) -> dict[str, str]:
    """The title of each document (its first passage's)."""
    titles: dict[str, str] = {}
    for p in passages:
        titles.setdefault(p.doc_id, p.title)
    return titles


def affixes_removed(before: str, after: str) -> tuple[str, str]:
    """The prefix and the suffix that `before` lost to become `after`."""
    at = before.find(after)
    return (before[:at], before[at + len(after) :]) if at >= 0 and after else (before, "")


def rank_of(index: BM25Index, query: str, doc_id: str) -> str:
    """The rank of the first passage of the document `doc_id` among the top DEPTH hits, or "-" (not there)."""
    hits = index.search(query, k=DEPTH).passages
    return next((str(rank) for rank, p in enumerate(hits, 1) if p.doc_id == doc_id), "-")


def report(manual: str, workers: int) -> None:
    root = MANUALS[manual]
    if not root.is_dir():
        print(f"\n## {manual}: {root} is not installed (scripts/install.sh installs it)")
        return
    before_read = ingest_paths([root], IngestOptions(include=("**",)), workers=workers)
    built = build_from_paths([root], workers=workers)
    before, after = page_titles(before_read.passages), page_titles(built.ingested.passages)
    common = sorted(set(before) & set(after))
    changed = [d for d in common if before[d] != after[d]]
    removed = Counter(affixes_removed(before[d], after[d]) for d in changed)
    print(f"\n## {manual} ({root})")
    print(f"documents: {len(before):,} before, {len(after):,} after")
    print(f"titles changed: {len(changed):,} of {len(common):,}; distinct (prefix, suffix) removed: {len(removed)}")
    for (prefix, suffix), n in removed.items():
        print(f"  prefix {prefix!r}, suffix {suffix!r}: {n} pages")
    print("boilerplate recorded:", built.index.extra["boilerplate"])
    pages = [d for d in common if d.endswith(".html")]
    print(f"\nsample of page titles (every {max(1, len(pages) // 10)}th of {len(pages)} pages, sorted by path):")
    print("| page | before | after |\n|---|---|---|")
    for doc_id in pages[:: max(1, len(pages) // 10)][:10]:
        print(f"| {doc_id} | {before[doc_id]} | {after[doc_id]} |")
    generated = [(p, why) for p, why in built.ingested.skipped if why.startswith("generated")]
    print(f"\ngenerated files skipped: {len(generated)}")
    for path, why in generated:
        print(f"  {path}: {why}")
    gone = sorted(set(before) - set(after))
    print(f"documents indexed before and not after: {len(gone)}", *gone[:20])
    blocks = built.index.extra["boilerplate"]["blocks"]
    print(f"\nblocks of text left out of passages: {len(blocks)}")
    for block in blocks:
        holding = [
            sum(block["text"] in " ".join(p.text.split()) for p in read)
            for read in (before_read.passages, built.ingested.passages)
        ]
        print(
            f"  {block['text']!r} ({block['pages']} pages): passages holding it {holding[0]} before, {holding[1]} after"
        )
    if manual != "python":
        return
    index_before = BM25Index.build(before_read.passages)
    passages = sum(p.doc_id == WATCHED for p in before_read.passages)
    print(f'\n{WATCHED} gave {passages:,} passages before; its best rank in the top {DEPTH} ("-": not there):')
    print("| query | before | after | first title before | first title after |\n|---|---|---|---|---|")
    for query in QUERIES:
        first_before = index_before.search(query, k=1).passages[0].title
        first_after = built.index.search(query, k=1).passages[0].title
        row = [query, rank_of(index_before, query, WATCHED), rank_of(built.index, query, WATCHED)]
        print("| " + " | ".join([*row, first_before, first_after]) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--manual", choices=sorted(MANUALS), action="append")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    for manual in args.manual or sorted(MANUALS):
        report(manual, args.workers)


if __name__ == "__main__":
    main()
