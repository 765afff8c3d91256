"""The backends side by side: decoding speed with and without the grammar, prefix reuse, and whole questions.

Per backend (llamacpp, transformers, http against a local `python -m llama_cpp.server` started here unless
--server-url is given), on the agent's real first-step prompts over the sample corpus:
  1. ms per generated token, unconstrained and under the step grammar (greedy, the prompt already cached), and
     their ratio;
  2. the agent on --limit questions of corpora/sample/questions.jsonl (react, the default settings): prompt tokens
     evaluated per step after the first against the tokens the step added (median; n/a where the backend does
     not report its cache), EM, steps and seconds per question, format errors, and questions per hour; the http
     backend at each --concurrency (questions in flight at once).
Prints tables; asserts nothing. The figures depend on the machine and on what else runs on it.

    python -m benchmarks.speed.backend_bench [--model smollm2-135m-instruct] [--backends llamacpp,transformers,http]
        [--limit 20] [--concurrency 1,2,4] [--tokens 64] [--threads N] [--server-url URL]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from offline_agent.agents import ReActAgent
from offline_agent.backends import build_backend
from offline_agent.eval.results import RunFolder
from offline_agent.eval.runner import EvalOptions, run_evaluation
from offline_agent.models import resolve_model
from offline_agent.resources import sample_questions
from offline_agent.runner import open_index
from offline_agent.tools import build_tools


def start_server(model: str, threads: int, gpu_layers: int = 0) -> tuple[subprocess.Popen[bytes], str]:
    """llama-cpp-python's server on a free port of 127.0.0.1 (waits until it answers)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    path = resolve_model(model).path
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--host", "127.0.0.1"]
    command += ["--port", str(port), "--n_ctx", "4096", "--n_threads", str(threads), "--interrupt_requests", "False"]
    command += ["--n_gpu_layers", str(gpu_layers)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(1200):
        try:
            with urllib.request.urlopen(url + "/v1/models", timeout=5):
                return process, url
        except OSError:
            time.sleep(0.5)
    process.kill()
    raise SystemExit("llama_cpp.server did not start")


def speed(backend: Any, prompts: list[tuple[ReActAgent, str]], tokens: int) -> dict[str, float]:
    """Median ms per generated token, unconstrained and constrained, each on a prompt evaluated once before."""
    out: dict[str, float] = {}
    for label, constrained in (("free", False), ("grammar", True)):
        per_token = []
        for agent, prompt in prompts:
            grammar = agent.grammar.gbnf if constrained else None
            backend.complete(prompt, grammar=grammar, max_tokens=4)  # warm: the prompt is in the cache after this
            started = time.perf_counter()
            completion = backend.complete(prompt, grammar=grammar, max_tokens=tokens)
            wall = time.perf_counter() - started
            generated = max(completion.usage.generated_tokens, 1)
            per_token.append(1000 * (completion.timings.generate_s or wall) / generated)
        out[label] = statistics.median(per_token)
    out["ratio"] = out["grammar"] / out["free"]
    return out


def agent_table(backend: Any, limit: int, concurrency: int, work: Path) -> dict[str, Any]:
    out = work / f"{backend.name}-{concurrency}"
    options = EvalOptions(dataset=sample_questions(), limit=limit, out=out, concurrency=concurrency)
    started = time.perf_counter()
    summary = run_evaluation(options, backend=backend)
    wall = time.perf_counter() - started
    evaluated, added = [], []
    for row in RunFolder(out).read_results():
        steps = row["trajectory"]["steps"]
        for before, step in zip(steps, steps[1:], strict=False):
            evaluated.append(step["usage"]["prompt_tokens"] - step["usage"]["cached_tokens"])
            added.append(step["usage"]["prompt_tokens"] - before["usage"]["prompt_tokens"])
    caches = backend.capabilities.reuses_prefix_cache
    return {
        "backend": backend.name,
        "concurrency": concurrency,
        "questions": summary["questions"],
        "EM": round(100 * (summary["em"] or 0), 1),
        "format errors": summary["format"]["format_error_runs"],
        "steps/q": summary["steps_per_question"]["mean"],
        "s/q median": summary["seconds_per_question"]["median"],
        "q/hour": round(3600 * summary["questions"] / wall, 1),
        "evaluated/step": round(statistics.median(evaluated), 1) if evaluated and caches else "n/a",
        "added/step": round(statistics.median(added), 1) if added else "n/a",
    }


def table(rows: list[dict[str, Any]]) -> str:
    header = list(rows[0])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(row[key]) for key in header) + " |" for row in rows]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--backends", default="llamacpp,transformers,http")
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--concurrency", default="1,2,4")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--server-url", default=None)
    parser.add_argument("--gpu-layers", type=int, default=0, help="llamacpp: layers on the GPU (-1: all)")
    parser.add_argument("--device", default="cpu", help="transformers: cpu or cuda")
    parser.add_argument("--skip-agent", action="store_true", help="only the speed table")
    args = parser.parse_args()

    index, _ = open_index(None)
    questions = [json.loads(line)["question"] for line in sample_questions().open()][:5]
    server = None
    speed_rows, agent_rows = [], []
    try:
        for name in args.backends.split(","):
            print(f"loading {name} ...", file=sys.stderr, flush=True)
            if name == "http":
                url = args.server_url
                if url is None:
                    server, url = start_server(args.model, args.threads, args.gpu_layers)
                backend = build_backend("http", server_url=url, model=args.model, timeout=1200)
            else:
                placement = {"llamacpp": {"gpu_layers": args.gpu_layers}, "transformers": {"device": args.device}}
                backend = build_backend(name, model=args.model, threads=args.threads, **placement.get(name, {}))
            prompts = []
            for question in questions:
                agent = ReActAgent(backend, build_tools(index))
                prompts.append((agent, agent.prompt_prefix(agent.prompt_parts(question))))
            figures = speed(backend, prompts, args.tokens)
            speed_rows.append(
                {
                    "backend": name,
                    "ms/token free": round(figures["free"], 2),
                    "ms/token grammar": round(figures["grammar"], 2),
                    "ratio": round(figures["ratio"], 2),
                }
            )
            print(table(speed_rows[-1:]), file=sys.stderr, flush=True)
            if args.skip_agent:
                continue
            levels = [int(n) for n in args.concurrency.split(",")] if name == "http" else [1]
            with tempfile.TemporaryDirectory() as work:
                for level in levels:
                    agent_rows.append(agent_table(backend, args.limit, level, Path(work)))
                    print(table(agent_rows[-1:]), file=sys.stderr, flush=True)
    finally:
        if server is not None:
            server.terminate()
    print(f"model {args.model}, threads {args.threads}\n")
    print(table(speed_rows))
    if agent_rows:
        print()
        print(table(agent_rows))
    print(
        "\nms/token: generation time per generated token, greedy, prompt cached (http: the server's wall time per "
        "token);\nratio: grammar / free. evaluated/step: prompt tokens evaluated in a step after the first "
        "(median; n/a: the backend does not report its cache); added/step: tokens the step added."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
