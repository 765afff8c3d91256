"""The saved prefix cache (backends/prefix_cache.py) with the real test model: it is written once, loaded by a
fresh backend, gives the same text as evaluating the prompt, and a damaged file is dropped, never trusted."""

from __future__ import annotations

from pathlib import Path

import pytest

from offline_agent.backends import prefix_cache

pytestmark = pytest.mark.model

PREFIX = "<|im_start|>system\n" + " ".join(f"Rule {n}: answer briefly and check every fact." for n in range(30))
PROMPT = PREFIX + "<|im_end|>\n<|im_start|>user\nName a river.<|im_end|>\n<|im_start|>assistant\n"


def _backend(path: Path):
    from offline_agent.backends.llamacpp import LlamaCppBackend

    return LlamaCppBackend(path, context_size=2048, seed=0, model_name="smollm2-135m-instruct")


def test_a_fresh_backend_loads_the_saved_prefix_and_writes_the_same_text(small_model_path, isolated_home) -> None:
    reference = _backend(small_model_path).complete(PROMPT, max_tokens=24)

    first = _backend(small_model_path)
    first.warm(PREFIX)
    saved = list(prefix_cache.cache_folder().glob("*.kv"))
    assert len(saved) == 1

    second = _backend(small_model_path)
    second.warm(PREFIX)  # loaded from the file, not evaluated
    completion = second.complete(PROMPT, max_tokens=24)
    assert completion.usage.cached_tokens >= len(second.tokenize(PREFIX, prompt=True)) - 1
    assert completion.text == reference.text


def test_a_damaged_saved_prefix_is_removed_and_evaluated_again(small_model_path, isolated_home) -> None:
    backend = _backend(small_model_path)
    backend.warm(PREFIX)
    (saved,) = prefix_cache.cache_folder().glob("*.kv")
    saved.write_bytes(b"not a cache")
    fresh = _backend(small_model_path)
    fresh.warm(PREFIX)
    assert saved.read_bytes().startswith(b"OAKV1\n")  # rewritten whole
    assert fresh.complete(PROMPT, max_tokens=8).usage.cached_tokens > 0


def test_a_short_prefix_is_not_saved(small_backend, isolated_home) -> None:
    small_backend.warm("<|im_start|>system\nBe brief.")
    assert not prefix_cache.cache_folder().exists() or not list(prefix_cache.cache_folder().glob("*.kv"))


def test_warm_cuts_the_cache_back_to_the_prefix_so_a_question_does_not_depend_on_the_one_before(
    small_model_path, isolated_home
) -> None:
    """Two questions that start alike ("Name a ...") share cached tokens past the prefix; after warm the second
    starts from the prefix, as it would in a process of its own (where its batches start changes llama.cpp's
    logits)."""
    alone = _backend(small_model_path)
    alone.warm(PREFIX)
    second = PROMPT.replace("Name a river.", "Name a mountain.")
    expected = alone.complete(second, max_tokens=24)

    after = _backend(small_model_path)
    after.warm(PREFIX)
    after.complete(PROMPT, max_tokens=24)
    after.warm(PREFIX)
    assert after.llm.n_tokens == len(after.tokenize(PREFIX, prompt=True))
    completion = after.complete(second, max_tokens=24)
    assert completion.usage.cached_tokens == expected.usage.cached_tokens
    assert completion.text == expected.text
