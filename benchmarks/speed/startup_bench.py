"""What an `ask` spends before the model writes its first token: loading the model, and building the grammar
engine's tokenizer, which llguidance's own builder and this project's saved token table do side by side.

Why: `ask` is one process per question, so every start-up cost is paid by every question (make run's among them).
The tokenizer was 0.86 s of the first step's 1.0 s of prompt time on the default model.

Rows, each the median of --repeat runs in this process:
- model load: `LlamaCppBackend(...)` (llama.cpp reading the GGUF, mmap'd);
- tokenizer, llguidance's builder: `llguidance.llamacpp.lltokenizer_from_vocab` (one llama.cpp call per token and
  per attribute, then the tokenizer with llguidance's default slices), what the backend did before;
- tokenizer, table from llama.cpp: `GrammarCache.from_llama` with no saved table (a model's first `ask`);
- tokenizer, saved table: the same once the table is saved (every later `ask`).
Then `ask` itself as a subprocess (--asks times): seconds of agent time, the first step's prompt seconds, and the
wall clock of the whole process.

    python -m benchmarks.speed.startup_bench                   # default model, 5 repeats, 3 asks
    python -m benchmarks.speed.startup_bench --model smollm2-135m-instruct --asks 0
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable

QUESTION = "Which river flows through the birth city of James Joyce?"


def _median_s(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="registry name or .gguf path [default model]")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--asks", type=int, default=3, help="ask subprocesses to time (0: none)")
    args = parser.parse_args()

    import llguidance.llamacpp

    from offline_agent.backends import token_table
    from offline_agent.backends.guided import GrammarCache
    from offline_agent.backends.llamacpp import LlamaCppBackend
    from offline_agent.models import resolve_model

    resolved = resolve_model(args.model)
    load_s = _median_s(lambda: LlamaCppBackend(resolved.path, sha256=resolved.sha256), args.repeat)
    backend = LlamaCppBackend(resolved.path, sha256=resolved.sha256)
    llm = backend.llm

    def llguidance_builder() -> object:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return llguidance.llamacpp.lltokenizer_from_vocab(llm._model.vocab, n_vocab=llm.n_vocab())

    with tempfile.TemporaryDirectory() as home:
        os.environ["OFFLINE_AGENT_HOME"] = home  # a table of its own, so "from llama.cpp" never finds one
        ours_cold = _median_s(lambda: GrammarCache.from_llama(llm, None), args.repeat)
        GrammarCache.from_llama(llm, backend._model_identity)  # saves the table
        assert list(token_table.cache_folder().glob("*.tokens"))
        ours_saved = _median_s(lambda: GrammarCache.from_llama(llm, backend._model_identity), args.repeat)
        del os.environ["OFFLINE_AGENT_HOME"]
    theirs = _median_s(llguidance_builder, args.repeat)

    print(f"# {resolved.name} ({llm.n_vocab():,} tokens); median of {args.repeat}")
    print("| what | seconds | vs llguidance's builder |")
    print("|---|---|---|")
    print(f"| model load | {load_s:.3f} | |")
    print(f"| tokenizer, llguidance's builder | {theirs:.3f} | 1.00x |")
    print(f"| tokenizer, table from llama.cpp | {ours_cold:.3f} | {theirs / ours_cold:.2f}x |")
    print(f"| tokenizer, saved table | {ours_saved:.3f} | {theirs / ours_saved:.2f}x |")

    if args.asks:
        command = [sys.executable, "-m", "offline_agent.cli", "ask", "-q", "--json", QUESTION]
        if args.model:
            command += ["--model", args.model]
        print(f"\n`ask` on make run's question, {args.asks} runs (the saved prefix and table already in place):")
        print("| run | answer | steps | agent s | first step's prompt s | wall s |")
        print("|---|---|---|---|---|---|")
        subprocess.run(command, capture_output=True, check=False)  # writes what later runs read
        for n in range(1, args.asks + 1):
            started = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            wall = time.perf_counter() - started
            if done.returncode != 0:
                print(f"| {n} | ask failed ({done.returncode}): {done.stderr.strip()[-200:]} | | | | |")
                continue
            run = json.loads(done.stdout)
            first = run["steps"][0]["timings"]["prompt_s"]
            print(f"| {n} | {run['answer']} | {len(run['steps'])} | {run['seconds']:.2f} | {first:.3f} | {wall:.2f} |")


if __name__ == "__main__":
    main()
