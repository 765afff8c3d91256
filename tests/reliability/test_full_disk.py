"""A full disk while an index is saved: one line, exit 1, the previous index intact, no partial generation.

The disk is a small tmpfs mounted in a private mount namespace (`unshare -rm`: root in a user namespace, no
privileges needed on the host); where namespaces are not permitted the tmpfs cases skip with the reason.
Three cases: a first build larger than the disk (nothing may be left behind), an update with the disk filled
to the last few kilobytes (a short write inside an .npy), and an update with no space at all (ENOSPC at the
first write). Without the namespace, a save into /dev/full-like failures is covered in
tests/retrieval/test_retrieval_storage.py by a simulated OSError.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness import on_small_disk

# Runs inside the namespace with the tmpfs at argv[1]: every CLI call is a subprocess, as a user runs it.
_INSIDE = r"""
import json, os, shutil, subprocess, sys
from pathlib import Path

disk, small, big, extra = (Path(p) for p in sys.argv[1:5])
home = disk / "home"
env = dict(os.environ, OFFLINE_AGENT_HOME=str(home))
env.pop("OFFLINE_AGENT_MODEL", None)

def cli(*args):
    r = subprocess.run([sys.executable, "-m", "offline_agent.cli", *args], capture_output=True, text=True, env=env)
    return {"code": r.returncode, "stderr": r.stderr[-3000:], "stdout": r.stdout[-1000:]}

def listing(path):
    return sorted(p.name for p in path.iterdir()) if path.exists() else []

def state(name):
    from offline_agent.retrieval import BM25Index
    index = BM25Index.load(home / "indexes" / name, verify=True)
    return [len(index)] + [index.search(q, k=5).ids.tolist() for q in ("lighthouse", "quarry granite", "ferry")]

def fill(leave):
    # Fill the disk to the last byte, then free about `leave` bytes (whole 64 KB pieces).
    pieces = []
    for i in range(100000):
        path = disk / f"filler{i}"
        pieces.append(path)
        try:
            with open(path, "wb", buffering=0) as fh:
                for _ in range(128):
                    fh.write(b"x" * 512)
        except OSError:
            break
    freed = 0
    while freed < leave and len(pieces) > 1:
        path = pieces.pop(0)
        freed += path.stat().st_size
        path.unlink()
    return pieces

out = {}
out["first_build"] = cli("index", str(big), "--name", "big")
out["after_first_build"] = listing(home / "indexes")
out["small_build"] = cli("index", str(small), "--name", "small")
before = state("small")
for leave, label in ((24 * 1024, "short_write"), (0, "no_space")):
    shutil.copytree(extra, small / label)
    fillers = fill(leave)
    out[label] = cli("index", str(small), "--name", "small", "--update")
    out[label + "_listing"] = listing(home / "indexes" / "small")
    out[label + "_same"] = state("small") == before
    for path in fillers:
        path.unlink(missing_ok=True)
    shutil.rmtree(small / label)
out["after_space_returns"] = cli("index", str(small), "--name", "small", "--update")
print(json.dumps(out))
"""


def _corpus(folder: Path, files: int, sentences: int) -> Path:
    folder.mkdir(parents=True)
    words = ["lighthouse", "quarry", "granite", "ferry", "harbour", "meadow", "chapel", "canal"]
    for i in range(files):
        text = " ".join(f"{words[(i + j) % 8]} {words[(i * j) % 8]} number{i}x{j}." for j in range(sentences))
        (folder / f"f{i:04d}.txt").write_text(text, encoding="utf-8")
    return folder


def test_full_disk_while_saving_an_index(tmp_path: Path, ledger) -> None:
    small = _corpus(tmp_path / "small", 10, 10)
    big = _corpus(tmp_path / "big", 400, 60)  # its index is larger than the disk
    extra = _corpus(tmp_path / "extra", 30, 20)
    result = on_small_disk(tmp_path, "640k", _INSIDE, str(small), str(big), str(extra))
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])

    def one_line(run: dict) -> bool:
        errors = [line for line in run["stderr"].splitlines() if line.startswith("error:")]
        return run["code"] == 1 and "Traceback" not in run["stderr"] and len(errors) == 1

    first = one_line(out["first_build"]) and "cannot save index" in out["first_build"]["stderr"]
    ledger.record("full disk (tmpfs)", "handled" if first else "crashed")
    ledger.record("full disk (tmpfs)", "handled" if out["after_first_build"] == [] else "lost")
    assert first, out["first_build"]
    assert out["after_first_build"] == [], out["after_first_build"]  # nothing left behind
    assert out["small_build"]["code"] == 0, out["small_build"]
    for label in ("short_write", "no_space"):
        handled = one_line(out[label]) and "the previous index is kept" in out[label]["stderr"]
        kept = out[label + "_same"] and out[label + "_listing"] == [".lock", "g000001", "manifest.json"]
        ledger.record("full disk (tmpfs)", "crashed" if not handled else "handled" if kept else "lost")
        assert handled, out[label]
        assert kept, (label, out[label + "_listing"])
    assert out["after_space_returns"]["code"] == 0, out["after_space_returns"]
