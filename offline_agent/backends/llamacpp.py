"""The llama.cpp backend (llama-cpp-python): loads a GGUF file and writes one grammar-constrained turn per call.

Why it drives `Llama.generate` token by token instead of `create_completion`: so that it knows exactly which
prompt tokens were reused from the cache (the agent keeps the prompt a growing prefix across steps), can stop on
EOS, a stop string, max_tokens or a deadline, can stream text to a callback, and can time the prompt and the
generation separately. llama-cpp-python is imported here only, with an install hint if it is missing.
"""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from offline_agent.backends import prefix_cache
from offline_agent.backends.base import BackendCapabilities, DecoderGrammar, TokenCallback, gbnf_of
from offline_agent.backends.guided import (
    GrammarCache,
    LlamaGrammarCache,
    SamplingSettings,
    TokenSampler,
    next_token,
)
from offline_agent.backends.registry import BackendOptions, chat_format_template, env_int
from offline_agent.backends.stream import CompletionStream, common_prefix
from offline_agent.errors import ConfigError, ContextOverflowError, ModelError
from offline_agent.steps import Completion

# "llguidance": check sampled tokens, mask only on rejection, jump forward (fast; the default).
# "llama.cpp": llama-cpp-python's grammar= sampler, which checks the whole vocabulary at every token (reference).
GRAMMAR_ENGINES = ("llguidance", "llama.cpp-check", "llama.cpp")

# Prompt tokens evaluated between two looks at the deadline: a long prompt takes seconds on a CPU, and
# --max-seconds must be able to stop a run during it, not only after it.
PROMPT_CHUNK = 64

# KV cache element types by name (a quantized V cache needs flash attention).
_KV_TYPES = {"f16": "GGML_TYPE_F16", "q8_0": "GGML_TYPE_Q8_0"}

# llama.cpp's own sampling defaults; temperature 0 is greedy and ignores them.
_TOP_K = 40
_TOP_P = 0.95
_MIN_P = 0.05


def _import_llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError as exc:  # pragma: no cover - a core dependency, but a broken build is possible
        raise ModelError(
            "llama-cpp-python is not installed: pip install llama-cpp-python==0.3.36 "
            "(set CMAKE_ARGS for CUDA or Metal, see the README)"
        ) from exc
    return llama_cpp


