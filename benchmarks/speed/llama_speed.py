"""How fast llama.cpp itself runs a model here, against the product's path, on the same build.

Why: an agent step is about 400 prompt tokens evaluated and 30 generated, and the product measured about 9.5
tokens/s of generation where an earlier probe of the same model file saw 32. This script separates llama.cpp's own
speed from ours, and tries the settings that could explain a gap.

Two measurements per configuration:
- "raw": llama.cpp's own benchmark logic through llama-cpp-python's low-level API (what llama-bench does): a
  prompt of N random tokens evaluated in one llama_decode call (pp), then M tokens generated one at a time (tg),
  at an empty context and again after D tokens already sit in the cache (tg@D, where an agent's later steps run);
- "product": LlamaCppBackend.complete on a real agent prompt, without a grammar and with it, from the Completion's
  own timings (prompt evaluation and generation seconds).

Configurations vary what can be changed without rebuilding: threads, n_batch/n_ubatch, flash attention, the KV
cache type, and how the model file is loaded (mmap, mlock, read into memory). What needs a rebuild (instruction sets,
OpenMP) is compared by running this script under each build's Python (`--label` names the row).

    python -m benchmarks.speed.llama_speed                                  # default model, every configuration
    python -m benchmarks.speed.llama_speed --configs base,threads1 --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass, replace
from pathlib import Path


@dataclass(frozen=True)
class Config:
    """The llama.cpp settings of one row."""

    threads: int = 2
    n_batch: int = 512
    n_ubatch: int = 512
    flash_attn: bool = False
    kv_type: str = "f16"  # f16 | q8_0
    load: str = "mmap"  # mmap | mlock | read (no mmap)
    gpu_layers: int = 0  # layers offloaded to a GPU (-1: all; a CUDA or Metal build only)


CONFIGS = {
    "base": Config(),
    "threads1": Config(threads=1),
    "ubatch256": Config(n_ubatch=256, n_batch=512),
    "ubatch128": Config(n_ubatch=128, n_batch=512),
    "batch2048": Config(n_batch=2048, n_ubatch=512),
    "flash": Config(flash_attn=True),
    "kv_q8": Config(flash_attn=True, kv_type="q8_0"),
    "mlock": Config(load="mlock"),
    "no_mmap": Config(load="read"),
}


def _llama():
    import llama_cpp
    import llama_cpp._logger

    llama_cpp._logger.set_verbose(False)  # llama.cpp's load log would bury the table
    return llama_cpp


def raw_speed(path: Path, config: Config, *, pp: int, tg: int, depth: int, repeat: int, n_ctx: int) -> dict:
    """pp, tg and tg@depth tokens/s with llama.cpp's low-level API (llama-bench's method)."""
    lc = _llama()
    lc.llama_backend_init()
    mparams = lc.llama_model_default_params()
    mparams.load_mode = {
        "mmap": lc.LLAMA_LOAD_MODE_MMAP,
        "mlock": lc.LLAMA_LOAD_MODE_MMAP_MLOCK,
        "read": lc.LLAMA_LOAD_MODE_NONE,
    }[config.load]
    mparams.n_gpu_layers = config.gpu_layers
    model = lc.llama_model_load_from_file(str(path).encode(), mparams)
    if not model:
        raise SystemExit(f"cannot load {path}")
    cparams = lc.llama_context_default_params()
    cparams.n_ctx = n_ctx
    cparams.n_batch = config.n_batch
    cparams.n_ubatch = config.n_ubatch
    cparams.n_threads = config.threads
    cparams.n_threads_batch = config.threads
    flash = lc.LLAMA_FLASH_ATTN_TYPE_ENABLED if config.flash_attn else lc.LLAMA_FLASH_ATTN_TYPE_DISABLED
    cparams.flash_attn_type = flash
    kv = {"f16": lc.GGML_TYPE_F16, "q8_0": lc.GGML_TYPE_Q8_0}[config.kv_type]
    cparams.type_k = kv
    cparams.type_v = kv
    cparams.no_perf = True
    ctx = lc.llama_init_from_model(model, cparams)
    if not ctx:
        raise SystemExit(f"cannot create a context for {config}")
    n_vocab = lc.llama_vocab_n_tokens(lc.llama_model_get_vocab(model))
    memory = lc.llama_get_memory(ctx)

    def decode(tokens: list[int]) -> None:
        for start in range(0, len(tokens), config.n_batch):
            chunk = tokens[start : start + config.n_batch]
            array = (lc.llama_token * len(chunk))(*chunk)
            if lc.llama_decode(ctx, lc.llama_batch_get_one(array, len(chunk))) != 0:
                raise SystemExit("llama_decode failed")
        lc.llama_synchronize(ctx)

    import random

    rng = random.Random(0)
    tokens = [rng.randrange(n_vocab) for _ in range(max(pp, depth))]
    decode(tokens[:16])  # warm-up: page the weights in
    lc.llama_memory_clear(memory, True)

    def timed(run) -> float:
        started = time.perf_counter()
        run()
        return time.perf_counter() - started

    pp_rates, tg_rates, deep_rates = [], [], []
    for _ in range(repeat):
        lc.llama_memory_clear(memory, True)
        pp_rates.append(pp / timed(lambda: decode(tokens[:pp])))
        lc.llama_memory_clear(memory, True)
        tg_rates.append(tg / timed(lambda: [decode([rng.randrange(n_vocab)]) for _ in range(tg)]))
        if depth:
            lc.llama_memory_clear(memory, True)
            decode(tokens[:depth])
            deep_rates.append(tg / timed(lambda: [decode([rng.randrange(n_vocab)]) for _ in range(tg)]))
    lc.llama_free(ctx)
    lc.llama_model_free(model)
    return {"pp": pp_rates, "tg": tg_rates, "tg_deep": deep_rates}


def product_speed(path: Path, config: Config, *, repeat: int) -> dict:
    """Prompt and generation tokens/s of LlamaCppBackend.complete on the agent's first-step prompt."""
    from offline_agent.agents import ReActAgent, RunConfig
    from offline_agent.backends.llamacpp import LlamaCppBackend
    from offline_agent.grammar import build_grammar
    from offline_agent.runner import open_index
    from offline_agent.tools import DEFAULT_TOOLS, build_tools

    backend = LlamaCppBackend(
        path,
        context_size=4096,
        threads=config.threads,
        gpu_layers=config.gpu_layers,
        n_batch=config.n_batch,
        n_ubatch=config.n_ubatch,
        flash_attn=config.flash_attn,
        kv_type=config.kv_type,
        use_mlock=config.load == "mlock",
        use_mmap=config.load != "read",
    )
    index, _ = open_index(None)
    agent = ReActAgent(backend, build_tools(index, DEFAULT_TOOLS), RunConfig())
    grammar = build_grammar(agent.spec).gbnf
    rates: dict[str, list[float]] = {"prompt": [], "free": [], "grammar": []}
    for attempt in range(repeat):
        # A different question each time, so no prompt is served from the cache.
        prompt = agent.prompt_prefix(agent.prompt_parts(f"Question number {attempt}: who founded the Vessel Choir?"))
        backend.llm.reset()
        free = backend.complete(prompt, max_tokens=48, stop=(), temperature=0.0)
        rates["prompt"].append(free.usage.evaluated_tokens / max(free.timings.prompt_s, 1e-9))
        rates["free"].append(free.usage.generated_tokens / max(free.timings.generate_s, 1e-9))
        constrained = backend.complete(prompt + "\n", grammar=grammar, max_tokens=48, stop=("\nObservation:",))
        rates["grammar"].append(constrained.usage.generated_tokens / max(constrained.timings.generate_s, 1e-9))
    return rates


