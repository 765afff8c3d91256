"""BM25 engines side by side: this project's BM25Index, bm25s and rank-bm25, on one machine in one run.

Prints (never asserts) build rate from raw text and from tokens, peak RSS, index size, cold load to first
result, median and p99 latency of 1-, 3- and 8-term top-10 queries, batch throughput, and the ratio of each
peer to this engine; then retrieval quality: nDCG@10 on SciFact (BEIR test split) and, for the HotpotQA dev
questions, recall of the supporting paragraphs in the top 2, 5 and 10 of the 5,716-paragraph pool.

    python -m benchmarks.speed.bm25_bench                        # 10k, 100k, 1M synthetic + HotpotQA + quality
    python -m benchmarks.speed.bm25_bench --sizes 10000 --quick  # a smoke run

Each engine and corpus is measured in a fresh subprocess (so peak RSS and cold load are its own). Synthetic
corpora: Zipf (s = 1) text over a 50k-word vocabulary, 60-120 tokens per passage, cached under .bench/.
Queries: terms drawn uniformly from the corpus vocabulary ("vocab"), and 3 or 8 terms drawn from random
passages, so frequent words are frequent in queries too ("text"). Latency rows time ids and scores for every
engine (this one through `search_ids`); one more row times this engine's `search` with its Passage objects.
A latency row runs its queries --repeats times over (default 5) and reports the median and p99, over the
queries, of each query's median time: one timing of a sub-millisecond query is mostly the machine's noise.
Neither engine keeps results between queries; this one's term ids come from a dictionary of the whole vocabulary
on every corpus here (up to 200,000 terms), as bm25s's do, so a repeated query costs what its first did.
All engines get the same lowercase tokenization without stopwords on synthetic text; on HotpotQA each uses
English stopwords. bm25s runs its numba backend when numba is installed (its fastest; its first query then
includes the JIT compile), and rank-bm25 is skipped where its projected time exceeds --rank-bm25-limit
seconds. Needs: bm25s, rank-bm25, psutil (and numba for bm25s's fast path); the quality part and the HotpotQA
corpus need ../shared/data.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import pickle
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.kit import CACHE, DATA, HOTPOT_DEV, HOTPOT_POOL, ROOT, SCIFACT, module_command

ENGINES = ("ours", "bm25s", "rank-bm25")
VOCAB = 50_000
TOKEN_RE = r"[^\W_]+"


# ---------------------------------------------------------------- corpora
def synthetic(size: int, cache: Path, seed: int = 0) -> Path:
    """A cached text file of `size` Zipf passages, one per line."""
    path = cache / f"zipf-{size}-{seed}.txt"
    if path.exists():
        return path
    cache.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    words: set[str] = set()
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    while len(words) < VOCAB:
        for n in rng.integers(3, 11, size=VOCAB):
            words.add(rng.choice(letters, size=n).tobytes().decode())
    vocab = sorted(words)[:VOCAB]
    rng.shuffle(vocab)
    p = 1.0 / np.arange(1, VOCAB + 1)
    p /= p.sum()
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="ascii") as fh:
        for start in range(0, size, 100_000):
            n = min(100_000, size - start)
            lens = rng.integers(60, 121, size=n)
            ids = rng.choice(VOCAB, size=int(lens.sum()), p=p).tolist()
            pos = 0
            lines = []
            for length in lens.tolist():
                lines.append(" ".join([vocab[i] for i in ids[pos : pos + length]]))
                pos += length
            fh.write("\n".join(lines) + "\n")
    tmp.rename(path)
    return path


def load_corpus(spec: dict[str, Any]) -> list[str]:
    if spec["kind"] == "zipf":
        with open(spec["path"], encoding="ascii") as fh:
            return fh.read().splitlines()
    with open(spec["path"], encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return [f"{r.get('title', '')}\n{r['text']}" for r in rows]


def queries_for(spec: dict[str, Any], texts: list[str], n: int, seed: int = 1) -> dict[str, list[str]]:
    """Query sets: 1/3/8 terms drawn uniformly from the vocabulary; 3 terms drawn from passages' text."""
    import re

    rng = np.random.default_rng(seed)
    pattern = re.compile(TOKEN_RE)
    sample = [pattern.findall(t.lower()) for t in rng.choice(texts, size=min(len(texts), 20_000), replace=False)]
    vocab = sorted({w for toks in sample for w in toks if len(w) > 2})
    out = {f"{m}-term vocab": [" ".join(rng.choice(vocab, size=m)) for _ in range(n)] for m in (1, 3, 8)}
    docs = [toks for toks in sample if len(toks) >= 3]
    for m in (3, 8):
        out[f"{m}-term text"] = [" ".join(rng.choice(docs[rng.integers(len(docs))], size=m)) for _ in range(n)]
    if spec["kind"] == "hotpot" and HOTPOT_DEV.exists():
        questions = [q["question"] for q in json.loads(HOTPOT_DEV.read_text())]
        out["dev questions"] = questions[:n]
    return out


