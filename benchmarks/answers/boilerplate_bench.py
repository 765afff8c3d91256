"""Page chrome in the passages of the PostgreSQL and Python manuals, before (main's code) and after, the passage the
search puts first for ten questions of the PostgreSQL set, and our HTML extractor beside trafilatura.

Boilerplate, measured: a passage holds boilerplate when its text (no-break spaces read as spaces) matches one of
CHROME below: a navigation bar (DocBook's "Prev Up ... Home Next", Sphinx's "Previous topic", "Next topic", "This
Page / Report a Bug / Show Source", "Quick search", "Navigation index modules"), a table of contents heading, the
Python manual's page-title chrome "3.11.2 Documentation", or a footer line ("© Copyright", "This page is licensed
under", "Last updated on", "Found a bug?", "Created using Sphinx"). These strings are chrome wherever they occur in
the two manuals; a passage about a table of contents would be counted too (none was seen). The table gives the
fraction of passages that match, and how many match each pattern.

    python -m benchmarks.answers.boilerplate_bench --before-src /tmp/main-src  # builds the four indexes once (~10 min)
    python -m benchmarks.answers.boilerplate_bench --extractors                 # the extractor table only (~5 min)

Indexes are built with `offline-agent index` (main's through PYTHONPATH=--before-src) into .bench/boilerplate/
and reused; --rebuild builds them again. The extractor part reads every page of both manuals with main's reader
(html.parser, whole page; loaded from --before-src), ours (html_content) and trafilatura (`extract`, its defaults,
tables kept), and reports for each: the fraction of 200-word passages of its text that hold boilerplate, content
kept (PostgreSQL: the evidence sentences of the 80 questions found in the text of their page; Python: the
paragraphs Sphinx marks as the page's body, `div.body p`, found in the text), and pages per second of CPU time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.kit import CACHE as BENCH_CACHE
from benchmarks.kit import PG_HTML, ROOT
from benchmarks.kit import PG_QUESTIONS as QUESTIONS

MANUALS = {"pg": PG_HTML, "py": Path("/usr/share/doc/python3-doc/html")}
CACHE = BENCH_CACHE / "boilerplate"
CHROME = {
    "Prev Up / Home Next": r"\bPrev\s+Up|\bHome\s+Next\b",
    "Previous topic / Next topic": r"\bPrevious topic\b|\bNext topic\b",
    "This Page / Show Source": r"\bThis Page\s+Report a Bug|\bShow Source\b",
    "Quick search": r"\bQuick search\b",
    "Navigation index modules": r"\bNavigation\s+index\s+modules\b",
    "Table of Contents": r"\bTable of Contents\b",
    "3.11.2 Documentation": r"\b3\.11\.2 Documentation\b",
    "footer": r"©\s*Copyright|\bThis page is licensed under\b|\bLast updated on\b|\bFound a bug\?|Created using Sphinx",
}
PATTERNS = {name: re.compile(pattern) for name, pattern in CHROME.items()}


def chrome_in(text: str) -> list[str]:
    """The CHROME patterns `text` matches."""
    text = text.replace("\u00a0", " ")
    return [name for name, pattern in PATTERNS.items() if pattern.search(text)]


def build(manual: str, code: str, src: Path | None, rebuild: bool) -> Path:
    """The index of a manual built by this code ("after") or main's ("before"), under CACHE."""
    home = CACHE / code
    target = home / "indexes" / manual
    if target.exists() and not rebuild:
        return target
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["OFFLINE_AGENT_HOME"] = str(home)
    env["PYTHONPATH"] = str(src or ROOT)  # main's code, or this checkout's (cwd is CACHE)
    command = [sys.executable, "-m", "offline_agent.cli", "index", str(MANUALS[manual]), "--name", manual]
    print(f"building {manual} with {code} code ...", file=sys.stderr)
    subprocess.run(command, env=env, check=True, capture_output=True, cwd=CACHE)
    return target


def passages_table(indexes: dict[tuple[str, str], Path]) -> None:
    from offline_agent.retrieval import BM25Index

    print("\n| manual | code | passages | with boilerplate | fraction | " + " | ".join(CHROME) + " |")
    print("|---|---|---|---|---|" + "---|" * len(CHROME))
    for (manual, code), path in indexes.items():
        index = BM25Index.load(path)
        counts = dict.fromkeys(CHROME, 0)
        holding = 0
        for pid in index.ids():
            found = chrome_in(index.passage(int(pid)).text)
            holding += bool(found)
            for name in found:
                counts[name] += 1
        n = len(index)
        row = " | ".join(str(counts[name]) for name in CHROME)
        print(f"| {manual} | {code} | {n:,} | {holding:,} | {holding / n:.1%} | {row} |")


