"""The saved token table (backends/token_table.py): llguidance's tokenizer built from it reads every token of the real
test model as llguidance's own builder does, a later process reads the file instead of llama.cpp, and a damaged or
unwritable file only costs the time it saves."""

from __future__ import annotations

import warnings

import pytest

from offline_agent.backends import token_table
from offline_agent.backends.guided import GrammarCache
from offline_agent.grammar import GrammarSpec, ToolSpec, build_grammar


@pytest.mark.parametrize(
    "tokens",
    [[], [b""], [b"a", b"", b"\xffspecial", b"\x00\xff\xfe", "é".encode()], [bytes([n % 256]) * n for n in range(300)]],
)
def test_a_table_comes_back_from_its_file_as_written(tokens: list[bytes]) -> None:
    assert token_table._unpack(token_table._pack(tokens)) == tokens


@pytest.mark.parametrize(
    "body", [b"", b"\x01\x00", b"\x02\x00\x00\x00\x01\x00\x00\x00", b"\x01\x00\x00\x00\x05\x00\x00\x00ab"]
)
def test_a_body_whose_lengths_do_not_add_up_is_no_table(body: bytes) -> None:
    assert token_table._unpack(body) is None


IDENTITY = ("smollm2-test", "llama.cpp under test")


@pytest.mark.model
def test_the_tokenizer_reads_every_token_as_llguidances_own_builder_does(small_backend, isolated_home) -> None:
    import llguidance.llamacpp

    llm = small_backend.llm
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        reference = llguidance.llamacpp.lltokenizer_from_vocab(llm._model.vocab, n_vocab=llm.n_vocab())
    for identity in (None, IDENTITY, IDENTITY):  # not saved; read from llama.cpp and saved; read from the file
        tokenizer = GrammarCache.from_llama(llm, identity).tokenizer
        assert tokenizer.vocab_size == reference.vocab_size
        assert tokenizer.eos_token == reference.eos_token
        for token in range(llm.n_vocab()):
            assert tokenizer.decode_bytes([token]) == reference.decode_bytes([token]), token
            assert tokenizer.is_special_token(token) == reference.is_special_token(token), token
        text = "Thought: the River Liffey flows through Dublin.\nFinal: Dublin <|im_end|>"
        assert tokenizer.tokenize_str(text) == reference.tokenize_str(text)


@pytest.mark.model
def test_a_later_process_reads_the_saved_table_instead_of_llama_cpp(small_backend, isolated_home, monkeypatch) -> None:
    llm = small_backend.llm
    first = GrammarCache.from_llama(llm, IDENTITY)
    (saved,) = token_table.cache_folder().glob("*.tokens")

    def refuse(*_: object) -> list[bytes]:
        raise AssertionError("the table should have come from its file")

    monkeypatch.setattr(token_table, "read_vocabulary", refuse)
    second = GrammarCache.from_llama(llm, IDENTITY)
    grammar = build_grammar(GrammarSpec(tools=(ToolSpec("search"),))).gbnf
    for cache in (first, second):
        step = llm.tokenize(b"Thought: I need the river.\nAction: search[Dublin]", add_bos=False, special=False)
        assert cache.matcher(grammar).validate_tokens(step) == len(step)
    assert saved.exists()


@pytest.mark.model
def test_a_damaged_table_is_removed_and_read_from_llama_cpp_again(small_backend, isolated_home) -> None:
    import llama_cpp

    llm = small_backend.llm
    expected = token_table.token_table(llama_cpp, llm._model.vocab, None)
    GrammarCache.from_llama(llm, IDENTITY)
    (saved,) = token_table.cache_folder().glob("*.tokens")
    data = bytearray(saved.read_bytes())
    data[-1] ^= 0xFF  # one byte of the last token: the checksum no longer matches
    saved.write_bytes(bytes(data))
    assert token_table.token_table(llama_cpp, llm._model.vocab, IDENTITY) == expected
    assert saved.read_bytes().startswith(b"OATOK1\n")  # written again, whole
    assert token_table.token_table(llama_cpp, llm._model.vocab, IDENTITY) == expected


@pytest.mark.model
def test_a_cache_folder_that_cannot_be_written_only_skips_the_save(small_backend, isolated_home) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "cache").write_text("a file where the cache folder would be")
    cache = GrammarCache.from_llama(small_backend.llm, IDENTITY)
    assert cache.tokenizer.vocab_size == small_backend.llm.n_vocab()
    assert (isolated_home / "cache").is_file()
