"""Indexing real document folders end to end from files: `offline-agent index` against a baseline, in one run.

Prints (never asserts) MB/s and passages/s of `offline-agent index PATH --name N --workers W` (a subprocess: the
interpreter's start, the walk, reading, parsing, chunking, tokenizing, the BM25 build and the index written to
disk) beside a baseline that does the same job with a fast HTML parser and bm25s: the same files read, HTML pages
turned to text with selectolax's Lexbor parser (`body.text()`), every text cut into 200-word windows that share
40 words, tokenized by bm25s's own tokenizer (English stopwords) and indexed and saved by bm25s, also as a
subprocess of its own. Corpora: the PostgreSQL 15 manual (Debian's postgresql-doc-15), the Python 3.11 manual
(python3-doc; its folder is a symlink) and the HotpotQA pool of 5,716 paragraphs as JSONL. MB are the bytes of
the files the index reads (those of a supported type: what the walk finds); both sides read the same files.

Then the time of `index --update` after one file of a 1,000-file index changed (the first 1,000 pages of the
PostgreSQL manual copied to a temporary folder, one page a run given a new paragraph).

    python -m benchmarks.speed.ingest_bench                              # every corpus, 3 runs each, and the update
    python -m benchmarks.speed.ingest_bench --repeat 1 --corpora pg      # one quick run
    python -m benchmarks.speed.ingest_bench --before-src /tmp/main-src   # also main's code (a checkout of it)

Each figure is the median of --repeat runs with the smallest and largest beside it: the machine is shared, so
the load average is printed with every run, and two runs of the same code are compared within one session only.
The engines take turns, one run each a round, and "x baseline" is the median over rounds of the baseline's time
over the engine's in the same round (the speed of a shared machine drifts from one minute to the next).
Needs the bench extra (bm25s, selectolax) and the two Debian packages; a corpus that is missing is skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.kit import HOTPOT_POOL, PG_HTML, ROOT, module_command

CORPORA = {"pg": PG_HTML, "py": Path("/usr/share/doc/python3-doc/html"), "pool": HOTPOT_POOL}
WINDOW, SHARED = 200, 40


def _env(**extra: str) -> dict[str, str]:
    """The environment of a timed subprocess: Python may cache compiled modules (as an installed package does), so
    no run pays for compiling them but the first."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    return {**env, **extra}


def corpus_files(path: Path) -> list[Path]:
    """The files `offline-agent index` reads under `path` (its walk, less what it skips for its type)."""
    from offline_agent.retrieval.ingest import walk

    entries, _ = walk([path])
    return [entry.path for entry in entries]


def run_ours(path: Path, workers: int, home: Path, src: Path | None) -> dict[str, Any]:
    env = _env(OFFLINE_AGENT_HOME=str(home), PYTHONPATH=str(src or ROOT))  # main's code, or this checkout's
    command = [sys.executable, "-m", "offline_agent.cli", "index", str(path), "--name", "bench", "--json"]
    command += ["--workers", str(workers)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=home, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"offline-agent index failed: {done.stderr.strip()[-500:]}")
    summary = json.loads(done.stdout)
    return {"seconds": seconds, "passages": summary["passages"], "duplicates": len(summary.get("duplicates", []))}


def run_baseline(path: Path, out: Path) -> dict[str, Any]:
    command = [*module_command(__spec__.name), "--baseline", str(path), "--out", str(out)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=_env(), cwd=ROOT)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"baseline failed: {done.stderr.strip()[-500:]}")
    return {"seconds": seconds, **json.loads(done.stdout)}


def baseline(path: Path, out: Path) -> None:
    """The baseline's whole job, in this process: files to a saved bm25s index. Prints its passage count."""
    import bm25s
    from selectolax.lexbor import LexborHTMLParser

    texts: list[str] = []
    for file in corpus_files(path):
        data = file.read_bytes()
        suffix = file.suffix.lower()
        if suffix in (".html", ".htm", ".xhtml"):
            tree = LexborHTMLParser(data)
            body = tree.body
            texts.extend(_windows(body.text(separator="\n") if body is not None else ""))
        elif suffix in (".jsonl", ".ndjson"):
            for line in data.decode("utf-8").splitlines():
                if line.strip():
                    row = json.loads(line)
                    texts.extend(_windows(f"{row.get('title', '')}\n{row.get('text', '')}"))
        else:
            texts.extend(_windows(data.decode("utf-8", "replace")))
    tokens = bm25s.tokenize(texts, stopwords="en", show_progress=False)
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    retriever.save(str(out))
    print(json.dumps({"passages": len(texts)}))


def _windows(text: str) -> list[str]:
    words = text.split()
    if not words:
        return []
    step = WINDOW - SHARED
    return [" ".join(words[i : i + WINDOW]) for i in range(0, max(1, len(words) - SHARED), step)]