class LlamaCppBackend:
    """A GGUF model in llama.cpp, one completion at a time."""

    name = "llamacpp"

    def __init__(
        self,
        model_path: str | Path,
        *,
        context_size: int = 4096,
        gpu_layers: int = 0,
        threads: int | None = None,
        seed: int = 0,
        model_name: str | None = None,
        sha256: str | None = None,
        chat_template: str | None = "template",
        grammar_engine: str = "llguidance",
        jump_forward: bool = True,
        verbose: bool = False,
        n_batch: int = 512,
        n_ubatch: int = 512,
        flash_attn: bool = False,
        kv_type: str = "f16",
        use_mmap: bool = True,
        use_mlock: bool = False,
    ) -> None:
        if kv_type not in _KV_TYPES:
            raise ConfigError(f"unknown KV cache type {kv_type!r}; choose from {sorted(_KV_TYPES)}")
        if grammar_engine not in GRAMMAR_ENGINES:
            raise ConfigError(f"unknown grammar engine {grammar_engine!r}; choose from {sorted(GRAMMAR_ENGINES)}")
        llama_cpp = _import_llama_cpp()
        path = Path(model_path)
        if not path.is_file():
            raise ModelError(f"model file not found: {path}")
        self.threads = threads or os.cpu_count() or 1
        try:
            self.llm = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=context_size,
                n_threads=self.threads,
                n_threads_batch=self.threads,
                n_gpu_layers=gpu_layers,
                seed=seed,
                verbose=verbose,
                n_batch=n_batch,
                n_ubatch=n_ubatch,
                flash_attn=flash_attn,
                type_k=getattr(llama_cpp, _KV_TYPES[kv_type]),
                type_v=getattr(llama_cpp, _KV_TYPES[kv_type]),
                use_mmap=use_mmap,
                use_mlock=use_mlock,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelError(f"llama.cpp cannot load {path}: {exc}") from exc
        self._llama_cpp = llama_cpp
        self._cache_settings = (n_batch, n_ubatch, flash_attn, kv_type)
        self.path = path
        self.model_name = model_name or path.stem
        self.sha256 = sha256
        self.gpu_layers = gpu_layers
        self.context_size = self.llm.n_ctx()
        if chat_template == "template":
            self.chat_template = self.llm.metadata.get("tokenizer.chat_template")
        else:
            self.chat_template = chat_template
        self.bos_token = self._token_text(self.llm.token_bos())
        self.eos_token = self._token_text(self.llm.token_eos())
        self._grammars: dict[str, Any] = {}
        self.grammar_engine = grammar_engine
        self.jump_forward = jump_forward
        self._guide: GrammarCache | LlamaGrammarCache | None = None

    def warm(self, prefix: str) -> None:
        """Make llama.cpp's cache hold `prefix` (the part of the prompt every question shares).

        Already there: nothing to do. Else the cache saved by an earlier process for the same model, settings and
        tokens is loaded (backends/prefix_cache.py); failing that the prefix is evaluated and saved for next time.
        """
        tokens = self.tokenize(prefix, prompt=True)
        llm = self.llm
        if len(tokens) < prefix_cache.MIN_TOKENS or len(tokens) >= self.context_size:
            return
        if common_prefix(llm.input_ids[: llm.n_tokens].tolist(), tokens) >= len(tokens):
            return
        path = prefix_cache.cache_folder() / prefix_cache.state_key(self._identity, tokens)
        state = prefix_cache.read_state(path, tokens)
        if state is not None and self._restore(tokens, state):
            return
        llm.reset()
        llm.eval(tokens)
        size = self._llama_cpp.llama_state_seq_get_size(llm._ctx.ctx, 0)
        buffer = (ctypes.c_uint8 * size)()
        written = self._llama_cpp.llama_state_seq_get_data(llm._ctx.ctx, buffer, size, 0)
        if written:
            prefix_cache.write_state(path, tokens, bytes(buffer)[:written])

    def _restore(self, tokens: list[int], state: bytes) -> bool:
        """Load a saved sequence cache for `tokens`; False (and an empty cache) when llama.cpp refuses it."""
        llm = self.llm
        llm.reset()
        self._llama_cpp.llama_memory_clear(self._llama_cpp.llama_get_memory(llm._ctx.ctx), True)
        buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
        if not self._llama_cpp.llama_state_seq_set_data(llm._ctx.ctx, buffer, len(state), 0):
            self._llama_cpp.llama_memory_clear(self._llama_cpp.llama_get_memory(llm._ctx.ctx), True)
            return False
        llm.input_ids[: len(tokens)] = tokens
        llm.n_tokens = len(tokens)
        return True

    @property
    def _identity(self) -> tuple[object, ...]:
        """What a saved cache depends on besides its tokens."""
        stat = self.path.stat()
        model = self.sha256 or f"{self.path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
        return (model, self._llama_cpp.__version__, self.context_size, self.gpu_layers, *self._cache_settings)

    @classmethod
    def from_options(cls, options: BackendOptions) -> LlamaCppBackend:
        """Resolve `options.model` (registry name, .gguf path, or None for the default) and load it.

        Threads: `options.threads`, else OFFLINE_AGENT_THREADS, else every core (llama-cpp-python's default is
        half); the context size: `options.context_size`, else the registry's n_ctx, else 4096.
        """
        from offline_agent.models import resolve_model

        resolved = resolve_model(options.model)
        spec = resolved.spec
        return cls(
            resolved.path,
            context_size=options.context_size or (spec.n_ctx if spec else 4096),
            gpu_layers=options.gpu_layers or 0,
            seed=options.seed or 0,
            model_name=resolved.name,
            sha256=resolved.sha256,
            chat_template=chat_format_template(spec.chat_format if spec else None, resolved.name),
            grammar_engine=options.grammar_engine or "llguidance",
            jump_forward=options.jump_forward if options.jump_forward is not None else True,
            threads=options.threads or env_int("OFFLINE_AGENT_THREADS", 0) or None,
            verbose=bool(options.verbose),
        )

    def _token_text(self, token: int) -> str | None:
        if token < 0:
            return None
        return self.llm.detokenize([token], special=True).decode("utf-8", errors="replace") or None

    @property
    def capabilities(self) -> BackendCapabilities:
        # llama-cpp-python's grammar= sampler (the reference engine) does not say where it overruled the model.
        return BackendCapabilities(
            supports_grammar=True, reuses_prefix_cache=True, reports_rejections=self.grammar_engine != "llama.cpp"
        )

    def tokenize(self, text: str, *, prompt: bool = False) -> list[int]:
        data = text.encode("utf-8")
        if not prompt:
            return self.llm.tokenize(data, add_bos=False, special=False)
        # A template that writes the BOS text itself must not get a second BOS from the tokenizer.
        add_bos = not (self.bos_token and text.startswith(self.bos_token))
        return self.llm.tokenize(data, add_bos=add_bos, special=True)

    def count_tokens(self, text: str) -> int:
        return len(self.tokenize(text))

    def compile_grammar(self, gbnf: str) -> Any:
        """A LlamaGrammar for `gbnf`, compiled once per grammar text and checked before llama.cpp sees it."""
        grammar = self._grammars.get(gbnf)
        if grammar is None:
            from offline_agent.grammar import GbnfChecker

            GbnfChecker(gbnf)  # raises GrammarError: llama.cpp would fail on a bad grammar without a message
            grammar = self._llama_cpp.LlamaGrammar.from_string(gbnf, verbose=False)
            self._grammars[gbnf] = grammar
        return grammar

    def complete(
        self,
        prompt: str,
        *,
        grammar: str | DecoderGrammar | None = None,
        max_tokens: int = 256,
        stop: Sequence[str] = (),
        temperature: float = 0.0,
        seed: int | None = None,
        on_token: TokenCallback | None = None,
        deadline: float | None = None,
    ) -> Completion:
        """Write one turn after `prompt`; stops on EOS, a complete grammar, a stop string, max_tokens or the
        monotonic `deadline` (finish reason "interrupted")."""
        tokens = self.tokenize(prompt, prompt=True)
        if len(tokens) + max_tokens > self.context_size:
            raise ContextOverflowError(
                f"the prompt ({len(tokens)} tokens) plus {max_tokens} new tokens exceed the context window "
                f"of {self.context_size} tokens"
            )
        stream = CompletionStream(self._decode, max_tokens, stop, on_token, deadline)
        sampling = SamplingSettings(temperature=temperature, top_k=_TOP_K, top_p=_TOP_P, min_p=_MIN_P)
        try:
            if grammar is not None and self.grammar_engine == "llama.cpp":
                cached = self._run_llama_grammar(tokens, gbnf_of(grammar), sampling, seed, stream)
            else:
                cached = self._run_guided(tokens, grammar, sampling, seed, stream)
        except (RuntimeError, ValueError) as exc:
            raise ModelError(f"llama.cpp failed while generating: {exc}") from exc
        return stream.completion(len(tokens), cached)

    def _decode(self, tokens: list[int], final: bool) -> str:
        return self.llm.detokenize(tokens).decode("utf-8", errors="replace" if final else "ignore")

    def _reuse_prefix(self, tokens: list[int]) -> int:
        """How many leading prompt tokens are already in llama.cpp's cache (at least one is always re-evaluated,
        so the logits are fresh)."""
        cached = common_prefix(self.llm.input_ids.tolist(), tokens)
        return min(cached, len(tokens) - 1)

    def _run_guided(
        self,
        tokens: list[int],
        grammar: str | DecoderGrammar | None,
        sampling: SamplingSettings,
        seed: int | None,
        stream: CompletionStream,
    ) -> int:
        """The fast path: llguidance checks sampled tokens, masks only on rejection, and jumps forward."""
        llm = self.llm
        matcher = None
        if grammar is not None:
            if self._guide is None:
                check = self.grammar_engine == "llama.cpp-check"
                self._guide = LlamaGrammarCache(llm, self._llama_cpp) if check else GrammarCache.from_llama(llm)
            matcher = self._guide.matcher(grammar)
            stream.compile_s = getattr(self._guide, "last_compile_s", 0.0)
        sampler = TokenSampler(sampling, seed)
        cached = self._reuse_prefix(tokens)
        llm.n_tokens = cached  # eval() drops the cache past this point before decoding the rest
        try:
            evaluated = self._eval_prompt(tokens, cached, stream)
        except RuntimeError:
            # Seen once in a long test session: llama_decode refused the batch (-1) after the cache was cut back.
            # Evaluating the whole prompt into an emptied cache recovers; only a second failure is an error.
            llm.reset()
            cached = 0
            evaluated = self._eval_prompt(tokens, 0, stream)
        if not evaluated:
            return cached
        stream.prompt_done()
        get_logits = self._llama_cpp.llama_get_logits_ith
        n_vocab = llm.n_vocab()
        while True:
            logits = np.ctypeslib.as_array(get_logits(llm._ctx.ctx, -1), shape=(n_vocab,))
            checked = time.perf_counter()
            token, masked = next_token(sampler, logits, matcher, self._guide)
            if masked:
                stream.reject(int(np.argmax(logits)), matcher)
            if self._is_end_of_generation(token):
                stream.grammar_time(checked)
                stream.finish("stop")
                return cached
            new = [token]
            if matcher is not None:
                matcher.consume_token(token)
                if self.jump_forward and not matcher.is_stopped():
                    forced = matcher.compute_ff_tokens()
                    if forced and matcher.consume_tokens(forced):
                        new += forced
                stream.grammar_time(checked, masked=masked, forced=len(new) - 1)
            if not stream.add(new):
                return cached
            if matcher is not None and matcher.is_stopped():
                stream.finish("stop")  # the grammar is complete: no need to ask for the end-of-text token
                return cached
            llm.eval(new)

    def _run_llama_grammar(
        self, tokens: list[int], grammar: str, sampling: SamplingSettings, seed: int | None, stream: CompletionStream
    ) -> int:
        """The reference path: llama.cpp's own grammar sampler (it checks the whole vocabulary at every token)."""
        llm = self.llm
        cached = self._reuse_prefix(tokens)
        llm.n_tokens = cached
        if not self._eval_prompt(tokens[:-1], cached, stream):  # generate() evaluates the last token itself
            return cached
        if seed is not None:
            llm.set_seed(seed)
        generator = llm.generate(
            tokens,
            temp=sampling.temperature,
            top_k=sampling.top_k,
            top_p=sampling.top_p,
            min_p=sampling.min_p,
            repeat_penalty=1.0,
            grammar=self.compile_grammar(grammar),
        )
        for token in generator:
            stream.prompt_done()
            if self._is_end_of_generation(token):
                stream.finish("stop")
                break
            if not stream.add([token]):
                break
        return cached

    def _eval_prompt(self, tokens: list[int], start: int, stream: CompletionStream) -> bool:
        """Evaluate tokens[start:] in chunks of PROMPT_CHUNK, looking at the deadline before each; False (finish
        reason "interrupted") when it passed first. What was evaluated stays in the cache for the next call."""
        for lo in range(start, len(tokens), PROMPT_CHUNK):
            if stream.expired():
                stream.finish("interrupted")
                return False
            self.llm.eval(tokens[lo : lo + PROMPT_CHUNK])
        return True

    def _is_end_of_generation(self, token: int) -> bool:
        vocab = self.llm._model.vocab
        return bool(self._llama_cpp.llama_vocab_is_eog(vocab, token))

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.model_name,
            "path": str(self.path),
            "sha256": self.sha256,
            "context_size": self.context_size,
            "gpu_layers": self.gpu_layers,
            "threads": self.threads,
            "backend": self.name,
            "grammar_engine": self.grammar_engine,
            "jump_forward": self.jump_forward,
        }
