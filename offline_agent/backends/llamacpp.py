"""The llama.cpp backend (llama-cpp-python): loads a GGUF file and writes one grammar-constrained turn per call.

Why it drives `Llama.generate` token by token instead of `create_completion`: so that it knows exactly which
prompt tokens were reused from the cache (the agent keeps the prompt a growing prefix across steps), can stop on
EOS, a stop string, max_tokens or a deadline, can stream text to a callback, and can time the prompt and the
generation separately. llama-cpp-python is imported here only, with an install hint if it is missing.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from offline_agent.backends.base import TokenCallback
from offline_agent.errors import ContextOverflowError, ModelError
from offline_agent.steps import Completion, Timings, Usage

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

    name = "llama.cpp"

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
        verbose: bool = False,
    ) -> None:
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
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelError(f"llama.cpp cannot load {path}: {exc}") from exc
        self._llama_cpp = llama_cpp
        self.path = path
        self.model_name = model_name or path.stem
        self.sha256 = sha256
        self.gpu_layers = gpu_layers
        self.context_size = self.llm.n_ctx()
        if chat_template == "template":
            self.chat_template = self.llm.metadata.get("tokenizer.chat_template")
        else:
            self.chat_template = chat_template
        self._bos_text = self._token_text(self.llm.token_bos())
        self._grammars: dict[str, Any] = {}

    def _token_text(self, token: int) -> str | None:
        if token < 0:
            return None
        return self.llm.detokenize([token], special=True).decode("utf-8", errors="replace") or None

    @property
    def bos_text(self) -> str | None:
        """The BOS token as text, which chat templates may write at the start of a prompt."""
        return self._bos_text

    @property
    def eos_text(self) -> str | None:
        return self._token_text(self.llm.token_eos())

    def tokenize(self, text: str, *, prompt: bool = False) -> list[int]:
        data = text.encode("utf-8")
        if not prompt:
            return self.llm.tokenize(data, add_bos=False, special=False)
        # A template that writes the BOS text itself must not get a second BOS from the tokenizer.
        add_bos = not (self._bos_text and text.startswith(self._bos_text))
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
        grammar: str | None = None,
        max_tokens: int = 256,
        stop: Sequence[str] = (),
        temperature: float = 0.0,
        seed: int | None = None,
        on_token: TokenCallback | None = None,
        deadline: float | None = None,
    ) -> Completion:
        """Write one turn after `prompt`; stops on EOS, a stop string, max_tokens or the monotonic `deadline`."""
        llm = self.llm
        tokens = self.tokenize(prompt, prompt=True)
        if len(tokens) + max_tokens > self.context_size:
            raise ContextOverflowError(
                f"the prompt ({len(tokens)} tokens) plus {max_tokens} new tokens exceed the context window "
                f"of {self.context_size} tokens"
            )
        cached = _common_prefix(llm.input_ids.tolist(), tokens)
        if cached == len(tokens):
            cached -= 1  # llama-cpp-python replays the last prompt token to refresh the logits
        compiled = self.compile_grammar(grammar) if grammar else None
        if seed is not None:
            llm.set_seed(seed)

        out: list[int] = []
        text = ""
        finish = "length"
        cut_by_stop = False
        started = time.perf_counter()
        first_token_at: float | None = None
        try:
            generator = llm.generate(
                tokens,
                temp=temperature,
                top_k=_TOP_K,
                top_p=_TOP_P,
                min_p=_MIN_P,
                repeat_penalty=1.0,
                grammar=compiled,
            )
            for token in generator:
                if first_token_at is None:
                    first_token_at = time.perf_counter()
                if llm.token_eos() == token or self._is_end_of_generation(token):
                    finish = "stop"
                    break
                out.append(token)
                new_text = llm.detokenize(out).decode("utf-8", errors="ignore")
                stop_at = _find_stop(new_text, stop)
                if stop_at is not None:
                    new_text = new_text[:stop_at]
                if on_token is not None and len(new_text) > len(text):
                    on_token(new_text[len(text) :])
                text = new_text
                if stop_at is not None:
                    finish, cut_by_stop = "stop", True
                    break
                if len(out) >= max_tokens:
                    finish = "length"
                    break
                if deadline is not None and time.monotonic() > deadline:
                    finish = "interrupted"
                    break
        except (RuntimeError, ValueError) as exc:
            raise ModelError(f"llama.cpp failed while generating: {exc}") from exc
        ended = time.perf_counter()
        first = first_token_at or ended
        if not cut_by_stop:
            text = llm.detokenize(out).decode("utf-8", errors="replace")
        return Completion(
            text=text,
            finish_reason=finish,
            usage=Usage(prompt_tokens=len(tokens), cached_tokens=max(cached, 0), generated_tokens=len(out)),
            timings=Timings(prompt_s=first - started, generate_s=ended - first, grammar_s=0.0),
        )

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
        }


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _find_stop(text: str, stop: Sequence[str]) -> int | None:
    positions = [text.find(marker) for marker in stop if marker and marker in text]
    return min(positions) if positions else None