def top_passages(before: Path, after: Path, count: int) -> None:
    from offline_agent.retrieval import BM25Index

    questions = [json.loads(line) for line in QUESTIONS.read_text().splitlines()[:count]]
    old, new = BM25Index.load(before), BM25Index.load(after)
    print(f"\nFirst passage of `search[question]` for the first {count} questions (answer in it: yes/no):\n")
    print("| id | before: title / first 100 characters | answer | after: title > heading path / first 100 | answer |")
    print("|---|---|---|---|---|")
    for q in questions:
        cells = []
        for index in (old, new):
            hit = index.search(q["question"], k=1).passages[0]
            text = " ".join(hit.text.split())
            answers = [a.lower() for a in q.get("answers") or [q["answer"]]]
            has = any(a in " ".join(hit.text.lower().split()) for a in answers)
            place = hit.label().replace("|", "/")
            cells += [f"{place} / {text[:100].replace('|', '/')}", "yes" if has else "no"]
        print(f"| {q['id']} | " + " | ".join(cells) + " |")


def extractors(before_src: Path | None) -> None:
    import trafilatura
    from lxml import etree

    from offline_agent.retrieval.readers.html import html_content
    from offline_agent.retrieval.sentences import chunk_spans

    questions = [json.loads(line) for line in QUESTIONS.read_text().splitlines()]
    readers = {}
    if before_src is not None:
        main_reader = _main_reader(before_src)
        readers["main (html.parser, whole page)"] = lambda html: main_reader(html)[1]
    readers |= {
        "ours (html_content)": lambda html: html_content(html)[1],
        "trafilatura (extract)": lambda html: (
            trafilatura.extract(html, include_tables=True, include_comments=False) or ""
        ),
    }
    print("\n| manual | extractor | pages | passages | with boilerplate | content kept | pages/s (CPU) |")
    print("|---|---|---|---|---|---|---|")
    for manual, folder in MANUALS.items():
        pages = sorted(folder.rglob("*.html"))
        htmls = [p.read_text(encoding="utf-8") for p in pages]
        wanted = [_body_paragraphs(html, etree) for html in htmls] if manual == "py" else []
        for name, read in readers.items():
            start = time.process_time()
            texts = [read(html) for html in htmls]
            seconds = time.process_time() - start
            passages = holding = 0
            for text in texts:
                for s, e in chunk_spans(text, 200, 40):
                    passages += 1
                    holding += bool(chrome_in(text[s:e]))
            if manual == "pg":  # an evidence sentence is kept when the text of one of its question's pages holds it
                flat = {page.name: " ".join(text.split()).lower() for page, text in zip(pages, texts, strict=True)}
                total = sum(len(q["evidence"]) for q in questions)
                kept = sum(
                    any(_normal(e) in flat.get(p, "") for p in q["source"]) for q in questions for e in q["evidence"]
                )
            else:
                total = sum(len(w) for w in wanted)
                kept = sum(_found(w, t) for w, t in zip(wanted, texts, strict=True))
            print(
                f"| {manual} | {name} | {len(pages)} | {passages:,} | {holding / max(passages, 1):.1%} | "
                f"{kept / max(total, 1):.1%} of {total:,} | {len(pages) / seconds:.0f} |"
            )


def _body_paragraphs(html: str, etree: Any) -> list[str]:
    """The paragraphs a Sphinx page marks as its body (`div.body p`), which must survive extraction."""
    root = etree.fromstring(html.encode(), etree.HTMLParser(encoding="utf-8"))
    paragraphs = root.xpath("//div[contains(concat(' ', @class, ' '), ' body ')]//p")
    return [t for t in (" ".join("".join(p.itertext()).replace("¶", "").split()) for p in paragraphs) if len(t) > 20]


def _normal(text: str) -> str:
    return " ".join(text.split()).lower()


def _found(wanted: list[str], text: str) -> int:
    flat = _normal(text)
    return sum(_normal(w) in flat for w in wanted)


def _main_reader(src: Path) -> Any:
    """main's html_to_text (html.parser, every visible text of the page), loaded from its checkout."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("main_html", src / "offline_agent/retrieval/readers/html.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.html_to_text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before-src", type=Path, default=None, help="a checkout of main (builds its indexes)")
    parser.add_argument("--rebuild", action="store_true", help="build the indexes of this code again")
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--extractors", action="store_true", help="only the extractor table")
    args = parser.parse_args()
    CACHE.mkdir(parents=True, exist_ok=True)
    if not args.extractors:
        indexes = {}
        for manual in MANUALS:
            if args.before_src is not None or (CACHE / "before" / "indexes" / manual).exists():
                indexes[(manual, "before")] = build(manual, "before", args.before_src, False)
            indexes[(manual, "after")] = build(manual, "after", None, args.rebuild)
        passages_table(indexes)
        if ("pg", "before") in indexes:
            top_passages(indexes[("pg", "before")], indexes[("pg", "after")], args.questions)
    extractors(args.before_src)


if __name__ == "__main__":
    main()
