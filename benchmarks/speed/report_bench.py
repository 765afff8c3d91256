"""The HTML report at size: file size, build time, and load time in headless Chromium.

Makes synthetic run folders shaped like real ones (result rows from `scoring.result_row`, 1-6 steps a question,
three 600-character passages per search Observation, about half the answers right), builds one report per
configuration (200 questions x 7 runs and 1,000 x 2 by default), opens each in headless Chromium (Debian's
`chromium` and `chromium-driver`, driven by selenium) and prints, from the page's own performance timing:
"ready" (the viewer parsed the table's data and rendered the first rows: the page is usable), DOMContentLoaded
and the load event (the browser has read the whole file, every trajectory block included), how long filtering
all rows and opening one trajectory took, and the CPU seconds the browser's processes spent per load (user +
system, from /proc: wall times swell on a busy machine, CPU time much less). A 20 x 1 report is measured first as
a baseline, so that on a busy machine the ratios still say what the size costs. Asserts nothing.

    python -m benchmarks.speed.report_bench [--sizes 200x7,1000x2] [--plots] [--keep DIR] [--real runs/A runs/B]

`--real` also builds a report of existing run folders. Each page load is measured three times (median shown).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

from offline_agent.eval.datasets import Paragraph, QARecord
from offline_agent.eval.html_report import write_html
from offline_agent.eval.report import load_run, unique_names
from offline_agent.eval.scoring import result_row
from offline_agent.steps import StepRecord, Trajectory, Usage

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
_VOCABULARY = (
    "river city born film director album band novel station county war prize museum island bridge tower "
    "painter singer league season party minister village empire railway castle festival magazine"
)
WORDS = _VOCABULARY.split()


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def synthetic_runs(root: Path, questions: int, runs: int, seed: int = 0) -> list[Path]:
    """`runs` run folders over the same `questions` synthetic HotpotQA-like questions."""
    rng = random.Random(seed)
    records = []
    for number in range(questions):
        context = tuple(
            Paragraph(f"Title {number}-{p}", "", tuple(_text(rng, 18) + " " for _ in range(4))) for p in range(10)
        )
        records.append(
            QARecord(
                id=f"q{number:05d}",
                question=_text(rng, 16).rstrip(".") + "?",
                answer=" ".join(rng.choice(WORDS) for _ in range(2)),
                supporting_titles=(context[0].title, context[1].title),
                type=rng.choice(("bridge", "comparison")),
                level=rng.choice(("easy", "medium", "hard")),
                context=context,
                supporting_facts=((context[0].title, 0), (context[1].title, 1)),
            )
        )
    folders = []
    for run in range(runs):
        folder = root / f"run{run}"
        folder.mkdir(parents=True)
        config = {"agent": "react", "model": {"name": f"model-{run}"}, "grammar": "on", "setting": "distractor"}
        (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
        with open(folder / "results.jsonl", "w", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(result_row(record, _trajectory(rng, record))) + "\n")
        folders.append(folder)
    return folders


def _trajectory(rng: random.Random, record: QARecord) -> Trajectory:
    steps = []
    for index in range(rng.randint(1, 6)):
        titles = [paragraph.title for paragraph in rng.sample(record.context, 3)]
        observation = "\n".join(f"[{rank}] {title}: {_text(rng, 95)}" for rank, title in enumerate(titles, 1))
        steps.append(
            StepRecord(
                index=index,
                raw="",
                thought=_text(rng, 14),
                action="search",
                argument=" ".join(rng.choice(WORDS) for _ in range(3)),
                observation=observation,
                details={"ids": [1, 2, 3], "titles": titles, "scores": [9.1, 7.2, 5.3]},
                usage=Usage(900 + 150 * index, 850 + 150 * index, 40),
                seconds=rng.uniform(0.5, 4.0),
            )
        )
    right = rng.random() < 0.5
    answer = record.answer if right else " ".join(rng.choice(WORDS) for _ in range(2))
    steps.append(
        StepRecord(index=len(steps), raw="", thought=_text(rng, 10), final=answer, usage=Usage(1500, 1400, 25))
    )
    return Trajectory(
        question=record.question,
        steps=steps,
        answer=answer,
        stop_reason="final",
        seconds=sum(s.seconds for s in steps),
    )


def open_browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tempfile.mkdtemp(prefix='report-bench-chromium-')}",
        "--window-size=1400,1000",
    ):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


TIMING = """
const nav = performance.getEntriesByType('navigation')[0];
const ready = performance.getEntriesByName('report-ready')[0];
return [nav.domContentLoadedEventEnd, nav.loadEventEnd, ready ? ready.startTime : null];
"""

ACTIONS = """
const run = document.getElementById('filter-run');
document.querySelector('[data-tab=questions]').click();
let t0 = performance.now();
document.getElementById('filter-outcome').value = 'wrong';
document.getElementById('filter-outcome').dispatchEvent(new Event('change'));
const filtered = performance.now() - t0;
t0 = performance.now();
document.querySelector('#rows tr.qrow').click();
const opened = performance.now() - t0;
return [filtered, opened, document.querySelectorAll('#rows tr.qrow').length];
"""


def _cpu_seconds(root: int) -> float:
    """User + system CPU seconds of `root` and every process below it (the browser's processes), from /proc."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry.name)] = int(fields[1])
        times[int(entry.name)] = (int(fields[11]) + int(fields[12])) / tick
    total, stack = 0.0, [root]
    while stack:
        pid = stack.pop()
        total += times.get(pid, 0.0)
        stack += [child for child, parent in parents.items() if parent == pid]
    return total


def measure(driver, path: Path, repeats: int = 3) -> dict[str, float]:
    """Median page timings over `repeats` loads, and the browser's CPU seconds per load (which, unlike wall
    time, a busy machine does not inflate much)."""
    loads = []
    cpu = []
    for _ in range(repeats):
        before = _cpu_seconds(driver.service.process.pid)
        driver.get(path.resolve().as_uri())
        for _ in range(600):
            if driver.execute_script("return document.body && document.body.getAttribute('data-ready')"):
                break
            time.sleep(0.05)
        for _ in range(100):  # loadEventEnd is set just after the load handlers return
            timing = driver.execute_script(TIMING)
            if timing[1]:
                break
            time.sleep(0.05)
        loads.append(timing)
        cpu.append(_cpu_seconds(driver.service.process.pid) - before)
    filtered, opened, rendered = driver.execute_script(ACTIONS)
    return {
        "dom": statistics.median(t[0] for t in loads),
        "load": statistics.median(t[1] for t in loads),
        "ready": statistics.median(t[2] for t in loads),
        "cpu": statistics.median(cpu),
        "filter": filtered,
        "open": opened,
        "rendered": rendered,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="200x7,1000x2", help="QUESTIONSxRUNS, comma-separated")
    parser.add_argument("--keep", type=Path, default=None, help="write the run folders and reports here")
    parser.add_argument("--real", nargs="*", type=Path, default=[], help="existing run folders to report too")
    parser.add_argument("--plots", action="store_true", help="include the plots (needs matplotlib)")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="report-bench-"))
    cases: list[tuple[str, list[Path]]] = []
    for size in ["20x1", *args.sizes.split(",")]:
        questions, runs = (int(part) for part in size.lower().split("x"))
        cases.append((f"{questions} questions x {runs} runs", synthetic_runs(root / size, questions, runs)))
    if args.real:
        cases.append(("real: " + ", ".join(path.name for path in args.real), list(args.real)))
    driver = open_browser()
    try:
        print(f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        header = f"{'report':<34}{'MB':>7}{'build s':>9}{'ready ms':>10}{'DOM ms':>8}{'load ms':>9}"
        print(header + f"{'filter ms':>11}{'open ms':>9}{'CPU s/load':>12}")
        for label, folders in cases:
            runs = unique_names([load_run(folder) for folder in folders])
            out = root / (label.split(":")[0].replace(" ", "_") + ".html")
            started = time.perf_counter()
            write_html(runs, out, plots=args.plots)
            built = time.perf_counter() - started
            figures = measure(driver, out)
            print(
                f"{label:<34}{out.stat().st_size / 1e6:>7.1f}{built:>9.2f}{figures['ready']:>10.0f}"
                f"{figures['dom']:>8.0f}{figures['load']:>9.0f}{figures['filter']:>11.1f}{figures['open']:>9.1f}"
                f"{figures['cpu']:>12.2f}"
            )
    finally:
        driver.quit()
    print(f"files under {root}")


if __name__ == "__main__":
    main()
