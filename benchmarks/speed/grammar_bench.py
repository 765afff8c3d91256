"""What the grammar costs per generated token, for each registered model, on the agent's real prompts.

For every model that is installed: milliseconds per generated token with
  - llama.cpp unconstrained (llama-cpp-python's own generate loop: the peer),
  - our decoding loop unconstrained,
  - llama-cpp-python's grammar= sampler (the old path),
  - llama.cpp's grammar code checking sampled tokens only (engine llama.cpp-check),
  - llguidance checking sampled tokens only, without and with jump-forward (the default),
the ratio of each to llama.cpp unconstrained, how often the full mask was needed, and the grammar's compile
time. Greedy decoding on warmed prompts (the prompt is cached before timing), so only generation is timed.
Prints a table; asserts nothing.

    python -m benchmarks.speed.grammar_bench [--models a,b] [--prompts 4] [--repeat 2] [--max-tokens 96]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from offline_agent.agents import ReActAgent
from offline_agent.backends.llamacpp import LlamaCppBackend
from offline_agent.errors import OfflineAgentError
from offline_agent.models import load_registry, model_status, resolve_model
from offline_agent.resources import sample_questions
from offline_agent.runner import open_index
from offline_agent.tools import build_tools

PATHS = ("llama.cpp free", "ours free", "grammar=", "llama.cpp-check", "llguidance", "llguidance+jump")


def prompts_for(backend: LlamaCppBackend, count: int) -> tuple[ReActAgent, list[str]]:
    index, _ = open_index(None)
    agent = ReActAgent(backend, build_tools(index))
    lines = sample_questions().read_text(encoding="utf-8").splitlines()[:count]
    return agent, [agent.prompt_prefix(agent.prompt_parts(json.loads(line)["question"])) for line in lines]


def peer_ms_per_token(backend: LlamaCppBackend, prompt: str, max_tokens: int) -> float:
    """llama-cpp-python's generate loop without a grammar, greedy, on a warmed prompt."""
    llm = backend.llm
    tokens = backend.tokenize(prompt, prompt=True)
    generated, started, first = 0, time.perf_counter(), None
    for token in llm.generate(tokens, temp=0.0, top_k=40, top_p=0.95, min_p=0.05, repeat_penalty=1.0):
        if first is None:
            first = time.perf_counter()
        if backend._is_end_of_generation(token) or generated >= max_tokens:
            break
        generated += 1
    return 1000 * (time.perf_counter() - (first or started)) / max(generated, 1)


def measure(model: str, args: argparse.Namespace) -> dict[str, object]:
    resolved = resolve_model(model)
    row: dict[str, object] = {"model": model}
    times: dict[str, list[float]] = {path: [] for path in PATHS}
    masked = forced = generated = 0
    backends = {
        "grammar=": LlamaCppBackend(resolved.path, grammar_engine="llama.cpp", model_name=model),
        "llama.cpp-check": LlamaCppBackend(resolved.path, grammar_engine="llama.cpp-check", model_name=model),
        "llguidance": LlamaCppBackend(resolved.path, jump_forward=False, model_name=model),
        "llguidance+jump": LlamaCppBackend(resolved.path, model_name=model),
    }
    fast = backends["llguidance+jump"]
    row["vocab"] = fast.llm.n_vocab()
    agent, prompts = prompts_for(fast, args.prompts)
    grammar = agent.grammar.gbnf
    started = time.perf_counter()
    fast.complete(prompts[0], grammar=grammar, max_tokens=1)
    row["compile_ms"] = round(1000 * (time.perf_counter() - started), 1)
    guide = fast._guide
    row["tokenizer_ms"] = round(1000 * guide.tokenizer_s, 1) if guide else None
    row["grammar_compile_ms"] = round(1000 * next(iter(guide.compile_s.values())), 2) if guide else None
    for prompt in prompts:
        for backend in backends.values():
            backend.complete(prompt, max_tokens=1)  # warm this prompt in every backend's cache
        for _ in range(args.repeat):
            times["llama.cpp free"].append(peer_ms_per_token(fast, prompt, args.max_tokens))
            free = fast.complete(prompt, max_tokens=args.max_tokens)
            times["ours free"].append(1000 * free.timings.generate_s / max(free.usage.generated_tokens, 1))
            for path in PATHS[2:]:
                completion = backends[path].complete(prompt, grammar=grammar, max_tokens=args.max_tokens)
                sampled = max(completion.usage.generated_tokens, 1)
                times[path].append(1000 * completion.timings.generate_s / sampled)
                if path == "llguidance+jump":
                    masked += completion.masked_tokens
                    forced += completion.forced_tokens
                    generated += completion.usage.generated_tokens
    base = statistics.median(times["llama.cpp free"])
    for path in PATHS:
        row[path] = round(statistics.median(times[path]), 2)
        row[f"{path} ratio"] = round(statistics.median(times[path]) / base, 3)
    row["masked_share"] = round(masked / max(generated, 1), 3)
    row["forced_share"] = round(forced / max(generated, 1), 3)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=None, help="comma-separated registry names (default: all installed)")
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    names = args.models.split(",") if args.models else list(load_registry())
    rows = []
    for name in names:
        status = model_status(name)
        if status == "not installed":
            print(f"skip {name}: not installed (offline-agent models install {name})", file=sys.stderr)
            continue
        try:
            rows.append(measure(name, args))
        except OfflineAgentError as exc:
            print(f"skip {name}: {exc}", file=sys.stderr)
            continue
        print(f"measured {name}", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    header = ["model", "vocab", *[f"{p} ms/tok" for p in PATHS], *[f"{p} ratio" for p in PATHS[1:]]]
    header += ["masked", "forced", "grammar compile ms", "tokenizer ms"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        cells = [row["model"], row["vocab"], *[row[p] for p in PATHS], *[row[f"{p} ratio"] for p in PATHS[1:]]]
        cells += [row["masked_share"], row["forced_share"], row["grammar_compile_ms"], row["tokenizer_ms"]]
        print("| " + " | ".join(str(c) for c in cells) + " |")
    print("\nms/tok: generation time per generated token (greedy, warmed prompt); ratio: against llama.cpp free;")
    print("masked: share of tokens that needed the full grammar mask; forced: share appended by jump-forward.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
