"""The on-disk format: round trips, one-line errors naming the file, atomic writes, readers during updates."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from offline_agent.errors import RetrievalError
from offline_agent.retrieval import BM25Index, storage

DOCS = [f"passage {i} about topic{i % 7} and shared words" for i in range(300)] + ["the tower of paris"]


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    path = tmp_path / "idx"
    BM25Index.build(DOCS).save(path)
    return path


def _generation(path: Path) -> Path:
    return path / json.loads((path / "manifest.json").read_text())["generation"]


@pytest.mark.parametrize("mmap", [True, False])
def test_round_trip_gives_identical_results(saved: Path, mmap: bool) -> None:
    original = BM25Index.build(DOCS)
    loaded = BM25Index.load(saved, mmap=mmap)
    assert len(loaded) == len(original)
    for query in ("topic3 words", "tower paris", "passage 17", "nothing"):
        a, b = original.search(query, k=20), loaded.search(query, k=20)
        assert a.ids.tolist() == b.ids.tolist() and a.scores.tolist() == b.scores.tolist()
        assert a.passages == b.passages
    assert loaded.analyzer == original.analyzer


def test_folder_holds_only_npy_and_json(saved: Path) -> None:
    names = {p.suffix for p in _generation(saved).iterdir()}
    assert names == {".npy", ".json"}
    for npy in _generation(saved).glob("*.npy"):
        np.load(npy, allow_pickle=False)  # never pickled


def test_updates_survive_save_and_load(saved: Path) -> None:
    index = BM25Index.load(saved)
    index.add(["a brand new passage about zebras"])
    index.delete([0, 1])
    index.save(saved)
    again = BM25Index.load(saved)
    assert len(again) == len(DOCS) - 1
    assert again.search("zebras").ids.tolist() == [len(DOCS)]
    # The previous generation is kept for readers that read the old manifest; older ones are removed.
    generations = sorted(p.name for p in saved.iterdir() if p.name.startswith("g"))
    assert generations == ["g000001", "g000002"] == [*generations[:1], _generation(saved).name]


def test_missing_index(tmp_path: Path) -> None:
    with pytest.raises(RetrievalError, match="index not found"):
        BM25Index.load(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RetrievalError, match=r"not an index \(no manifest.json\)"):
        BM25Index.load(tmp_path / "empty")


def test_truncated_file_is_named(saved: Path) -> None:
    target = _generation(saved) / "post_docs.npy"
    data = target.read_bytes()
    target.write_bytes(data[: len(data) // 2])
    with pytest.raises(RetrievalError, match=r"truncated or altered index file .*post_docs\.npy") as err:
        BM25Index.load(saved)
    assert "\n" not in str(err.value)


def test_corrupt_header_is_named(saved: Path) -> None:
    target = _generation(saved) / "dl.npy"
    data = bytearray(target.read_bytes())
    data[:6] = b"NOTNPY"
    target.write_bytes(bytes(data))
    with pytest.raises(RetrievalError, match=r"corrupt index file .*dl\.npy"):
        BM25Index.load(saved)


def test_flipped_bytes_are_caught_by_verify(saved: Path) -> None:
    target = _generation(saved) / "post_weights.npy"
    data = bytearray(target.read_bytes())
    data[-3] ^= 0xFF
    target.write_bytes(bytes(data))
    BM25Index.load(saved, verify=False)  # sizes agree and the value is plausible: only the checksum can tell
    with pytest.raises(RetrievalError, match=r"corrupt index file .*post_weights\.npy: checksum mismatch"):
        BM25Index.load(saved, verify=True)
    with pytest.raises(RetrievalError, match=r"post_weights\.npy: checksum mismatch"):
        BM25Index.load(saved)  # a small index is verified on every load


def test_corrupt_json_is_named(saved: Path) -> None:
    (saved / "manifest.json").write_text("{not json")
    with pytest.raises(RetrievalError, match=r"corrupt index file .*manifest\.json"):
        BM25Index.load(saved)


def test_newer_format_version_is_refused(saved: Path) -> None:
    manifest = json.loads((saved / "manifest.json").read_text())
    manifest["version"] = storage.FORMAT_VERSION + 1
    (saved / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(RetrievalError, match=r"manifest\.json has format version 2, newer than"):
        BM25Index.load(saved)


def test_missing_file_is_named(saved: Path) -> None:
    (_generation(saved) / "idf.npy").unlink()
    with pytest.raises(RetrievalError, match=r"index file missing: .*idf\.npy"):
        BM25Index.load(saved)


def test_refuses_to_overwrite_a_folder_that_is_not_an_index(tmp_path: Path) -> None:
    (tmp_path / "stuff").mkdir()
    (tmp_path / "stuff" / "keep.txt").write_text("mine")
    with pytest.raises(RetrievalError, match="not an index"):
        BM25Index.build(["x"]).save(tmp_path / "stuff")
    assert (tmp_path / "stuff" / "keep.txt").read_text() == "mine"


def _failing_save(monkeypatch: pytest.MonkeyPatch, after: int) -> None:
    real_save = np.save
    calls = {"n": 0}

    def save(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] > after:
            raise OSError("disk full (simulated)")
        return real_save(*args, **kwargs)

    monkeypatch.setattr(np, "save", save)


@pytest.mark.parametrize("after", [0, 5, 19])
def test_a_failed_update_leaves_the_previous_index(saved: Path, monkeypatch, after: int) -> None:
    before = BM25Index.load(saved).search("tower", k=5)
    index = BM25Index.load(saved)
    index.add(["tower tower tower"])
    generations = sorted(p.name for p in saved.iterdir() if p.name != ".lock")
    _failing_save(monkeypatch, after)
    with pytest.raises(RetrievalError, match=r"cannot save index .*simulated.*; the previous index is kept") as err:
        index.save(saved)
    assert "\n" not in str(err.value)
    monkeypatch.undo()
    after_fail = BM25Index.load(saved, verify=True).search("tower", k=5)
    assert after_fail.ids.tolist() == before.ids.tolist()
    assert sorted(p.name for p in saved.iterdir() if p.name != ".lock") == generations  # no partial generation


def test_a_failed_manifest_switch_leaves_the_previous_index(saved: Path, monkeypatch) -> None:
    import os

    index = BM25Index.load(saved)
    index.add(["tower tower tower"])
    real_replace = os.replace

    def replace(src, dst):
        if str(dst).endswith("manifest.json"):
            raise OSError("power cut (simulated)")
        return real_replace(src, dst)

    generations = sorted(p.name for p in saved.iterdir() if p.name != ".lock")
    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(RetrievalError, match="simulated"):
        index.save(saved)
    monkeypatch.undo()
    assert len(BM25Index.load(saved, verify=True)) == len(DOCS)
    assert sorted(p.name for p in saved.iterdir() if p.name != ".lock") == generations


def test_a_failed_first_build_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _failing_save(monkeypatch, 3)
    with pytest.raises(RetrievalError, match="simulated.*; nothing was written"):
        BM25Index.build(DOCS).save(tmp_path / "new")
    assert list(tmp_path.iterdir()) == []


def test_a_killed_writer_leaves_a_loadable_index(saved: Path) -> None:
    """Kill a process in the middle of saving an update: the previous index still loads and verifies."""
    script = (
        "import os, numpy as np, sys\n"
        "from offline_agent.retrieval import BM25Index\n"
        "index = BM25Index.load(sys.argv[1]); index.add(['killed midway'])\n"
        "real = np.save\n"
        "calls = [0]\n"
        "def save(*a, **k):\n"
        "    calls[0] += 1\n"
        "    if calls[0] == 8: os._exit(9)\n"
        "    return real(*a, **k)\n"
        "np.save = save\n"
        "index.save(sys.argv[1])\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, str(saved)], capture_output=True, text=True)
    assert proc.returncode == 9, proc.stderr
    index = BM25Index.load(saved, verify=True)
    assert len(index) == len(DOCS)
    assert index.search("killed midway").passages == []
    index.add(["after the crash"])  # and the next writer cleans up and succeeds
    index.save(saved)
    assert BM25Index.load(saved, verify=True).search("crash").ids.tolist() == [len(DOCS)]


def test_readers_search_while_a_writer_updates(saved: Path) -> None:
    """Two reader threads reopen and search in a loop while the main thread saves ten updates."""
    errors: list[BaseException] = []
    stop = threading.Event()
    seen_sizes: set[int] = set()

    def reader() -> None:
        while not stop.is_set():
            try:
                index = BM25Index.load(saved)
                result = index.search("topic3 words", k=5)
                assert len(result.ids) == 5
                seen_sizes.add(len(index))
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
                return

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for i in range(10):
            writer = BM25Index.load(saved)
            writer.add([f"update number {i} topic3"])
            writer.save(saved)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors[0]
    assert len(BM25Index.load(saved)) == len(DOCS) + 10


def test_two_processes_search_while_a_third_updates(saved: Path) -> None:
    reader = (
        "import sys, time\n"
        "from offline_agent.retrieval import BM25Index\n"
        "end, n = time.time() + 3.0, 0\n"
        "while time.time() < end:\n"
        "    index = BM25Index.load(sys.argv[1])\n"
        "    assert len(index.search('topic3 words', k=5).ids) == 5\n"
        "    n += 1\n"
        "print(n)\n"
    )
    readers = [
        subprocess.Popen(
            [sys.executable, "-c", reader, str(saved)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    updates = 0
    while any(r.poll() is None for r in readers) and updates < 200:
        writer = BM25Index.load(saved)
        writer.add([f"update {updates} topic3"])
        writer.save(saved)
        updates += 1
    for r in readers:
        out, err = r.communicate(timeout=60)
        assert r.returncode == 0, err
        assert int(out) > 0
    assert updates > 0 and len(BM25Index.load(saved, verify=True)) == len(DOCS) + updates
