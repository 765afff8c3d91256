"""An index over 16 MB (storage.VERIFY_ON_LOAD_MAX_BYTES) with a damaged byte: an error naming the file, never
altered text or scores.

Smaller indexes have every file's sha256 checked on load (test_damaged_index.py). A larger one opens with its
structural checks only, and each group of arrays gets its sha256 check the first time it is used (the passage table
before the first passage is read, the postings before the first search). Here a synthetic index of about 20 MB has
16 bytes overwritten in the middle of one array at a time, and `search` (the CLI, as a user runs it) must fail
with one line naming that file. Before, the text came back altered, or the scores changed, with no error.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from harness import cli, one_line_error, outcome_of

from offline_agent.retrieval import BM25Index, storage

DAMAGED = ["text_blob.npy", "text_offsets.npy", "doc_key_blob.npy", "p_start.npy", "post_weights.npy", "idf.npy"]


@pytest.fixture(scope="module")
def large_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(3)
    words = np.array([f"word{i}" for i in range(4000)])
    texts = (" ".join(words[rng.integers(0, len(words), 260)]) for _ in range(11_000))
    passages = [f"harbour lighthouse {text}" for text in texts]
    target = tmp_path_factory.mktemp("large") / "home" / "indexes" / "large"
    BM25Index.build(passages).save(target)
    assert storage.disk_size(target) > storage.VERIFY_ON_LOAD_MAX_BYTES  # the path this test is about
    return target


def _damage(path: Path) -> None:
    data = bytearray(path.read_bytes())
    header = 10 + int.from_bytes(data[8:10], "little")
    at = header + (len(data) - header) // 2
    for i in range(at, at + 16):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("name", DAMAGED)
def test_a_damaged_large_index_is_an_error_naming_the_file(
    large_index: Path, tmp_path: Path, name: str, ledger
) -> None:
    home = tmp_path / "home"
    copy = home / "indexes" / "large"
    shutil.copytree(large_index, copy)
    _damage(next(copy.glob("g*")) / name)
    result = cli("search", "harbour lighthouse word7", "--index", "large", "-k", "20", "--json", home=home)
    line = one_line_error(result)
    ok = line is not None and name in line
    ledger.record("damaged index (over 16 MB)", "lost" if result.returncode == 0 else outcome_of(result, ok))
    assert ok, (result.returncode, result.stderr[-1500:], result.stdout[:300])


def test_an_undamaged_large_index_searches_and_updates(large_index: Path, tmp_path: Path, ledger) -> None:
    copy = tmp_path / "large"
    shutil.copytree(large_index, copy)
    index = BM25Index.load(copy)
    hits = index.search("harbour word7", k=5)
    ok = len(hits.passages) == 5 and all(p.text.startswith("harbour lighthouse") for p in hits.passages)
    index.update(add=["a new passage about the harbour"], delete=[0])
    index.save(copy)
    ok = ok and len(BM25Index.load(copy, verify=True)) == len(index)
    ledger.record("damaged index (over 16 MB)", "handled" if ok else "failed")
    assert ok