# ---------------------------------------------------------------- engines
class Engine:
    """One engine's build, save, load and search, behind the same four calls."""

    name = ""

    def __init__(self, stopwords: bool) -> None:
        self.stopwords = stopwords

    def tokenize(self, texts: list[str]) -> list[list[str]]:
        import re

        from offline_agent.retrieval.analyzer import ENGLISH_STOPWORDS

        pattern = re.compile(TOKEN_RE)
        stop = ENGLISH_STOPWORDS if self.stopwords else frozenset()
        shared: dict[str, str] = {}  # one object per distinct token, or a 1M-passage corpus needs ~5 GB
        return [[shared.setdefault(w, w) for w in pattern.findall(t.lower()) if w not in stop] for t in texts]


class Ours(Engine):
    name = "ours"

    def __init__(self, stopwords: bool, workers: int = 1) -> None:
        super().__init__(stopwords)
        from offline_agent.retrieval import Analyzer

        self.workers = workers
        self.analyzer = Analyzer(stopwords="en" if stopwords else None)

    def build_text(self, texts):
        from offline_agent.retrieval import BM25Index

        self.index = BM25Index.build(texts, analyzer=self.analyzer, workers=self.workers)

    def build_tokens(self, tokens):
        from offline_agent.retrieval import BM25Index

        self.index = BM25Index.from_tokens(tokens, analyzer=self.analyzer)

    def save(self, path: Path) -> None:
        self.index.save(path)

    def load(self, path: Path) -> None:
        from offline_agent.retrieval import BM25Index

        self.index = BM25Index.load(path)

    def search(self, query: str, k: int = 10):
        return self.index.search_ids(query, k)[0]  # ids and scores, as the peers return

    def search_full(self, query: str, k: int = 10):
        return self.index.search(query, k).ids  # with Passage objects

    def search_batch(self, queries: list[str], k: int = 10):
        return [self.index.search_ids(q, k)[0] for q in queries]


class BM25S(Engine):
    name = "bm25s"

    def _new(self):
        import bm25s

        try:
            import numba  # noqa: F401

            backend = "numba"
        except ImportError:
            backend = "numpy"
        self.backend = backend
        return bm25s.BM25(backend=backend)

    def build_text(self, texts):
        import bm25s

        tokens = bm25s.tokenize(
            texts, stopwords="en" if self.stopwords else None, show_progress=False, token_pattern=TOKEN_RE
        )
        self.retriever = self._new()
        self.retriever.index(tokens, show_progress=False)

    def build_tokens(self, tokens):
        self.retriever = self._new()
        self.retriever.index(tokens, show_progress=False)

    def save(self, path: Path) -> None:
        self.retriever.save(str(path), show_progress=False)

    def load(self, path: Path) -> None:
        import bm25s

        self.retriever = bm25s.BM25.load(str(path), mmap=True, show_progress=False)
        self.backend = self.retriever.backend

    def _tokens(self, queries: list[str]) -> list[list[str]]:
        vocab = self.retriever.vocab_dict
        return [[t for t in q if t in vocab] or ["\x00"] for q in self.tokenize(queries)]

    def search(self, query: str, k: int = 10):
        tokens = self._tokens([query])
        if tokens == [["\x00"]]:
            return np.zeros(0, np.int64)
        docs, _ = self.retriever.retrieve(tokens, k=k, show_progress=False)
        return docs[0]

    def search_batch(self, queries: list[str], k: int = 10):
        docs, _ = self.retriever.retrieve(self._tokens(queries), k=k, show_progress=False, n_threads=1)
        return list(docs)


