"""Grammar-constrained decoding at the speed of free text, for the llama.cpp and transformers backends.

llama-cpp-python's `grammar=` puts llama.cpp's grammar sampler in front of sampling, so every token checks the
whole vocabulary against the grammar (measured: generation 2x to 4.6x slower). Here the grammar engine is
llguidance and the vocabulary is checked only when it has to be:
- the model's candidates are checked first (the top token when greedy, the top-k when sampling); only when one of
  them is rejected is the full mask computed and applied. When all top-k candidates are allowed, the masked top-k
  is the same set, so the sampled distribution is exactly the masked one, as with `grammar=`;
- tokens the grammar forces (`Thought: `, a tool name once its prefix is unique, `[`) are appended without a
  sampling step (jump-forward) and evaluated in one batch with the token before them;
- when the grammar is complete the step ends without asking the model for its end-of-text token.
Grammars are compiled once per grammar text and copied per call; one that does not compile is a GrammarError.

Sampling follows llama.cpp's chain for the same settings (top-k, then top-p and min-p on the probabilities, then
temperature), drawn from a numpy generator seeded per call, so a seed reproduces a run.
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from offline_agent.backends.base import DecoderGrammar, gbnf_of
from offline_agent.errors import GrammarError, ModelError

# Compiled grammars a GrammarCache keeps (oldest dropped first): the step grammars of every strategy fit many
# times over, while the grammars of grounded steps, new at every step, do not pile up.
MATCHERS_KEPT = 64


# Text that the grammar engine and the model's own tokenizer must read alike, token for token: the step marks,
# spaces after words and punctuation, a newline, digits and a letter outside ASCII.
TOKENIZER_PROBE = "Thought: I need the year.\nAction: search[Émile Zola 1840]\nFinal: yes"


def _misread(tokenizer: Any, hf_tokenizer: Any) -> str | None:
    """None when llguidance's `tokenizer` decodes the probe's tokens to the text `hf_tokenizer` decodes them to,
    else both readings. transformers 5.17 turned SmolLM2's GGUF (byte-level BPE) into a tokenizer whose decoder
    chain also holds SentencePiece steps; llguidance then took its tokens for SentencePiece pieces, read "Ġ" as a
    letter, and the grammar passed "Thought::" as "Thought: " (seen on a GPU machine, every step refused)."""
    ids = list(hf_tokenizer(TOKENIZER_PROBE, add_special_tokens=False)["input_ids"])
    # A SentencePiece tokenizer adds a space before the text and its decoder strips it again; llguidance reads the
    # first token with that space. Inside a step no token is first, so the two readings agree after it.
    ours = tokenizer.decode_str(ids).removeprefix(" ")
    theirs = hf_tokenizer.decode(ids, clean_up_tokenization_spaces=False).removeprefix(" ")
    return None if ours == theirs else f"{ours[:40]!r} against {theirs[:40]!r}"


def _byte_level(hf_tokenizer: Any, n_vocab: int) -> Any | None:
    """llguidance's tokenizer for a byte-level BPE vocabulary (its pre-tokenizer is ByteLevel) read with the plain
    ByteLevel decoder, whatever other decoders the tokenizer file lists; None for any other kind of vocabulary."""
    import copy
    import json

    import llguidance

    backend = copy.copy(hf_tokenizer.backend_tokenizer)
    backend.no_padding()
    backend.no_truncation()
    spec = json.loads(backend.to_str())
    pre = spec.get("pre_tokenizer") or {}
    kinds = [pre.get("type")] + [p.get("type") for p in pre.get("pretokenizers") or []]
    if "ByteLevel" not in kinds:
        return None
    spec["decoder"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    return llguidance.LLTokenizer(json.dumps(spec), n_vocab=n_vocab, eos_token=hf_tokenizer.eos_token_id)


def _decoder_text(grammar: DecoderGrammar) -> tuple[str, str]:
    """(dialect, text) to hand llguidance: its own Lark form when the grammar has one, else the GBNF."""
    if grammar.llguidance:
        return "lark", grammar.llguidance
    return "gbnf", grammar.gbnf


@dataclass(frozen=True)
class SamplingSettings:
    """What picks the next token: greedy at temperature 0, else llama.cpp's top-k / top-p / min-p / temperature."""

    temperature: float = 0.0
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05


