"""Damaged index data of the right size: bytes overwritten after the .npy header of every file of an index.

Each file of a saved index (the sample corpus, 224 passages) is damaged in turn, with four patterns (0xFF, zeros,
bytes XORed, random bytes) at two places (just after the header, and the middle), then the index is loaded and
searched, and every passage is read back. Two loading modes:

- the default, as for any index up to storage.VERIFY_ON_LOAD_MAX_BYTES (16 MB): every case must end in the
  same results as the undamaged index or in one RetrievalError line naming the damaged file;
- structural checks only (`verify=False`, what a larger index gets on load): no case may crash, and damage to
  offsets (what used to give garbage snippets or no hits) must be an error. Damage that no structural check
  can see (a byte of text, a weight) can change results silently there: the ledger counts those as "lost",
  and `offline-agent index info --verify` is what finds them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from harness import cli, one_line_error

from offline_agent.errors import OfflineAgentError, RetrievalError
from offline_agent.resources import sample_corpus
from offline_agent.retrieval import BM25Index, open_corpus

QUERIES = ["river Dublin", "Middlemarch author born", "tower", "the capital of Poland", "Nobel prize physics", "zzzz"]
PATTERNS = ("ff", "zero", "xor", "random")
PLACES = ("start", "middle")


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    folder = tmp_path_factory.mktemp("damaged") / "sample"
    open_corpus(sample_corpus()).save(folder)
    return folder, _results(BM25Index.load(folder))


def _results(index: BM25Index) -> object:
    searches = [(r.ids.tolist(), r.scores.tolist(), r.passages) for r in (index.search(q, k=5) for q in QUERIES)]
    every = [index.passage(int(i)) for i in index.ids()]
    return searches, every, index.doc_ids()


def _files(folder: Path) -> list[str]:
    generation = next(folder.glob("g*"))
    return sorted(p.name for p in generation.iterdir()) + ["manifest.json"]


def _damage(target: Path, pattern: str, place: str) -> bool:
    """Overwrite 16 bytes after the header (or in the middle); False when the file has no data to damage."""
    data = bytearray(target.read_bytes())
    header = 0
    if target.suffix == ".npy":
        header = 10 + int.from_bytes(data[8:10], "little")  # .npy v1: magic, version, header length, header
    if len(data) <= header:
        return False
    at = header if place == "start" else header + (len(data) - header) // 2
    rng = np.random.default_rng(at)
    for i in range(at, min(at + 16, len(data))):
        data[i] = {"ff": 0xFF, "zero": 0, "xor": data[i] ^ 0x5A, "random": int(rng.integers(256))}[pattern]
    target.write_bytes(bytes(data))
    return True


def _cases(folder: Path) -> list[tuple[str, str, str]]:
    return [(name, pattern, place) for name in _files(folder) for pattern in PATTERNS for place in PLACES]


def _run_case(reference, tmp_path: Path, name: str, pattern: str, place: str, verify: bool | None) -> str | None:
    """The outcome of one case: 'same', 'error', 'different', or None when the file had nothing to damage;
    raises AssertionError for a crash or an error that is not one line naming a file of the index."""
    folder, expected = reference
    work = tmp_path / "work"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(folder, work)
    target = work / name if name == "manifest.json" else next(work.glob("g*")) / name
    if not _damage(target, pattern, place):
        return None
    try:
        got = _results(BM25Index.load(work, verify=verify))
    except RetrievalError as exc:
        message = str(exc)
        assert "\n" not in message, message
        named = name in message if name != "manifest.json" else str(work) in message
        assert named, f"{name}: the error does not name it: {message}"
        return "error"
    except OfflineAgentError as exc:
        raise AssertionError(f"{name} {pattern} {place}: not a RetrievalError: {exc}") from exc
    except Exception as exc:
        raise AssertionError(f"{name} {pattern} {place}: crashed with {type(exc).__name__}: {exc}") from exc
    return "same" if got == expected else "different"


def test_every_file_damaged_is_caught_on_load(reference, tmp_path: Path, ledger) -> None:
    """The default load of a small index: correct results or one line naming the file, for every case."""
    folder, _ = reference
    silent = []
    for name, pattern, place in _cases(folder):
        try:
            outcome = _run_case(reference, tmp_path, name, pattern, place, verify=None)
        except AssertionError:
            ledger.record("damaged index (default load)", "crashed")
            raise
        if outcome is None:
            continue
        ledger.record("damaged index (default load)", "lost" if outcome == "different" else "handled")
        if outcome == "different":
            silent.append((name, pattern, place))
    assert not silent, f"damage that changed results silently: {silent}"


def test_structural_checks_alone_never_crash(reference, tmp_path: Path, ledger) -> None:
    """What a large index gets on every load: no crash, and damaged offsets are an error, never garbage."""
    folder, _ = reference
    missed_offsets = []
    for name, pattern, place in _cases(folder):
        try:
            outcome = _run_case(reference, tmp_path, name, pattern, place, verify=False)
        except AssertionError:
            ledger.record("damaged index (structural checks only)", "crashed")
            raise
        if outcome is None:
            continue
        ledger.record("damaged index (structural checks only)", "lost" if outcome == "different" else "handled")
        if name.endswith("offsets.npy") and pattern == "ff" and outcome != "error":
            missed_offsets.append((name, place, outcome))
    assert not missed_offsets, missed_offsets


def test_search_cli_on_a_damaged_index_is_one_line(reference, tmp_path: Path, ledger) -> None:
    folder, _ = reference
    home = tmp_path / "home"
    for name in ("post_docs.npy", "p_doc.npy", "text_offsets.npy", "vocab_offsets.npy"):
        target_index = home / "indexes" / name.split(".")[0]
        shutil.copytree(folder, target_index)
        _damage(next(target_index.glob("g*")) / name, "ff", "middle")
        result = cli("search", "tower river", "--index", target_index.name, home=home)
        line = one_line_error(result)
        ledger.record("damaged index (default load)", "handled" if line and name in line else "crashed")
        assert line and name in line, result.stderr
    verified = cli("index", "info", "post_docs", "--verify", home=home)
    assert one_line_error(verified) is not None and "post_docs.npy" in verified.stderr
