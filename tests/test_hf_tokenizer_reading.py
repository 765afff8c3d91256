"""The transformers backend's grammar reads each token as the model's own tokenizer does.

Seen on a GPU machine with transformers 5.17: SmolLM2's GGUF came out of transformers' converter with a decoder
chain of SentencePiece steps (ByteFallback, Fuse, Replace "▁") before ByteLevel. llguidance took the vocabulary
for SentencePiece pieces, read the byte-level space "Ġ" as a letter, and every constrained step came out as
"Thought::" (12 of 12 questions refused). These tests rebuild that tokenizer from the test model's own.
"""

from __future__ import annotations

import string
from pathlib import Path

import pytest

from offline_agent.backends import guided
from offline_agent.backends.guided import GrammarCache
from offline_agent.errors import GrammarError

transformers = pytest.importorskip("transformers")
decoders = pytest.importorskip("tokenizers.decoders")
pytest.importorskip("gguf")


@pytest.fixture(scope="module")
def misleading_tokenizer(small_model_path: Path):
    """The test model's tokenizer with the decoder chain transformers 5.17 gave it."""
    folder, name = str(small_model_path.parent), small_model_path.name
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name)
    tokenizer.backend_tokenizer.decoder = decoders.Sequence(
        [decoders.ByteFallback(), decoders.Fuse(), decoders.Replace("▁", " "), decoders.ByteLevel()]
    )
    return tokenizer


def n_vocab(tokenizer) -> int:
    return len(tokenizer)


def test_the_models_own_tokenizer_still_reads_its_tokens(misleading_tokenizer) -> None:
    ids = misleading_tokenizer(guided.TOKENIZER_PROBE, add_special_tokens=False)["input_ids"]
    assert misleading_tokenizer.decode(ids) == guided.TOKENIZER_PROBE


def test_llguidance_alone_misreads_it(misleading_tokenizer) -> None:
    """The premise: without the check, the grammar engine sees other text than the model writes."""
    import llguidance.hf

    plain = llguidance.hf.from_tokenizer(misleading_tokenizer, n_vocab=n_vocab(misleading_tokenizer))
    assert "Ġ" in (guided._misread(plain, misleading_tokenizer) or "")


def test_the_grammar_cache_reads_it_as_byte_level(misleading_tokenizer) -> None:
    cache = GrammarCache.from_hf_tokenizer(misleading_tokenizer, n_vocab(misleading_tokenizer))
    assert guided._misread(cache.tokenizer, misleading_tokenizer) is None
    space_i = misleading_tokenizer(" I", add_special_tokens=False)["input_ids"]
    assert cache.tokenizer.decode_str(space_i) == " I"


def test_a_tokenizer_it_cannot_read_is_one_clear_error(misleading_tokenizer, monkeypatch) -> None:
    """Where the vocabulary is not byte-level there is nothing to repair: refuse, never decode with a wrong mask."""
    monkeypatch.setattr(guided, "_byte_level", lambda hf_tokenizer, n_vocab: None)
    with pytest.raises(GrammarError, match="reads this model's tokens otherwise") as caught:
        GrammarCache.from_hf_tokenizer(misleading_tokenizer, n_vocab(misleading_tokenizer))
    assert "\n" not in str(caught.value)


def test_a_sentencepiece_tokenizer_is_read_as_it_is() -> None:
    """A SentencePiece vocabulary (Llama, Mistral): "▁" for a space, bytes as <0xNN>, and a decoder that strips the
    space the pre-tokenizer put before the text. llguidance reads it right, up to that first space; no repair, no
    refusal."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    vocab.update({f"<0x{byte:02X}>": 3 + byte for byte in range(256)})
    for piece in ["▁", *string.ascii_letters, *string.digits, *string.punctuation]:
        vocab.setdefault(piece, len(vocab))
    model = models.BPE(vocab=vocab, merges=[], unk_token="<unk>", byte_fallback=True)
    backend = Tokenizer(model)
    backend.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
    backend.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="<unk>", bos_token="<s>", eos_token="</s>"
    )
    ids = tokenizer(guided.TOKENIZER_PROBE, add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids) == guided.TOKENIZER_PROBE and "<0xC3>" in tokenizer.convert_ids_to_tokens(ids)
    cache = GrammarCache.from_hf_tokenizer(tokenizer, len(vocab))
    assert guided._misread(cache.tokenizer, tokenizer) is None
