"""`index --workers 2` whose worker dies or that a user stops, and a chunk size the compiled chunker cannot hold.

A worker killed with SIGKILL (as the out-of-memory killer does) used to leave the parent waiting for ever, deaf to
Ctrl-C: its work was never handed to anyone. Now the parent says how the worker died, exits 1 and saves nothing (an
index being updated stays as it was), and Ctrl-C ends the build at once (exit 130) with every worker stopped.

To kill a worker while it reads, the CLI runs with a reader a user registered (`register_reader`, sent to the
workers like any user reader): it reads `.slow` files as text, but first writes its process id to a folder and waits
until the test lets it go, so the test knows which processes are workers and that they are busy.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from harness import cli, one_line_error, outcome_of
from support import ROOT, cli_env

BOUND_S = 60  # a guard: after its worker died, the build must end within this, not wait for ever
SLOW_READER = """
import os, time
from pathlib import Path
from offline_agent.retrieval.readers import register_reader
from offline_agent.retrieval.readers.text import TextReader


class SlowReader(TextReader):
    name = "slow"
    extensions = frozenset({".slow"})

    def read(self, path, data, doc_id, fields):
        marks = Path(os.environ["SLOW_MARKS"])
        (marks / str(os.getpid())).write_text(path.name)
        end = time.monotonic() + 120
        while not (marks / "release").exists() and time.monotonic() < end:
            time.sleep(0.05)
        return super().read(path, data, doc_id, fields)


register_reader(SlowReader())
"""


@pytest.fixture
def slow(tmp_path: Path) -> dict[str, Path]:
    """A plugin folder with the slow reader, a folder for its marks, and 10 `.slow` files (over 2 MB in all: enough
    for the build to read in worker processes)."""
    plugin, marks, corpus = tmp_path / "plugin", tmp_path / "marks", tmp_path / "slow_corpus"
    for folder in (plugin, marks, corpus):
        folder.mkdir()
    (plugin / "slowreader.py").write_text(textwrap.dedent(SLOW_READER), encoding="utf-8")
    for number in range(10):
        (corpus / f"f{number}.slow").write_text(f"Wetland herons wade in shallow water {number}. " * 6000)
    return {"plugin": plugin, "marks": marks, "corpus": corpus, "home": tmp_path / "home"}


def _start_build(slow: dict[str, Path], *args: str) -> subprocess.Popen[str]:
    env = cli_env(slow["home"])
    env["SLOW_MARKS"] = str(slow["marks"])
    env["PYTHONPATH"] = os.pathsep.join([str(slow["plugin"]), str(ROOT), env.get("PYTHONPATH", "")])
    env.setdefault("OFFLINE_AGENT_THREADS", "1")
    command = [sys.executable, "-c", "import slowreader; from offline_agent.cli import main; main()", "index"]
    return subprocess.Popen(
        [*command, *args, "--workers", "2"],
        cwd=ROOT,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, as a shell gives a command: Ctrl-C goes to all of it
    )


def _busy_workers(slow: dict[str, Path], proc: subprocess.Popen[str]) -> list[int]:
    """The process ids of the workers once two are reading (empty when the build ended first)."""
    end = time.monotonic() + BOUND_S
    while time.monotonic() < end and proc.poll() is None:
        pids = [int(mark.name) for mark in slow["marks"].iterdir() if mark.name.isdigit()]
        if len(pids) >= 2:
            return pids
        time.sleep(0.1)
    return []


def _finish(slow: dict[str, Path], proc: subprocess.Popen[str]) -> subprocess.CompletedProcess[str] | None:
    """The build's result, or None when it did not end within BOUND_S (a hang); the workers are let go either way."""
    try:
        out, err = proc.communicate(timeout=BOUND_S)
        result: subprocess.CompletedProcess[str] | None = subprocess.CompletedProcess(
            proc.args, proc.returncode, out, err
        )
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        result = None
    (slow["marks"] / "release").write_text("")
    return result


def _gone(pids: list[int]) -> bool:
    """Whether none of `pids` runs any more (given a few seconds to be reaped)."""
    end = time.monotonic() + 10
    while time.monotonic() < end:
        alive = [pid for pid in pids if Path(f"/proc/{pid}").exists() and "Z" not in _state(pid)]
        if not alive:
            return True
        time.sleep(0.1)
    return False


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


