"""The llama.cpp backend (llama-cpp-python): loads a GGUF file and writes one grammar-constrained turn per call.

Why it drives `Llama.generate` token by token instead of `create_completion`: so that it knows exactly which
prompt tokens were reused from the cache (the agent keeps the prompt a growing prefix across steps), can stop on
EOS, a stop string, max_tokens or a deadline, can stream text to a callback, and can time the prompt and the
generation separately. llama-cpp-python is imported here only, with an install hint if it is missing.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from offline_agent.backends import prefix_cache
from offline_agent.backends.base import BackendCapabilities, DecoderGrammar, TokenCallback, gbnf_of
from offline_agent.backends.decoding import GuidedDecoder
from offline_agent.backends.guided import GrammarCache, LlamaGrammarCache, SamplingSettings, TokenSampler
from offline_agent.backends.llama_batch import fill_batch
from offline_agent.backends.registry import BackendOptions, chat_format_template, env_int
from offline_agent.backends.speculative import DEFAULT_DRAFT_TOKENS, PromptLookup
from offline_agent.backends.stream import CompletionStream, common_prefix
from offline_agent.errors import ConfigError, ContextOverflowError, ModelError
from offline_agent.prompts import prompt_fragments
from offline_agent.steps import Completion

# "llguidance": check sampled tokens, mask only on rejection, jump forward (fast; the default).
# "llama.cpp": llama-cpp-python's grammar= sampler, which checks the whole vocabulary at every token (reference).
GRAMMAR_ENGINES = ("llguidance", "llama.cpp-check", "llama.cpp")

# Prompt tokens evaluated between two looks at the deadline: a long prompt takes seconds on a CPU, and
# --max-seconds must be able to stop a run during it, not only after it. It equals llama-cpp-python's default
# n_batch, so the chunks are the batches llm.eval would make anyway: llama.cpp's logits depend on the batch shape
# at long contexts (chunks of 64 flipped near-ties against the reference engine in the contract tests).
PROMPT_CHUNK = 512

# KV cache element types by name (a quantized V cache needs flash attention).
_KV_TYPES = {"f16": "GGML_TYPE_F16", "q8_0": "GGML_TYPE_Q8_0"}

# Speculative decoding: the most draft tokens one evaluation may verify (the option's upper bound).
MAX_DRAFT_TOKENS = 32
# Sequences one batched context may decode at once (the option's upper bound).
MAX_PARALLEL = 64

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
            "(set CMAKE_ARGS for CUDA or Metal, see docs/gpu.md)"
        ) from exc
    return llama_cpp


class LlamaCppBackend:
    """A GGUF model in llama.cpp: one completion at a time, or (`parallel` > 1) one per thread, batched.

    `draft_tokens` > 0 turns on speculative decoding with drafts looked up in the prompt (backends/speculative.py):
    the decoder keeps exactly the tokens plain decoding would choose from the logits it is given (greedy), or
    samples from the same distribution, but llama.cpp computes a batch of tokens with other rounding than one
    token at a time, so near-ties can flip: on the default model 2 of 11 agent runs answered otherwise.
    `parallel` > 1: complete() may be called from up to that many threads at once; their sequences are decoded
    together in one llama.cpp context (backends/batched.py), with the same caveat about batch shapes.
    """

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
        draft_tokens: int = 0,
        parallel: int = 1,
    ) -> None:
        if not 0 <= draft_tokens <= MAX_DRAFT_TOKENS:
            raise ConfigError(f"--draft-tokens must be between 0 and {MAX_DRAFT_TOKENS}, not {draft_tokens}")
        if not 1 <= parallel <= MAX_PARALLEL:
            raise ConfigError(f"--parallel must be between 1 and {MAX_PARALLEL}, not {parallel}")
        if parallel > 1 and grammar_engine == "llama.cpp":
            raise ConfigError(
                "the llama.cpp grammar engine (grammar=) decodes one sequence at a time; --parallel needs "
                "llguidance or llama.cpp-check"
            )
        if kv_type not in _KV_TYPES:
            raise ConfigError(f"unknown KV cache type {kv_type!r}; choose from {sorted(_KV_TYPES)}")
        if grammar_engine not in GRAMMAR_ENGINES:
            raise ConfigError(f"unknown grammar engine {grammar_engine!r}; choose from {sorted(GRAMMAR_ENGINES)}")
        llama_cpp = _import_llama_cpp()
        if gpu_layers != 0 and not llama_cpp.llama_supports_gpu_offload():
            # llama.cpp would load every layer on the CPU without a word: a user who asked for the GPU must know.
            raise ConfigError(
                f"--gpu-layers {gpu_layers}: this llama-cpp-python build cannot use a GPU (it was built for the CPU); "
                "rebuild it for your GPU (docs/gpu.md) or leave --gpu-layers at 0"
            )
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
        self.n_batch = n_batch
        self.n_ubatch = n_ubatch
        self.flash_attn = flash_attn
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
        self.draft_tokens = draft_tokens
        self.parallel = parallel
        self._guide: GrammarCache | LlamaGrammarCache | None = None
        self._special_texts: dict[str, bool] = {}  # text -> whether it is a special token's (see tokenize)
        self._guide_lock = threading.Lock()  # grammars are compiled and copied from several threads when batched
        self._draft_batch: Any = None  # a llama_batch for evaluations that need logits at several positions
        self._batch_start = 0
        self._row_index: int | None = None
        self._batched: Any = None
        if parallel > 1:
            from offline_agent.backends.batched import BatchedScheduler

            self._batched = BatchedScheduler(self, parallel)

    def warm(self, prefix: str) -> None:
        """Make llama.cpp's cache hold `prefix` (the part of the prompt every question shares), and nothing after it.

        Already there: the cache is cut back to it. Else the cache saved by an earlier process for the same model,
        settings and tokens is loaded (backends/prefix_cache.py); failing that the prefix is evaluated and saved for
        next time. Why cut back: the previous question's tokens past the prefix may match the start of this one
        ("Question: Which ..."), and reusing them would start this question's evaluation at a point that depends on
        the question before it; llama.cpp's logits depend on where its batches start, so a question could get
        another answer in a run of its own than in a whole evaluation.
        """
        tokens = self.tokenize(prefix, prompt=True)
        llm = self.llm
        if len(tokens) < prefix_cache.MIN_TOKENS or len(tokens) >= self.context_size:
            return
        if self._batched is not None:
            self._batched.warm(tokens)
            return
        if common_prefix(llm.input_ids[: llm.n_tokens].tolist(), tokens) >= len(tokens):
            llm.n_tokens = len(tokens)  # the next evaluation drops the cache past this point
            return
        state = self.saved_prefix(tokens)
        if state is not None and self._restore(tokens, state):
            return
        llm.reset()
        llm.eval(tokens)
        self.save_prefix(tokens, llm._ctx.ctx, 0)

    @contextlib.contextmanager
    def aside(self) -> Iterator[None]:
        """Calls in this block leave llama.cpp's cache as it was (base.aside): the cache of the prompt so far is
        copied out before them and loaded back after (about 28 KB a token for the default model, tens of
        milliseconds for a 2,000-token prompt, against a minute to evaluate it again on two cores). The batched
        decoder keeps its own sequences, and a cache shorter than MIN_TOKENS is cheaper to evaluate again."""
        llm = self.llm
        if self._batched is not None or llm.n_tokens < prefix_cache.MIN_TOKENS:
            yield
            return
        tokens = llm.input_ids[: llm.n_tokens].tolist()
        ctx = llm._ctx.ctx
        size = self._llama_cpp.llama_state_seq_get_size(ctx, 0)
        buffer = (ctypes.c_uint8 * size)()
        written = self._llama_cpp.llama_state_seq_get_data(ctx, buffer, size, 0)
        try:
            yield
        finally:
            # Refused or not saved: the cache is empty, and the next call evaluates its whole prompt.
            if not written or not self._restore(tokens, memoryview(buffer)[:written]):
                llm.reset()

    def saved_prefix(self, tokens: list[int]) -> bytes | None:
        """The cache of `tokens` saved by an earlier process (backends/prefix_cache.py), or None."""
        return prefix_cache.read_state(self._prefix_path(tokens), tokens)

    def save_prefix(self, tokens: list[int], ctx: Any, seq_id: int) -> None:
        """Save the cache of sequence `seq_id` of context `ctx`, which holds exactly `tokens`, for later processes."""
        size = self._llama_cpp.llama_state_seq_get_size(ctx, seq_id)
        buffer = (ctypes.c_uint8 * size)()
        written = self._llama_cpp.llama_state_seq_get_data(ctx, buffer, size, seq_id)
        if written:
            prefix_cache.write_state(self._prefix_path(tokens), tokens, bytes(buffer)[:written])

    def _prefix_path(self, tokens: list[int]) -> Path:
        return prefix_cache.cache_folder() / prefix_cache.state_key(self._identity, tokens)

    def _restore(self, tokens: list[int], state: bytes | memoryview) -> bool:
        """Load a saved sequence cache for `tokens`; False (and an empty cache) when llama.cpp refuses it."""
        llm = self.llm
        llm.reset()
        self._llama_cpp.llama_memory_clear(self._llama_cpp.llama_get_memory(llm._ctx.ctx), True)
        buffer = (ctypes.c_uint8 * len(state)).from_buffer(state) if isinstance(state, memoryview) else None
        buffer = buffer if buffer is not None else (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
        if not self._llama_cpp.llama_state_seq_set_data(llm._ctx.ctx, buffer, len(state), 0):
            self._llama_cpp.llama_memory_clear(self._llama_cpp.llama_get_memory(llm._ctx.ctx), True)
            return False
        llm.input_ids[: len(tokens)] = tokens
        llm.n_tokens = len(tokens)
        return True

    @property
    def _identity(self) -> tuple[object, ...]:
        """What a saved cache depends on besides its tokens."""
        return (*self._model_identity, self.context_size, self.gpu_layers, *self._cache_settings)

    @property
    def _model_identity(self) -> tuple[object, ...]:
        """The model file (its sha256, else its path, size and time) and the llama.cpp that reads it."""
        stat = self.path.stat()
        model = self.sha256 or f"{self.path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
        return (model, self._llama_cpp.__version__)

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
            draft_tokens=DEFAULT_DRAFT_TOKENS if options.draft_tokens is None else options.draft_tokens,
            parallel=options.parallel or 1,
        )

    def _token_text(self, token: int) -> str | None:
        if token < 0:
            return None
        return self.llm.detokenize([token], special=True).decode("utf-8", errors="replace") or None

    @property
    def capabilities(self) -> BackendCapabilities:
        # llama-cpp-python's grammar= sampler (the reference engine) does not say where it overruled the model.
        return BackendCapabilities(
            supports_grammar=True,
            reuses_prefix_cache=True,
            reports_rejections=self.grammar_engine != "llama.cpp",
            concurrent_requests=self._batched is not None,
        )

    def tokenize(self, text: str, *, prompt: bool = False) -> list[int]:
        if not prompt:
            return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)
        # A template that writes the BOS text itself must not get a second BOS from the tokenizer.
        add_bos = not (self.bos_token and text.startswith(self.bos_token))
        tokens: list[int] = []
        for piece, special in prompt_fragments(text, self._is_special_text):  # only where the template wrote them
            tokens += self.llm.tokenize(piece.encode("utf-8"), add_bos=add_bos and not tokens, special=special)
        return tokens

    def _is_special_text(self, text: str) -> bool:
        """Whether `text` is the text of one of the model's special tokens (control or user-defined), as llama.cpp's
        tokenizer reads them where special tokens are allowed."""
        known = self._special_texts.get(text)
        if known is None:
            ids = self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
            lib = self._llama_cpp
            kinds = lib.LLAMA_TOKEN_ATTR_CONTROL | lib.LLAMA_TOKEN_ATTR_USER_DEFINED | lib.LLAMA_TOKEN_ATTR_UNKNOWN
            known = len(ids) == 1 and bool(lib.llama_vocab_get_attr(self.llm._model.vocab, ids[0]) & kinds)
            self._special_texts[text] = known
        return known

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
            elif self._batched is not None:
                cached = self._batched.run(tokens, self.decoder(tokens, grammar, sampling, seed, stream))
            else:
                cached = self._run_guided(tokens, self.decoder(tokens, grammar, sampling, seed, stream))
        except (RuntimeError, ValueError) as exc:
            raise ModelError(f"llama.cpp failed while generating: {exc}") from exc
        return stream.completion(len(tokens), cached)

    def _decode(self, tokens: list[int], final: bool) -> str:
        return self.llm.detokenize(tokens).decode("utf-8", errors="replace" if final else "ignore")

    def decoder(
        self,
        tokens: list[int],
        grammar: str | DecoderGrammar | None,
        sampling: SamplingSettings,
        seed: int | None,
        stream: CompletionStream,
    ) -> GuidedDecoder:
        """The decoding of one completion after the prompt `tokens` (grammar, sampler, jump-forward, drafts)."""
        matcher = None
        if grammar is not None:
            with self._guide_lock:
                if self._guide is None:
                    check = self.grammar_engine == "llama.cpp-check"
                    self._guide = (
                        LlamaGrammarCache(self.llm, self._llama_cpp)
                        if check
                        else GrammarCache.from_llama(self.llm, self._model_identity)
                    )
                matcher = self._guide.matcher(grammar)
                stream.compile_s = getattr(self._guide, "last_compile_s", 0.0)
        return GuidedDecoder(
            stream,
            TokenSampler(sampling, seed),
            matcher,
            self._guide,
            is_end=self._is_end_of_generation,
            jump_forward=self.jump_forward,
            drafter=PromptLookup(tokens) if self.draft_tokens else None,
            draft_tokens=self.draft_tokens,
        )

    def _reuse_prefix(self, tokens: list[int]) -> int:
        """How many leading prompt tokens are already in llama.cpp's cache (at least one is always re-evaluated,
        so the logits are fresh). Only the first n_tokens of input_ids are in the cache: the ids past them are
        left over from longer evaluations (cut back, or rejected drafts) and may match the prompt by chance."""
        llm = self.llm
        cached = common_prefix(llm.input_ids[: llm.n_tokens].tolist(), tokens)
        return min(cached, len(tokens) - 1)

    def _run_guided(self, tokens: list[int], decoder: GuidedDecoder) -> int:
        """The fast path: llguidance checks sampled tokens, masks only on rejection, and jumps forward; with
        draft_tokens, drafts from the prompt are verified in the same evaluation as the token before them."""
        llm = self.llm
        cached = self._reuse_prefix(tokens)
        llm.n_tokens = cached  # the evaluation drops the cache past this point before decoding the rest
        decoder.start(tokens[cached:])
        batch, committed = decoder.next_batch()
        try:
            evaluated = self._evaluate_first(batch, committed, decoder.stream)
        except RuntimeError:
            # Seen once in a long test session: llama_decode refused the batch (-1) after the cache was cut back.
            # Evaluating the whole prompt into an emptied cache recovers; only a second failure is an error.
            llm.reset()
            cached = 0
            decoder.start(tokens)
            self._evaluate(tokens + decoder.draft, len(tokens))
            evaluated = True
        if not evaluated:
            return cached
        decoder.stream.prompt_done()
        while True:
            self._keep(decoder.take(self._logits_row))
            if decoder.done:
                return cached
            self._evaluate(*decoder.next_batch())

    def _evaluate_first(self, batch: list[int], committed: int, stream: CompletionStream) -> bool:
        """The first evaluation of a completion: the prompt in chunks of PROMPT_CHUNK, looking at the deadline
        before each (False, finish reason "interrupted", when it passed), the chunk holding the last committed token
        (and the draft) through `_evaluate`. The chunks are those `_eval_prompt` makes, so drafting changes nothing
        before the last chunk."""
        start = self.llm.n_tokens
        head = (committed - 1) // PROMPT_CHUNK * PROMPT_CHUNK
        if not self._eval_prompt(batch[:head], 0, stream):
            return False
        if stream.expired():
            stream.finish("interrupted")
            return False
        self._evaluate(batch[head:], committed - head)
        self._batch_start = start  # the decoder counts kept tokens from the start of its whole batch
        return True

    def _evaluate(self, batch: list[int], committed: int) -> None:
        """Evaluate `batch` after the cached tokens, with logits from its last committed token on.

        Without a draft, llama-cpp-python's own eval (logits of the last token). With one, the committed tokens
        but the last go through eval (chunked by n_batch, logits unused), and the last with the draft through one
        llama_batch that asks for logits at every position.
        """
        llm = self.llm
        self._batch_start = llm.n_tokens
        if committed == len(batch):
            llm.eval(batch)
            self._row_index = None
            return
        lib = self._llama_cpp
        if committed > 1:
            llm.eval(batch[: committed - 1])
        lib.llama_memory_seq_rm(lib.llama_get_memory(llm._ctx.ctx), 0, llm.n_tokens, -1)
        tail = batch[committed - 1 :]
        if self._draft_batch is None:
            self._draft_batch = lib.llama_batch_init(self.n_batch, 0, 1)
            weakref.finalize(self, lib.llama_batch_free, self._draft_batch)
        fill_batch(self._draft_batch, [(token, llm.n_tokens + i, 0, True) for i, token in enumerate(tail)])
        code = lib.llama_decode(llm._ctx.ctx, self._draft_batch)
        if code != 0:
            raise RuntimeError(f"llama_decode returned {code}")
        llm.input_ids[llm.n_tokens : llm.n_tokens + len(tail)] = tail
        llm.n_tokens += len(tail)
        self._row_index = 0

    def _logits_row(self, j: int) -> np.ndarray:
        """The logits after the last committed token of the last batch and `j` draft tokens."""
        index = -1 if self._row_index is None else self._row_index + j
        row = self._llama_cpp.llama_get_logits_ith(self.llm._ctx.ctx, index)
        return np.ctypeslib.as_array(row, shape=(self.llm.n_vocab(),))

    def _keep(self, kept: int) -> None:
        """Keep the first `kept` tokens of the last batch in the cache; drop the rest (rejected draft tokens)."""
        llm = self.llm
        end = self._batch_start + kept
        if end < llm.n_tokens:
            lib = self._llama_cpp
            lib.llama_memory_seq_rm(lib.llama_get_memory(llm._ctx.ctx), 0, end, -1)
            llm.n_tokens = end

    def _run_llama_grammar(
        self, tokens: list[int], grammar: str, sampling: SamplingSettings, seed: int | None, stream: CompletionStream
    ) -> int:
        """The reference path: llama.cpp's own grammar sampler (it checks the whole vocabulary at every token)."""
        llm = self.llm
        cached = self._reuse_prefix(tokens)
        llm.n_tokens = cached
        if stream.expired():  # generate() evaluates the prompt itself, in its own batches
            stream.finish("interrupted")
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

    def cancel(self) -> None:
        """End the completions other threads are waiting for (batched decoding) and refuse new ones until
        `resume`: an interrupted `eval --parallel` stops at once. One sequence at a time: nothing to do."""
        if self._batched is not None:
            self._batched.cancel()

    def resume(self) -> None:
        """Take completions again after `cancel`."""
        if self._batched is not None:
            self._batched.resume()

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
            "draft_tokens": self.draft_tokens if self.grammar_engine != "llama.cpp" else 0,
            "parallel": self.parallel,
        }
