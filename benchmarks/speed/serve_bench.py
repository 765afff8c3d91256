"""Questions per minute through `offline-agent serve` with 1, 4 and 16 concurrent clients, against a sequential
`ask` loop over the same questions on the same model; and the time to the first streamed step.

Why: the server runs one question at a time on one model (llama.cpp holds one context), so concurrent clients
cannot make it faster; what must hold is that the HTTP layer, the queue and the streaming cost next to nothing:
the goal is questions per minute within 5% of the loop. Time to the first step is what a user waits before the
page shows anything (with more clients, most of it is the wait in the queue).

Every round asks the same list: the sample corpus's first --questions questions, repeated to a multiple of every
client count, at temperature 0 (so each round does the same work). The loop is `Session.ask` in this process with
the settings `serve` gets on its command line (the model loaded once, as the server does; loading is not timed,
and one question warms each side up first). Each client streams its questions one after another; the first step
is the first `step_start` event of a stream, from the moment its request was sent.

    python -m benchmarks.speed.serve_bench                       # smollm2-135m-instruct, 8 questions
    python -m benchmarks.speed.serve_bench --clients 1,4 --questions 4 --threads 2
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ADDRESS = re.compile(r"the page and the API at (http://\S+)")


def questions(count: int, clients: list[int]) -> list[str]:
    from offline_agent.resources import sample_questions

    lines = sample_questions().read_text(encoding="utf-8").splitlines()
    chosen = [json.loads(line)["question"] for line in lines if line.strip()][:count]
    step = math.lcm(*clients)
    total = max(len(chosen), step)
    total = -(-total // step) * step  # a multiple of every client count: each client asks as many
    return [chosen[i % len(chosen)] for i in range(total)]


def loop_rate(asked: list[str], args: argparse.Namespace) -> float:
    """Seconds for the sequential loop over `asked` (after one warm-up question)."""
    from offline_agent.agents import agent_settings
    from offline_agent.backends.registry import BackendOptions, build_backend
    from offline_agent.runner import Session, corpus_scope, open_index

    settings = agent_settings(None, args.profile, max_steps=args.max_steps, scope=corpus_scope(None))
    backend = build_backend("llamacpp", BackendOptions(model=args.model, threads=args.threads))
    index, where = open_index(None)
    session = Session.from_settings(settings, backend=backend, index=index, corpus=where)
    session.ask(asked[0], settings.config)
    started = time.monotonic()
    for question in asked:
        session.ask(question, settings.config)
    return time.monotonic() - started


class Server:
    """`offline-agent serve` on a free port, with the benchmark's settings."""

    def __init__(self, args: argparse.Namespace) -> None:
        command = [sys.executable, "-m", "offline_agent.cli", "serve", "--port", "0", "--model", args.model]
        command += ["--profile", args.profile, "--max-steps", str(args.max_steps), "--queue", "64"]
        command += ["--threads", str(args.threads)] if args.threads else []
        self.process = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True)
        assert self.process.stderr is not None
        self.url = ""
        for line in self.process.stderr:
            found = ADDRESS.search(line)
            if found:
                self.url = found.group(1)
                break
        if not self.url:
            raise SystemExit(f"the server did not start (exit {self.process.wait()})")
        threading.Thread(target=self.process.stderr.read, daemon=True).start()  # never let its pipe fill

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(120)


def stream_one(url: str, question: str) -> float:
    """Ask `question` streaming; the seconds to its first step_start event (the stream is read to its end)."""
    try:
        import httpx2 as httpx  # what openai and Starlette use now
    except ImportError:
        import httpx

    body = {"messages": [{"role": "user", "content": question}], "stream": True}
    sent = time.monotonic()
    first = math.nan
    with httpx.stream("POST", url + "/v1/chat/completions", json=body, timeout=None) as reply:
        reply.raise_for_status()
        for line in reply.iter_lines():
            if math.isnan(first) and '"step_start"' in line:
                first = time.monotonic() - sent
    return first


def serve_round(url: str, asked: list[str], clients: int) -> tuple[float, list[float]]:
    """Seconds for `clients` clients to ask `asked` between them, and each question's time to its first step."""
    firsts: list[float] = []
    lock = threading.Lock()

    def client(share: list[str]) -> None:
        for question in share:
            first = stream_one(url, question)
            with lock:
                firsts.append(first)

    shares = [asked[i::clients] for i in range(clients)]
    threads = [threading.Thread(target=client, args=(share,)) for share in shares]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.monotonic() - started, firsts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--model", default="smollm2-135m-instruct", help="registry name or .gguf path")
    parser.add_argument("--profile", default="plain", help="settings profile (the same for the loop and the server)")
    parser.add_argument("--max-steps", type=int, default=4)
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads [default: every core]")
    parser.add_argument("--questions", type=int, default=8, help="how many sample questions (repeated as needed)")
    parser.add_argument("--clients", default="1,4,16", help="client counts, comma-separated")
    args = parser.parse_args(argv)
    clients = [int(part) for part in args.clients.split(",")]
    asked = questions(args.questions, clients)
    print(f"{len(asked)} questions per round ({args.questions} distinct), model {args.model}, profile {args.profile}")

    loop_seconds = loop_rate(asked, args)
    base = len(asked) / loop_seconds * 60
    rows = [("ask loop (sequential)", loop_seconds, base, math.nan, math.nan)]
    server = Server(args)
    try:
        stream_one(server.url, asked[0])  # warm-up, as the loop had
        for count in clients:
            seconds, firsts = serve_round(server.url, asked, count)
            middle = statistics.median(firsts)
            high = sorted(firsts)[max(0, math.ceil(0.9 * len(firsts)) - 1)]
            rows.append(
                (f"serve, {count} client{'s' if count > 1 else ''}", seconds, len(asked) / seconds * 60, middle, high)
            )
    finally:
        server.stop()

    print(f"{'':24} {'seconds':>8} {'q/min':>7} {'vs loop':>8} {'first step median':>18} {'p90':>7}")
    for name, seconds, rate, middle, high in rows:
        first = f"{middle:17.2f}s {high:6.2f}s" if not math.isnan(middle) else f"{'-':>18} {'-':>7}"
        print(f"{name:24} {seconds:8.1f} {rate:7.1f} {rate / base:8.3f} {first}")


if __name__ == "__main__":
    main()
