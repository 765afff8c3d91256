"""`kill -9` at random moments of `offline-agent index --update`: the index is always the old one or the new one.

Two reference states are searched first: the index before the update, and after an uninterrupted update. Then
the update is run again and again from the old state and killed (SIGKILL, its whole process group) after a
random delay spread over its running time; half the runs go through a wrapper that slows every array write
(np.save sleeps 20 ms first), so that many kills land while the new generation is being written. After each
kill the index must load with every checksum verified and return exactly the old or the new search results.
At least 20 kills by default; `--kills N` (or OFFLINE_AGENT_KILLS=N) runs more.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import ROOT, cli_env

from offline_agent.retrieval import BM25Index, build_from_paths

QUERIES = ["harbour lighthouse", "river mill bridge", "changed text here", "brand new file", "granite quarry 17"]

_SLOW_SAVE = r"""
import sys, time
import numpy as np
_save = np.save
def _slow_save(*args, **kwargs):
    time.sleep(0.02)
    return _save(*args, **kwargs)
np.save = _slow_save
from offline_agent.cli import main
sys.argv = ["offline-agent", *sys.argv[1:]]
main()
"""

WORDS = [
    "harbour",
    "lighthouse",
    "river",
    "mill",
    "bridge",
    "granite",
    "quarry",
    "meadow",
    "orchard",
    "chapel",
    "tower",
    "canal",
    "ferry",
    "market",
]


def _write_corpus(folder: Path) -> None:
    rng = random.Random(7)
    folder.mkdir()
    for i in range(80):
        sentences = [" ".join(rng.choice(WORDS) for _ in range(12)) + f" {i}." for _ in range(20)]
        (folder / f"doc{i:03d}.txt").write_text(f"# Place {i}\n\n" + " ".join(sentences), encoding="utf-8")
    rows = [f'{{"id": "r{i}", "title": "Record {i}", "text": "granite quarry {i} near the canal"}}' for i in range(400)]
    (folder / "records.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")


def _change_corpus(folder: Path) -> None:
    (folder / "doc003.txt").write_text("# Place 3\n\nChanged text here: the mill was rebuilt.", encoding="utf-8")
    (folder / "doc010.txt").unlink()
    for i in range(5):
        (folder / f"new{i}.md").write_text(f"# New {i}\n\nA brand new file about the ferry {i}.", encoding="utf-8")


def _results(index_dir: Path) -> list:
    index = BM25Index.load(index_dir, verify=True)
    out = []
    for query in QUERIES:
        hit = index.search(query, k=8)
        out.append((hit.ids.tolist(), hit.scores.tolist(), [(p.doc_id, p.text) for p in hit.passages]))
    return [len(index), out]


def _update_command(corpus: Path, slow: bool) -> list[str]:
    args = ["index", str(corpus), "--name", "kill", "--update"]
    if slow:
        return [sys.executable, "-c", _SLOW_SAVE, *args]
    return [sys.executable, "-m", "offline_agent.cli", *args]


def _start(corpus: Path, home: Path, slow: bool) -> subprocess.Popen[bytes]:
    env = cli_env(home)
    return subprocess.Popen(
        _update_command(corpus, slow),
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: kill -9 reaches any worker it started
    )


def _run_to_end(corpus: Path, home: Path, slow: bool) -> float:
    started = time.monotonic()
    proc = _start(corpus, home, slow)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err.decode()[-2000:]
    return time.monotonic() - started


@pytest.fixture(scope="module")
def states(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("kill")
    corpus = root / "corpus"
    _write_corpus(corpus)
    home = root / "home"
    index_dir = home / "indexes" / "kill"
    build_from_paths([corpus]).index.save(index_dir)
    pristine = root / "old"
    shutil.copytree(index_dir, pristine)
    _change_corpus(corpus)
    durations = {}
    for slow in (False, True):
        shutil.rmtree(index_dir)
        shutil.copytree(pristine, index_dir)
        durations[slow] = _run_to_end(corpus, home, slow)
    return {
        "root": root,
        "corpus": corpus,
        "home": home,
        "index_dir": index_dir,
        "pristine": pristine,
        "old": _results(pristine),
        "new": _results(index_dir),
        "durations": durations,
    }


def test_the_update_changes_the_results(states: dict) -> None:
    assert states["old"] != states["new"]  # otherwise the kill test could not tell the states apart


def test_the_new_state_scores_like_a_fresh_build(states: dict) -> None:
    """The reference "new" state is right: an uninterrupted update scores like a build of the changed files."""
    updated = BM25Index.load(states["index_dir"], verify=True)
    fresh = build_from_paths([states["corpus"]]).index
    for query in QUERIES:
        hits = [updated.search(query, k=10_000), fresh.search(query, k=10_000)]
        found = [{(p.doc_id, p.text, float(s)) for p, s in zip(h.passages, h.scores, strict=True)} for h in hits]
        assert found[0] == found[1], query


def test_kill_9_during_update_leaves_the_old_or_the_new_index(states: dict, kills: int, ledger) -> None:
    rng = random.Random(20240601)
    seen = {"old": 0, "new": 0}
    bad = []
    for number in range(kills):
        slow = number % 2 == 1
        shutil.rmtree(states["index_dir"])
        shutil.copytree(states["pristine"], states["index_dir"])
        # Spread the kills over the whole run (and a little past it), one slot of the run's time each.
        slots = (kills + 1) // 2
        delay = states["durations"][slow] * 1.1 * ((number // 2) + rng.random()) / slots
        proc = _start(states["corpus"], states["home"], slow)
        time.sleep(delay)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
        try:
            state = _results(states["index_dir"])
        except Exception as exc:  # noqa: BLE001 - an index that no longer loads is what this test looks for
            state = f"{type(exc).__name__}: {exc}"
        if state == states["old"]:
            seen["old"] += 1
        elif state == states["new"]:
            seen["new"] += 1
        else:
            bad.append((number, round(delay, 3), slow, str(state)[:300]))
        ledger.record("kill -9 during index --update", "handled" if state in (states["old"], states["new"]) else "lost")
    print(f"kill -9 during index --update: {kills} kills, {seen['old']} left the old index, {seen['new']} the new")
    assert not bad, bad
    # The next writer after a kill cleans up and finishes the update.
    shutil.rmtree(states["index_dir"])
    shutil.copytree(states["pristine"], states["index_dir"])
    proc = _start(states["corpus"], states["home"], True)
    time.sleep(states["durations"][True] * 0.8)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    _run_to_end(states["corpus"], states["home"], False)
    assert _results(states["index_dir"]) == states["new"]
    leftovers = [p.name for p in states["index_dir"].iterdir() if p.name.startswith(".") and p.name != ".lock"]
    assert not leftovers, leftovers