class RankBM25(Engine):
    name = "rank-bm25"

    def build_text(self, texts):
        self.build_tokens(self.tokenize(texts))

    def build_tokens(self, tokens):
        from rank_bm25 import BM25Okapi

        self.model = BM25Okapi(tokens)

    def save(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        with open(path / "model.pkl", "wb") as fh:
            pickle.dump(self.model, fh, protocol=pickle.HIGHEST_PROTOCOL)

    def load(self, path: Path) -> None:
        with open(path / "model.pkl", "rb") as fh:
            self.model = pickle.load(fh)  # rank-bm25 has no format of its own

    def search(self, query: str, k: int = 10):
        scores = self.model.get_scores(self.tokenize([query])[0])
        top = np.argpartition(-scores, min(k, len(scores) - 1))[:k]
        return top[np.argsort(-scores[top], kind="stable")]

    def search_batch(self, queries: list[str], k: int = 10):
        return [self.search(q, k) for q in queries]


def make_engine(name: str, stopwords: bool, workers: int = 1) -> Engine:
    if name == "ours":
        return Ours(stopwords, workers)
    return {"bm25s": BM25S, "rank-bm25": RankBM25}[name](stopwords)


# ---------------------------------------------------------------- one measurement (in a subprocess)
def rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def reset_peak_rss() -> None:
    """Linux: restart the process's peak-RSS counter (VmHWM), so the peak is the build's own."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def peak_rss_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def latency(engine: Engine, queries: list[str], repeats: int, full: bool = False) -> tuple[float, float]:
    """Median and p99 over the queries of each query's median time in `repeats` passes over the whole list.

    One timing of a sub-millisecond query is at the mercy of whatever else the machine does in that instant
    (single-pass medians moved 1.5x between runs here); the median of a few passes is not, and unlike the
    best of them it still counts a query that is slow every time."""
    search = engine.search_full if full else engine.search  # type: ignore[attr-defined]
    times = np.empty((repeats, len(queries)))
    for r in range(repeats):
        for i, q in enumerate(queries):
            t = time.perf_counter()
            search(q)
            times[r, i] = time.perf_counter() - t
    per_query = np.median(times, axis=0)
    return float(np.median(per_query) * 1e3), float(np.percentile(per_query, 99) * 1e3)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    spec = json.loads(args.spec)
    texts = load_corpus(spec)
    engine = make_engine(args.engine, spec["stopwords"], args.workers)
    queries = queries_for(spec, texts, args.queries)
    out: dict[str, Any] = {"passages": len(texts)}
    base = rss_mb()
    reset_peak_rss()
    t = time.perf_counter()
    engine.build_text(texts)
    out["build_text_s"] = time.perf_counter() - t
    out["peak_rss_mb"] = peak_rss_mb()
    out["build_rss_delta_mb"] = out["peak_rss_mb"] - base
    out["corpus_rss_mb"] = base
    workdir = Path(tempfile.mkdtemp(prefix="bm25bench-", dir=args.tmp))
    try:
        engine.save(workdir / "index")
        out["index_bytes"] = dir_size(workdir / "index")
        # This engine also stores the passage texts (the others keep ids only): size without them too.
        out["index_bytes_no_text"] = out["index_bytes"] - sum(
            f.stat().st_size for f in (workdir / "index").rglob("text_*.npy")
        )
        if getattr(engine, "backend", None):
            out["backend"] = engine.backend
        for name, qs in queries.items():
            engine.search(qs[0])  # warm: first-query costs are reported as cold load
            out[f"lat {name}"] = latency(engine, qs, args.repeats)
        if hasattr(engine, "search_full"):
            out["lat full"] = latency(engine, queries["3-term vocab"][::-1], args.repeats, full=True)
        batch = queries["3-term vocab"] * max(1, args.batch // len(queries["3-term vocab"]))
        t = time.perf_counter()
        engine.search_batch(batch)
        out["batch_qps"] = len(batch) / (time.perf_counter() - t)
        del engine
        tokens = make_engine(args.engine, spec["stopwords"]).tokenize(texts)
        engine = make_engine(args.engine, spec["stopwords"])
        t = time.perf_counter()
        engine.build_tokens(tokens)
        out["build_tokens_s"] = time.perf_counter() - t
        del engine, tokens
        code = (
            "import sys, time; t0 = time.perf_counter()\n"
            "from benchmarks.speed import bm25_bench as b\n"
            f"e = b.make_engine({args.engine!r}, {spec['stopwords']!r}); t1 = time.perf_counter()\n"
            f"e.load(b.Path({str(workdir / 'index')!r})); e.search({queries['3-term vocab'][0]!r})\n"
            "t2 = time.perf_counter(); print(t1 - t0, t2 - t1)\n"
        )
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
        imports, load = map(float, res.stdout.split()[-2:])
        out["cold_load_ms"] = load * 1e3
        out["import_ms"] = imports * 1e3
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return out


def run_measure(engine: str, spec: dict[str, Any], args: argparse.Namespace, workers: int = 1) -> dict[str, Any]:
    cmd = [
        *module_command(__spec__.name), "_measure", "--engine", engine, "--spec", json.dumps(spec),
        "--queries", str(args.queries if engine != "rank-bm25" else args.rank_queries),
        "--batch", str(args.batch if engine != "rank-bm25" else args.rank_queries), "--workers", str(workers),
        "--repeats", str(args.repeats if engine != "rank-bm25" else 1), "--tmp", str(args.tmp),
    ]  # fmt: skip
    t = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if res.returncode != 0:
        return {"error": (res.stderr.strip().splitlines() or ["failed"])[-1]}
    out = json.loads(res.stdout.strip().splitlines()[-1])
    out["wall_s"] = time.perf_counter() - t
    return out


# ---------------------------------------------------------------- table
ROWS = [
    ("build from text (passages/s)", lambda r: r["passages"] / r["build_text_s"], "rate"),
    ("build from tokens (passages/s)", lambda r: r["passages"] / r["build_tokens_s"], "rate"),
    ("peak RSS (MB)", lambda r: r["peak_rss_mb"], "size"),
    ("  of which build (MB)", lambda r: r["build_rss_delta_mb"], "size"),
    ("index size on disk (MB)", lambda r: r["index_bytes"] / 2**20, "size"),
    ("  without passage texts (MB)", lambda r: r["index_bytes_no_text"] / 2**20, "size"),
    ("cold load -> first result (ms)", lambda r: r["cold_load_ms"], "time"),
    *[
        (f"{q} median / p99 (ms)", (lambda r, q=q: r[f"lat {q}"]), "time2")
        for q in ("1-term vocab", "3-term vocab", "8-term vocab", "3-term text", "8-term text", "dev questions")
    ],
    ("3-term vocab, with passages (ms)", lambda r: r["lat full"], "time2"),
    ("batch, 3-term (queries/s)", lambda r: r["batch_qps"], "rate"),
]


def fmt(value: Any, kind: str) -> str:
    if value is None:
        return "-"
    if kind == "time2":
        return f"{value[0]:.3f} / {value[1]:.3f}" if value[0] < 10 else f"{value[0]:.0f} / {value[1]:.0f}"
    if kind == "time" or kind == "size":
        return f"{value:,.1f}" if value < 1000 else f"{value:,.0f}"
    return f"{value:,.0f}"


def ratio(ours: Any, peer: Any, kind: str) -> str:
    """How many times better this engine is than the peer (>1: better)."""
    if ours is None or peer is None:
        return "-"
    if kind == "time2":
        ours, peer = ours[0], peer[0]
    if not ours or not peer:
        return "-"
    r = ours / peer if kind == "rate" else peer / ours
    return f"{r:.1f}x"


def print_table(title: str, results: dict[str, dict[str, Any]], notes: list[str]) -> None:
    names = list(results)
    print(f"\n== {title} ==")
    peers = [n for n in names if not n.startswith("ours")]
    pairs = [("ours", p) for p in peers] + [(n, "bm25s") for n in names if n.startswith("ours (") and "bm25s" in names]
    header = f"{'':34}" + "".join(f"{n:>20}" for n in names)
    header += "".join(f"{(a + ' vs ' + b).replace('ours (', '('):>22}" for a, b in pairs)
    print(header)

    def get(name: str, fn) -> Any:
        r = results[name]
        if "error" in r or "skipped" in r:
            return None
        try:
            return fn(r)
        except KeyError:
            return None

    for label, fn, kind in ROWS:
        values = {n: get(n, fn) for n in names}
        if all(v is None for v in values.values()):
            continue
        line = f"{label:34}" + "".join(f"{fmt(values[n], kind):>20}" for n in names)
        line += "".join(f"{ratio(values.get(a), values[b], kind):>22}" for a, b in pairs)
        print(line)
    for name in names:
        r = results[name]
        if "skipped" in r:
            print(f"  {name}: skipped: {r['skipped']}")
        elif "error" in r:
            print(f"  {name}: failed: {r['error']}")
        elif r.get("backend"):
            print(f"  {name}: backend {r['backend']}; import {r.get('import_ms', 0):.0f} ms (not in cold load)")
    for note in notes:
        print(f"  {note}")


# ---------------------------------------------------------------- quality
def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def ndcg_at_10(ranked: list[str], relevant: dict[str, int]) -> float:
    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def quality() -> None:
    from offline_agent.retrieval import Analyzer, BM25Index, Passage

    print("\n== retrieval quality ==")
    if not DATA.exists():
        print(f"  skipped: {DATA} not found")
        return
    analyzers = {"default analyzer": Analyzer()}
    try:
        analyzers["+ English stemming"] = Analyzer(stemmer="english")
    except Exception as exc:  # PyStemmer missing
        print(f"  stemming skipped: {exc}")
    corpus = read_jsonl(SCIFACT / "corpus.jsonl")
    queries = {q["_id"]: q["text"] for q in read_jsonl(SCIFACT / "queries.jsonl")}
    qrels: dict[str, dict[str, int]] = {}
    for line in (SCIFACT / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        qid, did, score = line.split("\t")
        qrels.setdefault(qid, {})[did] = int(score)
    passages = [
        Passage(i, d["_id"], d.get("title", ""), d["text"], "", 0, len(d["text"])) for i, d in enumerate(corpus)
    ]
    for label, analyzer in analyzers.items():
        index = BM25Index.build(passages, analyzer=analyzer)
        scores = []
        for qid, rel in qrels.items():
            hits = index.search(queries[qid], k=10).passages
            scores.append(ndcg_at_10([p.doc_id for p in hits], rel))
        print(f"  SciFact nDCG@10 ({len(scores)} test queries), {label}: {np.mean(scores):.3f}   (BEIR BM25: 0.665)")
    pool = read_jsonl(HOTPOT_POOL)
    dev = json.loads(HOTPOT_DEV.read_text())
    passages = [Passage(i, r["id"], r["title"], r["text"], "", 0, len(r["text"])) for i, r in enumerate(pool)]
    titles = {r["title"] for r in pool}
    for label, analyzer in analyzers.items():
        index = BM25Index.build(passages, analyzer=analyzer)
        recall = {2: [], 5: [], 10: []}
        for q in dev:
            gold = {t for t, _ in q["supporting_facts"]} & titles
            if not gold:
                continue
            found = [p.title for p in index.search(q["question"], k=10).passages]
            for k in recall:
                recall[k].append(len(gold & set(found[:k])) / len(gold))
        n = len(recall[2])
        parts = ", ".join(f"R@{k} {np.mean(v):.3f}" for k, v in recall.items())
        print(f"  HotpotQA supporting-paragraph recall ({n} dev questions, 5,716-paragraph pool), {label}: " + parts)


# ---------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=300, help="queries per latency row")
    parser.add_argument("--repeats", type=int, default=5, help="passes over each latency row's queries (rank-bm25: 1)")
    parser.add_argument("--rank-queries", type=int, default=20, help="queries per row for rank-bm25")
    parser.add_argument("--batch", type=int, default=2000, help="queries in the batch-throughput run")
    parser.add_argument("--rank-bm25-limit", type=float, default=600.0, help="seconds; skip rank-bm25 beyond")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--no-hotpot", action="store_true")
    parser.add_argument("--no-quality", action="store_true")
    parser.add_argument("--quick", action="store_true", help="fewer queries (smoke run)")
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--tmp", type=Path, default=Path(tempfile.gettempdir()))
    if len(sys.argv) > 1 and sys.argv[1] == "_measure":
        sub = argparse.ArgumentParser()
        for flag in ("--engine", "--spec", "--tmp"):
            sub.add_argument(flag)
        for flag in ("--queries", "--batch", "--workers", "--repeats"):
            sub.add_argument(flag, type=int)
        print(json.dumps(measure(sub.parse_args(sys.argv[2:]))))
        return
    args = parser.parse_args()
    if args.quick:
        args.queries, args.rank_queries, args.batch, args.repeats = 50, 10, 200, 2
    engines = [e for e in args.engines.split(",") if e]
    workers = min(2, os.cpu_count() or 1)
    print(f"# {sys.executable} {' '.join(sys.argv)}")
    print(f"# {os.cpu_count()} cores; python {sys.version.split()[0]}; numpy {np.__version__}")
    specs = [
        (f"synthetic Zipf, {int(n):,} passages (vocab 50k, 60-120 tokens)",
         {"kind": "zipf", "stopwords": False, "path": str(synthetic(int(n), args.cache))})
        for n in args.sizes.split(",") if n
    ]  # fmt: skip
    if not args.no_hotpot and HOTPOT_POOL.exists():
        specs.append(("HotpotQA pool (5,716 paragraphs, title + text)",
                      {"kind": "hotpot", "stopwords": True, "path": str(HOTPOT_POOL)}))  # fmt: skip
    rank_per_passage: float | None = None
    for title, spec in specs:
        with open(spec["path"], encoding="utf-8") as fh:
            n = sum(1 for _ in fh)
        results: dict[str, dict[str, Any]] = {}
        notes = []
        for engine in engines:
            if engine == "rank-bm25" and rank_per_passage is None and n > 200_000:
                results[engine] = {"skipped": "no smaller size in this run to project from (1M: about 1,000 s)"}
                continue
            if engine == "rank-bm25" and rank_per_passage is not None:
                projected = rank_per_passage * n
                if projected > args.rank_bm25_limit:
                    results[engine] = {"skipped": f"projected {projected:,.0f} s > {args.rank_bm25_limit:.0f} s"}
                    continue
            results[engine] = run_measure(engine, spec, args)
            if engine == "ours" and workers > 1 and n >= 100_000:
                r = run_measure(engine, spec, args, workers=workers)
                if "error" not in r:
                    results[f"ours ({workers} procs)"] = r
                    notes.append(f"ours ({workers} procs): tokenization in {workers} worker processes")
            if engine == "rank-bm25" and "error" not in results[engine]:
                rank_per_passage = max(rank_per_passage or 0.0, results[engine]["wall_s"] / n)
        notes.append(f"rank-bm25 latency rows use {args.rank_queries} queries, timed once (its p99 is their max)")
        print_table(title, results, notes)
        sys.stdout.flush()
    if not args.no_quality:
        quality()


if __name__ == "__main__":
    main()