def time_update(source: Path, files: int, repeat: int, workers: int, src: Path | None) -> list[float]:
    """Seconds of `index --update` after one page of a `files`-page index changed, `repeat` times."""
    with tempfile.TemporaryDirectory(prefix="ingest-bench-") as tmp:
        tmp_path = Path(tmp)
        docs = tmp_path / "docs"
        docs.mkdir()
        pages = sorted(source.glob("*.html"))[:files]
        for page in pages:
            shutil.copy(page, docs / page.name)
        home = tmp_path / "home"
        home.mkdir()
        env = _env(OFFLINE_AGENT_HOME=str(home), PYTHONPATH=str(src or ROOT))
        base = [sys.executable, "-m", "offline_agent.cli", "index"]
        subprocess.run([*base, str(docs), "--name", "u", "--workers", str(workers)], env=env, check=True, cwd=home,
                       capture_output=True)  # fmt: skip
        out = []
        for run in range(repeat):
            page = docs / pages[(run * 97 + 500) % len(pages)].name
            with page.open("a", encoding="utf-8") as handle:
                handle.write(f"<p>An added paragraph, number {run}, about mooring fees.</p>\n")
            start = time.perf_counter()
            subprocess.run([*base, "--name", "u", "--update"], env=env, check=True, cwd=home, capture_output=True)
            out.append(time.perf_counter() - start)
        return out


def spread(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", default="pg,py,pool", help="comma-separated: pg, py, pool")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--before-src", type=Path, default=None, help="a checkout of main: run its index too")
    parser.add_argument("--before-repeat", type=int, default=1)
    parser.add_argument("--update-files", type=int, default=1000)
    parser.add_argument("--no-update", action="store_true")
    parser.add_argument("--baseline", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.baseline is not None:
        baseline(args.baseline, args.out)
        return

    print(f"# ingest_bench: {os.cpu_count()} cores, workers {args.workers}, {args.repeat} runs each")
    rows = []
    for name in filter(None, args.corpora.split(",")):
        path = CORPORA[name]
        if not path.exists():
            print(f"{name}: {path} missing, skipped")
            continue
        files = corpus_files(path)
        mb = sum(f.stat().st_size for f in files) / 1e6
        runs: dict[str, list[dict[str, Any]]] = {"ours": [], "baseline": [], "main": []}
        engines = ["ours", "baseline"] + (["main"] if args.before_src is not None else [])
        for round_ in range(args.repeat):
            # One run of each engine a round, the order turned each round: the machine's speed drifts, and runs
            # of one engine in a row would meet a slow minute together.
            turn = round_ % len(engines)
            for engine in engines[turn:] + engines[:turn]:
                if engine == "main" and round_ >= args.before_repeat:
                    continue
                load = os.getloadavg()[0]
                with tempfile.TemporaryDirectory(prefix="ingest-bench-") as tmp:
                    if engine == "baseline":
                        result = run_baseline(path, Path(tmp) / "bm25s")
                    else:
                        src = args.before_src if engine == "main" else None
                        result = run_ours(path, args.workers, Path(tmp), src)
                result["load"] = load
                runs[engine].append(result)
                print(f"  {name} {engine}: {result['seconds']:.2f} s, {result['passages']:,} passages, load {load:.1f}")
        for engine in engines:
            if not runs[engine]:
                continue
            seconds = [r["seconds"] for r in runs[engine]]
            median = statistics.median(seconds)
            passages = runs[engine][0]["passages"]
            # The baseline's time over this engine's in the same round, the median over rounds ("main" runs in the
            # first --before-repeat rounds only, so it pairs with those).
            paired = statistics.median(
                b["seconds"] / r["seconds"] for b, r in zip(runs["baseline"], runs[engine], strict=False)
            )
            rows.append(
                f"| {name} | {len(files):,} | {mb:.1f} | {engine} | {passages:,} | {spread(seconds)} | "
                f"{mb / median:.1f} | {passages / median:,.0f} | {paired:.2f} |"
            )
    print(
        "\n| corpus | files | MB | engine | passages | seconds: median (min-max) | MB/s | passages/s "
        "| x baseline (time, same round) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    if not args.no_update and CORPORA["pg"].exists():
        print(f"\n`index --update` after one page of a {args.update_files}-page index changed (seconds):")
        print(f"  this code: {spread(time_update(CORPORA['pg'], args.update_files, args.repeat, args.workers, None))}")
        if args.before_src is not None:
            before = time_update(CORPORA["pg"], args.update_files, args.before_repeat, args.workers, args.before_src)
            print(f"  main:      {spread(before)}")


if __name__ == "__main__":
    main()