def _fmt(values: list[float]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.1f}"
    return f"{statistics.mean(values):.1f} ± {statistics.stdev(values):.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="registry name or .gguf path [default model]")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated: " + ", ".join(CONFIGS))
    parser.add_argument("--threads", type=int, default=None, help="override the thread count of every config")
    parser.add_argument("--gpu-layers", type=int, default=0, help="GPU layers in every config (-1: all)")
    parser.add_argument("--pp", type=int, default=512)
    parser.add_argument("--tg", type=int, default=64)
    parser.add_argument("--depth", type=int, default=2048, help="tokens in the cache for the tg@depth row (0: skip)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-product", action="store_true", help="only the raw llama.cpp figures")
    parser.add_argument("--label", default="", help="a name for this build (printed in every row)")
    args = parser.parse_args()

    from offline_agent.models import resolve_model

    path = resolve_model(args.model).path
    lc = _llama()
    print(f"# {path.name}; llama-cpp-python {lc.__version__}; {lc.llama_print_system_info().decode().strip()}")
    header = (
        "| build | config | pp{pp} t/s | tg{tg} t/s | tg{tg}@{d} t/s | product prompt t/s | product free t/s "
        "| product grammar t/s |"
    )
    print(header.format(pp=args.pp, tg=args.tg, d=args.depth))
    print("|---|---|---|---|---|---|---|---|")
    for name in args.configs.split(","):
        config = CONFIGS[name]
        if args.threads:
            config = replace(config, threads=args.threads)
        config = replace(config, gpu_layers=args.gpu_layers)
        raw = raw_speed(path, config, pp=args.pp, tg=args.tg, depth=args.depth, repeat=args.repeat, n_ctx=4096)
        product = {} if args.no_product else product_speed(path, config, repeat=args.repeat)
        print(
            f"| {args.label} | {name} | {_fmt(raw['pp'])} | {_fmt(raw['tg'])} | {_fmt(raw['tg_deep'])} | "
            f"{_fmt(product.get('prompt', []))} | {_fmt(product.get('free', []))} | "
            f"{_fmt(product.get('grammar', []))} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
