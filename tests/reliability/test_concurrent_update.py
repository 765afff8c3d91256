"""Two `offline-agent index --update` runs at once lose nothing: the second waits for the first, then starts from it.

Each trial runs two real CLI processes on one index. The first is held between reading the files and saving (a
wrapper pauses it there until the test says go), while the files change under it and the second is started:
the second must wait (it says so on stderr) rather than save an index the first then overwrites. At the end the
index must hold exactly what a fresh build of the final files holds: every file added (300 records), none of
the deleted ones brought back, the changed one in its new form. Three trials, the changes in different orders.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import ROOT, cli_env

from offline_agent.retrieval import BM25Index, build_from_paths

# The first run: update as the CLI does, but pause after reading the files (the marker says it got there) until
# the go file appears. A guard of 120 s keeps a broken test from hanging.
_HELD = r"""
import sys, time
from pathlib import Path
from offline_agent.retrieval import catalog
marker, go = Path(sys.argv[1]), Path(sys.argv[2])
_update = catalog.update_from_paths
def held(*args, **kwargs):
    report = _update(*args, **kwargs)
    marker.touch()
    end = time.monotonic() + 120
    while not go.exists() and time.monotonic() < end:
        time.sleep(0.05)
    return report
catalog.update_from_paths = held
from offline_agent.cli import main
sys.argv = ["offline-agent", *sys.argv[3:]]
main()
"""


def _write_corpus(folder: Path) -> None:
    folder.mkdir()
    for i in range(40):
        (folder / f"doc{i:03d}.txt").write_text(f"# Place {i}\n\nThe harbour of place {i} has a mill.", "utf-8")


def _add_records(folder: Path, tag: str) -> None:
    rows = [f'{{"id": "{tag}{i}", "text": "granite quarry {tag} {i} near the canal"}}' for i in range(300)]
    (folder / f"records-{tag}.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")


def _contents(index: BM25Index) -> set[tuple[str, str]]:
    return {(p.doc_id, p.text) for p in (index.passage(int(i)) for i in index.ids())}


def _wait_for(check, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.05)
    return False


# (what changes before the first run reads the files, what changes after it read them, before the second starts)
TRIALS = [
    (lambda f: _add_records(f, "a"), lambda f: (f / "doc005.txt").unlink()),
    (lambda f: (f / "doc007.txt").unlink(), lambda f: _add_records(f, "b")),
    (
        lambda f: (_add_records(f, "c"), (f / "doc009.txt").unlink()),
        lambda f: ((f / "doc003.txt").write_text("# Place 3\n\nRebuilt as a chapel.", "utf-8"), _add_records(f, "d")),
    ),
]


@pytest.mark.parametrize("trial", range(len(TRIALS)), ids=[f"trial-{n + 1}" for n in range(len(TRIALS))])
def test_two_updates_at_once_lose_nothing(tmp_path: Path, ledger, trial: int) -> None:
    corpus, home = tmp_path / "corpus", tmp_path / "home"
    _write_corpus(corpus)
    index_dir = home / "indexes" / "both"
    build_from_paths([corpus]).index.save(index_dir)
    before_first, before_second = TRIALS[trial]
    before_first(corpus)
    marker, go = tmp_path / "first-has-read", tmp_path / "go"
    update = ["index", str(corpus), "--name", "both", "--update"]
    env = cli_env(home)
    first_err, second_err = tmp_path / "first.err", tmp_path / "second.err"
    with first_err.open("w") as err1, second_err.open("w") as err2:
        first = subprocess.Popen(
            [sys.executable, "-c", _HELD, str(marker), str(go), *update], env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
            stderr=err1,
        )  # fmt: skip
        second = None
        try:
            assert _wait_for(marker.exists, 300), first_err.read_text()
            before_second(corpus)
            second = subprocess.Popen(
                [sys.executable, "-m", "offline_agent.cli", *update], env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                stderr=err2,
            )  # fmt: skip
            # The second either waits for the first (and says so) or, where nothing makes it wait, runs to its end.
            _wait_for(lambda: second.poll() is not None or "waiting for" in second_err.read_text(), 300)
            go.touch()
            first.wait(timeout=300)
            second.wait(timeout=300)
        finally:
            go.touch()
            for proc in (first, second):
                if proc is not None and proc.poll() is None:
                    proc.kill()
    errors = first_err.read_text() + second_err.read_text()
    ran = first.returncode == 0 and second.returncode == 0 and "Traceback" not in errors
    final = _contents(BM25Index.load(index_dir, verify=True))
    expected = _contents(build_from_paths([corpus]).index)
    lost = sorted(expected - final)
    brought_back = sorted(final - expected)
    ledger.record("concurrent index --update", "crashed" if not ran else "lost" if lost or brought_back else "handled")
    assert ran, errors[-2000:]
    assert not lost and not brought_back, (f"{len(lost)} lost, e.g. {lost[:2]}", f"{len(brought_back)} brought back")
    assert "waiting for process" in second_err.read_text(), second_err.read_text()
    shutil.rmtree(tmp_path / "home", ignore_errors=True)
