"""Time and memory of each reader on a hostile file at 1x, 2x and 4x its size (issue 73): linear, and bounded.

Each file comes from tests/hostile_inputs.py (the reliability suite's probes) and is read as `index` reads it
(`ingest.read_entry`: the reader, then chunking), in a subprocess of its own that only reads it (its libraries
imported first), so that its peak memory (its resident set's high water, VmHWM, less what it held before the read)
is the read's own. Prints (never asserts) the CPU seconds of the read at each size (CPU, not the wall clock: the machine
is shared, and a busy neighbour stretches the wall clock, not the work), the ratio of 4x to 1x (4 is linear, 16 the
square), the peak memory at 4x and what became of the file. `--src DIR` reads with the package in DIR (a checkout
of main: the figures before the fix); a run past --timeout seconds (of the wall clock) is shown as "> T".

    python -m benchmarks.speed.reader_bounds_bench
    python -m benchmarks.speed.reader_bounds_bench --src /tmp/main --timeout 120 --cases docx-styles,html-crowded
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# name -> (what the file is, generator in tests/hostile_inputs.py, its argument at 1x, the file's suffix)
CASES = {
    "html-crowded": ("one element with N attributes", "html_crowded", 20_000, ".html"),
    "html-control": ("N paragraphs, a form feed in each", "html_control_pages", 20_000, ".html"),
    "html-long": ("N short paragraphs (40 bytes each)", "html_paragraphs", 50_000, ".html"),
    "docx-styles": ("N empty paragraphs in N styles", "docx_paragraphs", 1000, ".docx"),
    "docx-lying": ("document.xml of N MB declaring 2 KB", "docx_lying_mb", 64, ".docx"),
    "epub-deep": ("N unclosed <div>s in a chapter", "epub_deep", 3000, ".epub"),
    "epub-inflating": ("a chapter inflating to N MB", "epub_inflating_mb", 100, ".epub"),
    "mail-big": ("an mbox message with an N MB attachment", "mbox_with_big_message_mb", 20, ".mbox"),
    "jsonl-bad-line": ("N records, line 2 not UTF-8", "jsonl_with_bad_line", 20_000, ".jsonl"),
}

_CHILD = r"""
import json, resource, sys, time
src, name = sys.argv[1:3]
sys.path.insert(0, src)
from pathlib import Path
from offline_agent.retrieval.ingest import FileEntry, IngestOptions, read_entry
from offline_agent.retrieval.readers import SkipFile
import docx, ebooklib.epub, email.policy, lxml.etree  # the readers' libraries: their import is not the read
resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))  # a hole shows as a MemoryError, not a frozen machine
path = Path(name)


def high_water_kb():  # VmHWM: ru_maxrss would keep the high water of the process this one was forked from
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0]) if "VmHWM:" in status else 0


before = high_water_kb()
start = time.process_time()
try:
    passages, _, notes = read_entry(FileEntry(path, path.name, path.stat().st_size, 0), IngestOptions())
    outcome = f"{len(passages)} passages" + (f"; note: {notes[0][:70]}" if notes else "")
except SkipFile as why:
    outcome = f"skipped: {str(why)[:90]}"
except MemoryError:
    outcome = "MemoryError"
seconds = time.process_time() - start
peak = high_water_kb() - before
print(json.dumps({"seconds": seconds, "peak_mb": peak / 1024, "outcome": outcome, "bytes": path.stat().st_size}))
"""


def measure(src: Path, make: str, n: int, suffix: str, timeout: float, folder: Path) -> dict | None:
    """One read in a subprocess (the file written here first): seconds, peak MB, outcome and file size; None past
    `timeout`."""
    from tests import hostile_inputs

    path = folder / f"hostile{suffix}"
    path.write_bytes(getattr(hostile_inputs, make)(n))
    command = [sys.executable, "-c", _CHILD, str(src), str(path)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=folder)
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        return {"seconds": float("nan"), "peak_mb": 0.0, "outcome": f"failed: {done.stderr.strip()[-90:]}", "bytes": 0}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", type=Path, default=ROOT, help="the checkout whose offline_agent reads (default: this)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds before a read is shown as '> T'")
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    args = parser.parse_args()
    import tempfile

    print(f"reader bounds: {args.src}  (CPU seconds at 1x / 2x / 4x, the ratio 4x/1x, peak MB at 4x)")
    print("case | input at 1x | 1x CPU s | 2x CPU s | 4x CPU s | 4x/1x | peak MB 4x | size 4x | outcome at 4x")
    print("--- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---")
    with tempfile.TemporaryDirectory() as scratch:
        for name in args.cases.split(","):
            what, make, n, suffix = CASES[name]
            runs = []
            for scale in (1, 2, 4):
                result = measure(args.src.resolve(), make, n * scale, suffix, args.timeout, Path(scratch))
                runs.append(result)
                if result is None:
                    break  # the next size would only take longer
            times = [f"{r['seconds']:.2f}" if r else f"> {args.timeout:.0f}" for r in runs]
            times += ["-"] * (3 - len(times))
            last = runs[-1]
            timed = len(runs) == 3 and runs[2] and runs[0]["seconds"] >= 0.05  # a ratio of milliseconds is noise
            ratio = f"{runs[2]['seconds'] / runs[0]['seconds']:.1f}" if timed else "-"
            peak = f"{last['peak_mb']:.0f}" if last else "-"
            size = f"{last['bytes'] / 1e6:.2f} MB" if last else "-"
            outcome = last["outcome"] if last else "hang (timeout)"
            row = [name, what.replace("N", f"{n:,}"), *times, ratio, peak, size, outcome]
            print(" | ".join(row))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