def _passages(home: Path, name: str) -> int | None:
    info = cli("index", "info", name, "--json", home=home)
    return json.loads(info.stdout)["passages"] if info.returncode == 0 else None


def test_a_killed_worker_ends_the_build_with_one_line_and_saves_nothing(slow: dict[str, Path], ledger) -> None:
    proc = _start_build(slow, str(slow["corpus"]), "--name", "k")
    workers = _busy_workers(slow, proc)
    if workers:
        os.kill(workers[0], signal.SIGKILL)
    result = _finish(slow, proc)
    line = one_line_error(result) if result is not None else None
    saved = _passages(slow["home"], "k")
    ok = bool(workers) and line is not None and "worker process reading files died (killed by SIGKILL)" in line
    ok = ok and saved is None and _gone(workers)
    ledger.record("index", "lost" if saved is not None else outcome_of(result, ok))
    assert ok, (workers, saved, None if result is None else (result.returncode, result.stderr[-2000:]))


def test_a_killed_worker_leaves_the_index_being_updated_as_it_was(
    slow: dict[str, Path], tiny_corpus: Path, ledger
) -> None:
    built = cli("index", str(tiny_corpus), "--name", "k", home=slow["home"])
    assert built.returncode == 0, built.stderr[-1000:]
    before = _passages(slow["home"], "k")
    for path in slow["corpus"].iterdir():
        path.rename(tiny_corpus / path.name)
    proc = _start_build(slow, "--update", "--name", "k")
    workers = _busy_workers(slow, proc)
    if workers:
        os.kill(workers[-1], signal.SIGKILL)
    result = _finish(slow, proc)
    line = one_line_error(result) if result is not None else None
    after = _passages(slow["home"], "k")
    search = cli("search", "Warsaw", "--index", "k", "--json", home=slow["home"])
    kept = after == before and search.returncode == 0 and json.loads(search.stdout)["hits"]
    ok = bool(workers) and line is not None and "died (killed by SIGKILL)" in line and bool(kept)
    ledger.record("index", "lost" if result is not None and not kept else outcome_of(result, ok))
    assert ok, (workers, before, after, None if result is None else (result.returncode, result.stderr[-2000:]))


def test_ctrl_c_stops_a_build_with_workers(slow: dict[str, Path], ledger) -> None:
    proc = _start_build(slow, str(slow["corpus"]), "--name", "k")
    workers = _busy_workers(slow, proc)
    if workers:
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal does on Ctrl-C: the whole group
    result = _finish(slow, proc)
    ok = bool(workers) and result is not None and result.returncode == 130 and "Traceback" not in result.stderr
    ok = ok and _passages(slow["home"], "k") is None and _gone(workers)
    ledger.record("index", outcome_of(result, ok))
    assert ok, (workers, None if result is None else (result.returncode, result.stderr[-2000:]))


@pytest.mark.parametrize("size", [2**63 - 1, 2**80])
def test_a_chunk_size_past_what_c_holds_indexes_as_python_does(size: int, tiny_corpus: Path, tmp_path: Path, ledger):
    """The compiled chunker takes C integers: a size near 2**63 overflowed there (Python's path was fine)."""
    runs = {}
    for kernel in ("", "1"):
        home = tmp_path / f"home{kernel}"
        env_prefix = ("env", f"OFFLINE_AGENT_NO_KERNEL={kernel}")
        result = cli("index", str(tiny_corpus), "--name", "c", "--chunk-size", str(size), home=home, prefix=env_prefix)
        search = cli("search", "Warsaw Vistula", "--index", "c", "--json", home=home)
        runs[kernel] = (result, json.loads(search.stdout)["hits"] if search.returncode == 0 else None)
    compiled, python = runs[""], runs["1"]
    ok = compiled[0].returncode == 0 and compiled[1] is not None and compiled[1] == python[1] and python[1]
    ledger.record("index", outcome_of(compiled[0], bool(ok)))
    assert ok, (compiled[0].stderr[-2000:], compiled[1], python[1])
