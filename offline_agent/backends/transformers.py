"""The transformers backend: a local Hugging Face model folder, or a GGUF file that transformers dequantizes.

Why it exists: researchers evaluate models that have no GGUF, and a GPU box runs PyTorch. It keeps the agent's
guarantees the llama.cpp backend gives:
- the grammar goes through the same check-then-mask sampler (`guided.next_token`, `TokenSampler`) with an
  llguidance tokenizer built from the model's Hugging Face tokenizer, and jump-forward over forced tokens, so the
  sampling math is shared, not rewritten;
- the key/value cache is kept across calls: the agent's prompt only grows, so a call crops the cache to the
  common token prefix with the last prompt and evaluates only the new tokens (Usage.cached_tokens says how many
  were reused);
- stop strings, max_tokens, the deadline (finish reason "interrupted") and on_token streaming go through the same
  `CompletionStream`; a prompt that cannot fit raises ContextOverflowError.

Nothing is fetched from a hub: HF_HUB_OFFLINE and TRANSFORMERS_OFFLINE are set before transformers is imported,
and every `from_pretrained` call has local_files_only=True. torch and transformers are imported here only, with
an install hint. A GGUF is dequantized to float32 on CPU (about 4x its file size in memory; measured 4-6x slower
than llama.cpp on the same CPU). `--device cuda` loads float16/bfloat16 weights on the GPU (run once, on a lent
H100 with transformers 5.17 and the test model: 12 sample questions, 0 format errors, 8.8 s a question; the CI
machines have no GPU).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from offline_agent.backends.base import BackendCapabilities, DecoderGrammar, TokenCallback
from offline_agent.backends.guided import GrammarCache, SamplingSettings, TokenSampler, consume_with_forced, next_token
from offline_agent.backends.registry import BackendOptions, chat_format_template, env_int
from offline_agent.backends.stream import CompletionStream, common_prefix
from offline_agent.errors import ConfigError, ContextOverflowError, ModelError
from offline_agent.prompts import prompt_fragments
from offline_agent.steps import Completion

DEVICES = ("cpu", "cuda")
_INSTALL = "pip install torch==2.13.0 (the CPU build), then pip install 'offline-agent[transformers]'"
# The same sampling defaults as the llama.cpp backend, so a seed means the same thing on both.
_TOP_K = 40
_TOP_P = 0.95
_MIN_P = 0.05


def _import_torch_transformers() -> tuple[Any, Any]:
    # Set before the first import: huggingface_hub reads them once. No hub access, whatever the user's settings.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise ModelError(f"the transformers backend needs torch and transformers ({exc}): {_INSTALL}") from exc
    return torch, transformers


class TransformersBackend:
    """A causal language model in transformers (PyTorch), one completion at a time, its cache kept across calls."""

    name = "transformers"

    def __init__(
        self,
        model_path: str | Path,
        *,
        gguf_file: str | None = None,
        context_size: int | None = None,
        device: str = "cpu",
        threads: int | None = None,
        model_name: str | None = None,
        sha256: str | None = None,
        chat_template: str | None = "template",
        jump_forward: bool = True,
        verbose: bool = False,
    ) -> None:
        """Load the model in folder `model_path` (with `gguf_file`, the GGUF file inside it)."""
        if device not in DEVICES:
            raise ConfigError(f"unknown device {device!r}; choose from {list(DEVICES)}")
        torch, transformers = _import_torch_transformers()
        self._torch = torch
        folder = Path(model_path)
        if not folder.is_dir():
            raise ModelError(f"model folder not found: {folder}")
        if gguf_file is None and not (folder / "config.json").is_file():
            raise ModelError(f"not a transformers model folder (no config.json): {folder}")
        if device == "cuda" and not torch.cuda.is_available():
            raise ConfigError(
                "--device cuda: torch sees no CUDA device (no GPU, or torch is the CPU build; install a CUDA build "
                "of torch, see docs/gpu.md)"
            )
        if not verbose:
            transformers.logging.set_verbosity_error()
            transformers.utils.logging.disable_progress_bar()
        self.threads = threads or os.cpu_count() or 1
        if device == "cpu":
            torch.set_num_threads(self.threads)
        dtype = torch.float32
        if device == "cuda":
            dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        where = folder / gguf_file if gguf_file else folder
        common: dict[str, Any] = {"local_files_only": True}
        if gguf_file:
            common["gguf_file"] = gguf_file
        started = time.perf_counter()
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder), **common)
            model = transformers.AutoModelForCausalLM.from_pretrained(str(folder), dtype=dtype, **common)
        except (OSError, ValueError, RuntimeError, KeyError, ImportError) as exc:
            raise ModelError(f"transformers cannot load {where}: {exc}") from exc
        self.model = model.to(device).eval()
        self.load_s = time.perf_counter() - started
        self.device = device
        self.dtype = str(dtype).removeprefix("torch.")
        self.path = where
        self.model_name = model_name or (Path(gguf_file).stem if gguf_file else folder.name)
        self.sha256 = sha256
        self.jump_forward = jump_forward
        config = self.model.config
        trained = getattr(config, "max_position_embeddings", None) or 4096
        self.context_size = context_size or min(4096, trained)
        self.chat_template = self.tokenizer.chat_template if chat_template == "template" else chat_template
        self.bos_token = self.tokenizer.bos_token or None
        self.eos_token = self.tokenizer.eos_token or None
        self._end_ids = self._end_of_generation_ids()
        # The logits row can be wider than the tokenizer's vocabulary (padding rows); the grammar mask must be too.
        self.n_vocab = int(self.model.get_output_embeddings().weight.shape[0])
        self._guide: GrammarCache | None = None
        self._past: Any = None  # the key/value cache
        self._cached_ids: list[int] = []  # the tokens it holds
        self._logits: np.ndarray | None = None

    @classmethod
    def from_options(cls, options: BackendOptions) -> TransformersBackend:
        """A model folder (a directory with config.json) or a GGUF by registry name or path (None: the default).

        Threads: `options.threads`, else OFFLINE_AGENT_THREADS, else every core. Context size: `options`, else
        the registry's n_ctx, else 4096 (never more than the model was trained for).
        """
        threads = options.threads or env_int("OFFLINE_AGENT_THREADS", 0) or None
        common = {
            "device": options.device or "cpu",
            "threads": threads,
            "jump_forward": options.jump_forward if options.jump_forward is not None else True,
            "verbose": bool(options.verbose),
        }
        if options.model and Path(options.model).expanduser().is_dir():
            folder = Path(options.model).expanduser().resolve()
            return cls(folder, context_size=options.context_size, **common)
        from offline_agent.models import resolve_model

        resolved = resolve_model(options.model)
        spec = resolved.spec
        return cls(
            resolved.path.parent,
            gguf_file=resolved.path.name,
            context_size=options.context_size or (spec.n_ctx if spec else None),
            model_name=resolved.name,
            sha256=resolved.sha256,
            chat_template=chat_format_template(spec.chat_format if spec else None, resolved.name),
            **common,
        )

    def _end_of_generation_ids(self) -> set[int]:
        ids: set[int] = set()
        for value in (self.tokenizer.eos_token_id, getattr(self.model.generation_config, "eos_token_id", None)):
            if isinstance(value, int):
                ids.add(value)
            elif isinstance(value, (list, tuple)):
                ids.update(int(v) for v in value)
        return ids

    @property
    def capabilities(self) -> BackendCapabilities:
        return BackendCapabilities(supports_grammar=True, reuses_prefix_cache=True, reports_rejections=True)

    def tokenize(self, text: str, *, prompt: bool = False) -> list[int]:
        """The tokens of `text`: a special token's text is plain text, but in a prompt where its chat template
        wrote one (prompts.Prompt; anywhere in a plain-string prompt)."""
        if not prompt:
            return self._encode(text, special=False, add=False)
        # A template that writes the BOS text itself must not get a second BOS from the tokenizer.
        add = not (self.bos_token and text.startswith(self.bos_token))
        tokens: list[int] = []
        added = self.tokenizer.get_added_vocab()
        for piece, special in prompt_fragments(text, added.__contains__):
            tokens += self._encode(piece, special=special, add=add and not tokens)
        return tokens

    def _encode(self, text: str, *, special: bool, add: bool) -> list[int]:
        # A fast tokenizer matches its added tokens anywhere unless told to split them like any other text.
        return list(self.tokenizer(text, add_special_tokens=add, split_special_tokens=not special)["input_ids"])

    def warm(self, prefix: str) -> None:
        """Make the key/value cache hold `prefix` (the prompt start every question shares) and nothing after it, so
        each question's evaluation starts where the prefix ends, whatever question came before (the logits depend
        on where a forward pass starts: see LlamaCppBackend.warm)."""
        tokens = self.tokenize(prefix, prompt=True)
        if not tokens or len(tokens) >= self.context_size:
            return
        if common_prefix(self._cached_ids, tokens) < len(tokens):
            self._forget()
            with self._torch.inference_mode():
                self._forward(tokens)
        elif len(self._cached_ids) > len(tokens):
            self._crop(len(tokens))

    def count_tokens(self, text: str) -> int:
        return len(self.tokenize(text))

    def _decode(self, tokens: list[int], final: bool) -> str:
        text = self.tokenizer.decode(tokens, skip_special_tokens=True)
        return text if final else text.rstrip("\ufffd")  # an unfinished UTF-8 sequence shows when it is complete

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
        """Write one turn after `prompt`; stops on an end-of-text token, a complete grammar, a stop string,
        max_tokens or the monotonic `deadline` (finish reason "interrupted")."""
        tokens = self.tokenize(prompt, prompt=True)
        if len(tokens) + max_tokens > self.context_size:
            raise ContextOverflowError(
                f"the prompt ({len(tokens)} tokens) plus {max_tokens} new tokens exceed the context window "
                f"of {self.context_size} tokens"
            )
        matcher = None
        if grammar is not None:
            if self._guide is None:
                self._guide = GrammarCache.from_hf_tokenizer(self.tokenizer, self.n_vocab)
            matcher = self._guide.matcher(grammar)
        stream = CompletionStream(self._decode, max_tokens, stop, on_token, deadline)
        if matcher is not None:
            stream.compile_s = self._guide.last_compile_s
        sampling = SamplingSettings(temperature=temperature, top_k=_TOP_K, top_p=_TOP_P, min_p=_MIN_P)
        sampler = TokenSampler(sampling, seed)
        try:
            with self._torch.inference_mode():
                cached = self._evaluate_prompt(tokens)
                stream.prompt_done()
                self._generate(matcher, sampler, stream)
        except RuntimeError as exc:
            self._forget()
            raise ModelError(f"transformers failed while generating: {exc}") from exc
        except BaseException:
            self._forget()  # interrupted mid-forward (Ctrl-C): the cache may hold more than _cached_ids says
            raise
        return stream.completion(len(tokens), cached)

    def _generate(self, matcher: Any, sampler: TokenSampler, stream: CompletionStream) -> None:
        """The same loop as the llama.cpp backend's guided path: check the sampled token, mask on rejection, jump
        forward over forced tokens, stop when the grammar is complete."""
        while True:
            assert self._logits is not None
            logits = self._logits
            checked = time.perf_counter()
            token, masked = next_token(sampler, logits, matcher, self._guide)
            if masked:
                stream.reject(int(np.argmax(logits)), matcher)
            if token in self._end_ids:
                stream.grammar_time(checked)
                stream.finish("stop")
                return
            new = [token]
            if matcher is not None:
                new = consume_with_forced(matcher, token, self.jump_forward)
                stream.grammar_time(checked, masked=masked, forced=len(new) - 1)
            if not stream.add(new):
                return
            if matcher is not None and matcher.is_stopped():
                stream.finish("stop")
                return
            self._forward(new)

    def _evaluate_prompt(self, tokens: list[int]) -> int:
        """Bring the cache to `tokens`, reusing the common prefix with what it holds (at least the last prompt token
        is evaluated again, so the logits are fresh); returns how many tokens were reused."""
        reuse = min(common_prefix(self._cached_ids, tokens), len(tokens) - 1)
        if reuse <= 0:
            self._forget()
            reuse = 0
        elif reuse < len(self._cached_ids):
            self._crop(reuse)
        self._forward(tokens[reuse:])
        return reuse

    def _crop(self, keep: int) -> None:
        """Keep the first `keep` tokens of the cache (fewer than it holds)."""
        # A negative count removes that many tokens from the end, in transformers 4.x and 5.x alike.
        self._past.crop(keep - len(self._cached_ids))
        del self._cached_ids[keep:]

    def _forward(self, new: list[int]) -> None:
        torch = self._torch
        input_ids = torch.tensor([new], dtype=torch.long, device=self.device)
        out = self.model(input_ids=input_ids, past_key_values=self._past, use_cache=True, logits_to_keep=1)
        self._past = out.past_key_values
        self._cached_ids += new
        self._logits = out.logits[0, -1].float().cpu().numpy()

    def _forget(self) -> None:
        self._past = None
        self._cached_ids = []
        self._logits = None

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.model_name,
            "path": str(self.path),
            "sha256": self.sha256,
            "context_size": self.context_size,
            "device": self.device,
            "dtype": self.dtype,
            "threads": self.threads,
            "backend": self.name,
            "grammar_engine": "llguidance",
            "jump_forward": self.jump_forward,
        }