class TokenSampler:
    """Draws tokens from a logits row, optionally restricted to a grammar's mask, reproducibly from a seed."""

    def __init__(self, settings: SamplingSettings, seed: int | None) -> None:
        self.settings = settings
        self.rng = np.random.default_rng(seed)

    def candidates(self, logits: np.ndarray) -> np.ndarray:
        """The tokens the sampler may pick from, best first (the argmax alone when greedy)."""
        if self.settings.temperature <= 0.0:
            return np.array([int(np.argmax(logits))])
        k = min(self.settings.top_k, logits.shape[0]) if self.settings.top_k > 0 else logits.shape[0]
        top = np.argpartition(logits, -k)[-k:]
        top = top[np.isfinite(logits[top])]
        return top[np.argsort(-logits[top], kind="stable")]

    def distribution(self, logits: np.ndarray, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The tokens `pick` may draw from `candidates` (best first) and their probabilities: top-p, min-p and
        temperature applied as llama.cpp does (greedy: the best candidate with probability 1)."""
        if candidates.size == 0:
            raise ModelError("no token is allowed by the grammar here")
        if self.settings.temperature <= 0.0 or candidates.size == 1:
            return candidates[:1], np.ones(1)
        values = logits[candidates].astype(np.float64)
        probs = np.exp(values - values[0])
        probs /= probs.sum()
        keep = candidates.size
        if self.settings.top_p < 1.0:
            keep = min(keep, int(np.searchsorted(np.cumsum(probs), self.settings.top_p) + 1))
        if self.settings.min_p > 0.0:
            keep = min(keep, max(1, int(np.sum(probs >= self.settings.min_p * probs[0]))))
        scaled = values[:keep] / self.settings.temperature
        weights = np.exp(scaled - scaled[0])
        weights /= weights.sum()
        return candidates[:keep], weights

    def pick(self, logits: np.ndarray, candidates: np.ndarray, draft: int | None = None) -> int:
        """Draw one of `candidates` (best first) from `distribution`.

        With a `draft` token proposed by a deterministic drafter (speculative decoding), the draft is accepted
        with its probability p(draft), else a token is drawn from the distribution without the draft,
        renormalised: p(draft) + (1 - p(draft)) * 0 for the draft, (1 - p(draft)) * p(t) / (1 - p(draft)) for any
        other t, so the drawn token follows the same distribution as without a draft. Greedy ignores the draft:
        the best candidate is the answer either way.
        """
        tokens, weights = self.distribution(logits, candidates)
        if tokens.size == 1:
            return int(tokens[0])
        if draft is not None:
            proposed = tokens == draft
            p_draft = float(weights[proposed].sum())
            if p_draft > 0.0:
                if self.rng.random() < p_draft:  # always when it is the only token with any weight
                    return int(draft)
                weights = np.where(proposed, 0.0, weights)
                weights /= weights.sum()
        return int(tokens[self.rng.choice(tokens.size, p=weights)])


class GrammarCache:
    """An llguidance tokenizer for one vocabulary, and compiled grammars by their text.

    Built from a llama.cpp model (`from_llama`) or a Hugging Face fast tokenizer (`from_hf_tokenizer`); `n_vocab`
    is the width of the model's logits row, which may exceed the tokenizer's vocabulary (padding rows).
    """

    def __init__(self, tokenizer: Any, n_vocab: int, tokenizer_s: float = 0.0) -> None:
        llguidance = _import_llguidance()
        self._llg = llguidance
        self.tokenizer = tokenizer
        self.n_vocab = n_vocab
        self.tokenizer_s = tokenizer_s
        self._matchers: dict[str, Any] = {}
        self.compile_s: dict[str, float] = {}
        self.last_compile_s = 0.0
        self._bitmask = llguidance.numpy.allocate_token_bitmask(1, self.n_vocab)

    @classmethod
    def from_llama(cls, llm: Any, identity: Sequence[object] | None = None) -> GrammarCache:
        """The cache for a llama-cpp-python `Llama`'s vocabulary; `identity` names the model file, so its token
        table is read from the one saved by an earlier process (backends/token_table.py), or saved for the next.

        No slices: llguidance precomputes them (0.17 s for the default model) to speed up whole-vocabulary masks,
        and this decoder masks only where the grammar refused the model's first choice (about 9 masks a question,
        4 ms in all with or without them)."""
        _import_llguidance()
        import llama_cpp
        from llguidance import LLTokenizer

        from offline_agent.backends.token_table import token_table

        started = time.perf_counter()
        vocab = llm._model.vocab
        n_vocab = llm.n_vocab()
        tokens = token_table(llama_cpp, vocab, identity)
        tokens += [b""] * (n_vocab - len(tokens))
        # llguidance tokenizes grammar literals through llama.cpp's own function, called from its Rust side.
        tokenize = ctypes.cast(llama_cpp.llama_cpp._lib.llama_tokenize, ctypes.c_void_p).value
        tokenizer = LLTokenizer.from_llamacpp(
            tokens=tokens,
            vocab_ptr=vocab,
            tokenize_fptr=tokenize,
            eos_token=llama_cpp.llama_vocab_eos(vocab),
            slices=[],
        )
        return cls(tokenizer, n_vocab, time.perf_counter() - started)

    @classmethod
    def from_hf_tokenizer(cls, hf_tokenizer: Any, n_vocab: int) -> GrammarCache:
        """The cache for a Hugging Face fast tokenizer (transformers), logits rows `n_vocab` wide."""
        _import_llguidance()
        import llguidance.hf

        started = time.perf_counter()
        try:
            tokenizer = llguidance.hf.from_tokenizer(hf_tokenizer, n_vocab=n_vocab)
            seen = _misread(tokenizer, hf_tokenizer)
            if seen is not None:
                tokenizer = _byte_level(hf_tokenizer, n_vocab) or tokenizer
                seen = _misread(tokenizer, hf_tokenizer)
        except (ValueError, TypeError, AttributeError) as exc:
            raise GrammarError(f"llguidance cannot use this model's tokenizer: {exc}") from exc
        if seen is not None:
            raise GrammarError(
                f"llguidance reads this model's tokens otherwise than its tokenizer does ({seen}); "
                "the grammar would let through text it does not mean"
            )
        return cls(tokenizer, n_vocab, time.perf_counter() - started)

    def matcher(self, grammar: str | DecoderGrammar) -> Any:
        """A fresh matcher at the start of `grammar` (GBNF, or its llguidance Lark form when it has one; compiled
        on first use and copied after; the last MATCHERS_KEPT grammars are kept)."""
        kind, text = ("gbnf", grammar) if isinstance(grammar, str) else _decoder_text(grammar)
        pristine = self._matchers.pop(text, None)
        if pristine is None:
            started = time.perf_counter()
            try:
                compiled = self._llg.grammar_from(kind, text)
            except ValueError as exc:
                raise GrammarError(f"the grammar does not compile: {exc}") from exc
            pristine = self._llg.LLMatcher(self.tokenizer, compiled, log_level=0)
            if pristine.is_error():
                raise GrammarError(f"the grammar does not compile: {pristine.get_error()}")
            self.compile_s[text] = time.perf_counter() - started
            self.last_compile_s = self.compile_s[text]
            while len(self._matchers) >= MATCHERS_KEPT:  # grounded steps make a new grammar each step
                oldest = next(iter(self._matchers))
                del self._matchers[oldest]
                self.compile_s.pop(oldest, None)
        else:
            self.last_compile_s = 0.0
        self._matchers[text] = pristine  # most recently used last
        return pristine.deep_copy()

    def masked(self, matcher: Any, logits: np.ndarray) -> np.ndarray:
        """A copy of `logits` with every token the grammar forbids set to -inf."""
        self._llg.numpy.fill_next_token_bitmask(matcher, self._bitmask)
        bits = np.unpackbits(self._bitmask.view(np.uint8), bitorder="little")[: logits.shape[0]]
        out = logits.astype(np.float32, copy=True)
        out[bits == 0] = -np.inf
        return out


def _import_llguidance() -> Any:
    try:
        import llguidance
        import llguidance.numpy
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise GrammarError("the llguidance grammar engine is not installed: pip install llguidance") from exc
    return llguidance


_TOKEN_DATA = np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])


class LlamaGrammarCheck:
    """llama.cpp's own grammar sampler, asked about the sampled token only (engine "llama.cpp-check").

    The same "check first, mask on rejection" scheme as the llguidance path, with llama.cpp's grammar code as the
    judge: one candidate is checked per token, and the whole vocabulary only when that candidate is refused. llama.cpp
    has no forced-token or "grammar complete" query, so there is no jump-forward and a step ends on the end-of-text
    token the grammar allows once it is complete.
    """

    def __init__(self, llama_cpp: Any, sampler: Any, n_vocab: int) -> None:
        self._l = llama_cpp
        self.sampler = sampler
        self._one = (llama_cpp.llama_token_data * 1)()
        self._one_array = llama_cpp.llama_token_data_array(data=self._one, size=1, selected=-1, sorted=False)
        self._all = (llama_cpp.llama_token_data * n_vocab)()
        self._all_array = llama_cpp.llama_token_data_array(data=self._all, size=n_vocab, selected=-1, sorted=False)
        self._view = np.frombuffer(self._all, dtype=_TOKEN_DATA)
        self._ids = np.arange(n_vocab, dtype=np.int32)

    def __del__(self) -> None:
        if getattr(self, "sampler", None):
            self._l.llama_sampler_free(self.sampler)
            self.sampler = None

    def validate_tokens(self, tokens: list[int]) -> int:
        """1 if the grammar allows `tokens[0]` next, else 0 (llguidance's LLMatcher answers the same way)."""
        self._one[0].id, self._one[0].logit, self._one[0].p = tokens[0], 0.0, 0.0
        self._one_array.size = 1
        self._l.llama_sampler_apply(self.sampler, ctypes.byref(self._one_array))
        return int(np.isfinite(self._one[0].logit))

    def masked(self, logits: np.ndarray) -> np.ndarray:
        """A copy of `logits` with every token the grammar forbids set to -inf (the whole vocabulary checked)."""
        self._view["id"] = self._ids
        self._view["logit"] = logits[: self._ids.shape[0]]
        self._all_array.size = self._ids.shape[0]
        self._l.llama_sampler_apply(self.sampler, ctypes.byref(self._all_array))
        out = np.full(logits.shape, -np.inf, dtype=np.float32)
        out[self._view["id"]] = self._view["logit"]
        return out

    def consume_token(self, token: int) -> bool:
        self._l.llama_sampler_accept(self.sampler, token)
        return True

    def is_stopped(self) -> bool:
        return False

    def compute_ff_tokens(self) -> list[int]:
        return []


class LlamaGrammarCache:
    """llama.cpp grammar samplers compiled once per GBNF text and cloned per completion."""

    def __init__(self, llm: Any, llama_cpp: Any) -> None:
        self._l = llama_cpp
        self._vocab = llm._model.vocab
        self.n_vocab = llm.n_vocab()
        self._pristine: dict[str, Any] = {}
        self.compile_s: dict[str, float] = {}

    def matcher(self, grammar: str | DecoderGrammar) -> LlamaGrammarCheck:
        gbnf = gbnf_of(grammar)
        pristine = self._pristine.get(gbnf)
        if pristine is None:
            from offline_agent.grammar import GbnfChecker

            GbnfChecker(gbnf)  # llama.cpp reports a bad grammar only as a null sampler, with no reason
            started = time.perf_counter()
            pristine = self._l.llama_sampler_init_grammar(self._vocab, gbnf.encode("utf-8"), b"root")
            if not pristine:
                raise GrammarError("llama.cpp could not compile the grammar")
            self._pristine[gbnf] = pristine
            self.compile_s[gbnf] = time.perf_counter() - started
        return LlamaGrammarCheck(self._l, self._l.llama_sampler_clone(pristine), self.n_vocab)

    def masked(self, matcher: LlamaGrammarCheck, logits: np.ndarray) -> np.ndarray:
        return matcher.masked(logits)


def next_token(
    sampler: TokenSampler, logits: np.ndarray, matcher: Any, cache: Any, draft: int | None = None
) -> tuple[int, bool]:
    """Pick the next token under the grammar; returns it and whether the full mask had to be computed.

    `draft`: a token a deterministic drafter proposed here (speculative decoding); when sampling it is accepted
    with its probability under the masked distribution (TokenSampler.pick), so the result is distributed as
    without it. Greedy picks the same token either way.
    """
    candidates = sampler.candidates(logits)
    if matcher is None or all(matcher.validate_tokens([int(t)]) == 1 for t in candidates):
        return sampler.pick(logits, candidates, draft), False
    assert cache is not None
    masked = cache.masked(matcher, logits)
    return sampler.pick(masked, sampler.candidates(masked), draft), True


def allowed_prefix(matcher: Any, tokens: list[int]) -> int:
    """How many of `tokens` the grammar allows in a row from the matcher's state, without consuming them.

    llguidance answers for the whole list; llama.cpp's grammar sampler (engine llama.cpp-check) can only judge the
    next token, so there every token is assumed allowed and the verification of a draft does the checking.
    """
    if matcher is None or isinstance(matcher, LlamaGrammarCheck):
        return len(tokens)
    return int(matcher.validate_tokens(tokens))


def consume_with_forced(matcher: Any, token: int, jump_forward: bool) -> list[int]:
    """Feed `token` to the grammar matcher and, with jump_forward, the tokens the grammar forces after it; returns
    the tokens the text gains (the sampled one first)."""
    matcher.consume_token(token)
    new = [token]
    if jump_forward and not matcher.is_stopped():
        forced = matcher.compute_ff_tokens()
        if forced and matcher.consume_tokens(forced):
            new += forced
    return new
