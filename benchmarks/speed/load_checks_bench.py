"""What checking an index on load costs: the mmap load alone, the structural checks, and every sha256.

Builds (once, cached under .bench/) a synthetic index of N passages, then times in fresh processes:
- load: `storage.read_index(verify=False)` (manifest, JSON files, every .npy mapped), as in 0.1.0;
- checks: `checks.check_index_arrays` on those arrays (what every load now adds), and of that the one part
  that reads every posting (min and max of the passage ids);
- sha256: hashing every file (what loads of indexes up to VERIFY_ON_LOAD_MAX_BYTES add, and `index info --verify`);
- the first search and the first passage read of an index loaded as the CLI loads it, with its checks left for
  first use (a larger index: checksums.PendingChecks hashes the postings before the first search and the passage
  table before the first passage is read), beside the same with `verify=False` (no checks) and a second search.
Each figure is the median of --repeat runs with a warm page cache; nothing is asserted.

    python -m benchmarks.speed.load_checks_bench --passages 200000
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from benchmarks.kit import CACHE, ROOT

_MEASURE = r"""
import json, sys, time
from offline_agent.retrieval import checks, storage
path = sys.argv[1]
t0 = time.perf_counter()
arrays, meta, extra, manifest = storage.read_index(path, verify=False)
t1 = time.perf_counter()
checks.check_index_arrays(path, arrays, meta)
t2 = time.perf_counter()
for name in ("post_docs", "impact_docs"):  # the per-posting part of the checks, timed again alone
    if len(arrays[name]):
        arrays[name].min(), arrays[name].max()
t3 = time.perf_counter()
storage.read_index(path, verify=True)
t4 = time.perf_counter()
figures = {"load": t1 - t0, "checks": t2 - t1, "postings part": t3 - t2, "sha256": t4 - t3}
from offline_agent.retrieval import BM25Index
for label, verify in (("lazy", None), ("unchecked", False)):
    t0 = time.perf_counter()
    index = BM25Index.load(path, verify=verify)
    t1 = time.perf_counter()
    index.search_ids("w1 w7 w300", 10)
    t2 = time.perf_counter()
    index.passage(0)
    t3 = time.perf_counter()
    index.search_ids("w2 w9 w400", 10)
    t4 = time.perf_counter()
    figures.update({f"{label}: load": t1 - t0, f"{label}: 1st search": t2 - t1, f"{label}: 1st passage": t3 - t2,
                    f"{label}: 2nd search": t4 - t3})
print(json.dumps(figures))
"""


def build(passages: int, target: Path) -> None:
    import numpy as np

    from offline_agent.retrieval import BM25Index

    rng = np.random.default_rng(0)
    vocab = np.array([f"w{i}" for i in range(50_000)])
    ranks = np.arange(1, len(vocab) + 1)
    p = (1 / ranks) / (1 / ranks).sum()
    docs = (" ".join(vocab[rng.choice(len(vocab), size=int(rng.integers(60, 120)), p=p)]) for _ in range(passages))
    BM25Index.build(docs).save(target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    target = CACHE / f"load-checks-{args.passages}"
    if not (target / "manifest.json").exists():
        print(f"building {args.passages:,} synthetic passages into {target}", file=sys.stderr)
        build(args.passages, target)
    size = sum(f.stat().st_size for f in target.rglob("*.npy"))
    runs = []
    for _ in range(args.repeat + 1):  # the first run warms the page cache
        out = subprocess.run(
            [sys.executable, "-c", _MEASURE, str(target)], capture_output=True, text=True, check=True, cwd=ROOT
        )
        runs.append(json.loads(out.stdout))
    runs = runs[1:]
    median = {key: statistics.median(run[key] for run in runs) * 1000 for key in runs[0]}
    print(f"{args.passages:,} passages, {size / 2**20:,.0f} MB of arrays; median of {args.repeat} warm runs (ms)")
    for key, value in median.items():
        print(f"  {key:<22} {value:10.1f}   {value / median['load']:8.1f}x load")


if __name__ == "__main__":
    main()
