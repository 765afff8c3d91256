"""The on-disk index: a folder of .npy and .json files, written atomically, read back with mmap and no pickle.

```
NAME/
  manifest.json        format name and version, the current generation, and size + sha256 of each of its files
  g000002/             one generation: meta.json, files.json and one .npy per array
  .lock                held (flock) by a writer while it updates (`writer_lock`: an update holds it from load to
                       save), with the writer's pid inside
```
A writer builds a new generation folder beside the current one, flushes it, then replaces manifest.json in one
`os.replace`: a crash or kill at any point leaves the previous manifest and generation intact. Readers read
the manifest, then map the generation's files; a reader that races a writer's cleanup retries with the new
manifest, and the previous generation is kept until the next write, so two processes can search while a third
updates. A brand-new index is written in a hidden sibling folder and renamed into place, so a failed first
build leaves nothing behind.

Every problem with the files becomes one RetrievalError line that names the file: missing, truncated (its size
disagrees with the manifest), corrupt (bad .npy header or JSON, or a checksum mismatch when verifying), or
written by a newer format version.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from offline_agent import jsonio
from offline_agent.errors import RetrievalError
from offline_agent.retrieval.checksums import VERIFY_ON_LOAD_MAX_BYTES, file_sha256

FORMAT_NAME = "offline-agent-bm25"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
_MMAP_MIN_BYTES = 1 << 16  # smaller arrays are read into memory: mmap has a cost and cannot map empty data
# How long a writer waits for another one to finish before it gives up (an update of a large index takes minutes).
LOCK_WAIT_S = 600.0
_held: set[tuple[Path, int]] = set()  # (index folder, thread) pairs holding the writer lock in this process
_GENERATION_RE = re.compile(r"g\d{6,}")
_FILE_RE = re.compile(r"[a-z0-9_]+\.(?:npy|json)")


def is_index_dir(path: Path) -> bool:
    """Whether `path` looks like a saved index (has a manifest)."""
    return (path / MANIFEST).is_file()


def write_index(path: Path, arrays: dict[str, np.ndarray], meta: dict[str, Any], extra: dict[str, Any]) -> None:
    """Save arrays (NAME.npy), `meta` (meta.json) and `extra` (files.json) as a new generation of `path`."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise RetrievalError(f"cannot save index: {path} exists and is not a folder")
    if path.is_dir() and any(path.iterdir()) and not is_index_dir(path):
        raise RetrievalError(f"cannot save index: {path} is a non-empty folder that is not an index")
    try:
        if not is_index_dir(path):
            _write_new(path, arrays, meta, extra)
        else:
            _write_next(path, arrays, meta, extra)
    except OSError as exc:  # a full disk, a quota, a read-only folder: the previous index (if any) is intact
        reason = exc.strerror or f"{exc} (is the disk full?)"
        kept = "the previous index is kept" if is_index_dir(path) else "nothing was written"
        raise RetrievalError(f"cannot save index {path}: {reason}; {kept}") from None


def _write_next(path: Path, arrays: dict[str, np.ndarray], meta: dict[str, Any], extra: dict[str, Any]) -> None:
    """Write a new generation beside the current one and switch the manifest to it; on failure remove it."""
    with writer_lock(path):
        old = read_manifest(path)
        number = int(str(old.get("generation", "g0"))[1:] or 0) + 1
        generation = f"g{number:06d}"
        gen_dir = path / generation
        if gen_dir.exists():
            shutil.rmtree(gen_dir)
        try:
            files = _write_generation(gen_dir, arrays, meta, extra)
            _write_json_atomic(path / MANIFEST, _manifest(generation, files))
        except BaseException:
            shutil.rmtree(gen_dir, ignore_errors=True)  # the manifest still names the old generation
            raise
        _fsync_dir(path)
        _remove_old_generations(path, keep={generation, str(old.get("generation"))})


def _write_new(path: Path, arrays: dict[str, np.ndarray], meta: dict[str, Any], extra: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_dead_temp_dirs(path)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-{os.getpid()}-", dir=path.parent))
    try:
        generation = "g000001"
        files = _write_generation(tmp / generation, arrays, meta, extra)
        _write_json_atomic(tmp / MANIFEST, _manifest(generation, files))
        if path.is_dir():  # an empty folder given by the user
            path.rmdir()
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _remove_dead_temp_dirs(path: Path) -> None:
    """Remove what killed first builds of this index left behind (their process is gone)."""
    for child in path.parent.glob(f".{path.name}.tmp-*-*"):
        pid = child.name[len(path.name) + 6 :].split("-", 1)[0]
        if pid.isdigit() and not _pid_alive(int(pid)):
            shutil.rmtree(child, ignore_errors=True)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _manifest(generation: str, files: dict[str, dict[str, Any]]) -> dict[str, Any]:
    from offline_agent._version import __version__

    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "generation": generation,
        "written_by": f"offline-agent {__version__}",
        "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "files": files,
    }


def _write_generation(
    gen_dir: Path, arrays: dict[str, np.ndarray], meta: dict[str, Any], extra: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    gen_dir.mkdir(parents=True)
    files: dict[str, dict[str, Any]] = {}
    for name, array in arrays.items():
        target = gen_dir / f"{name}.npy"
        with open(target, "wb") as fh:
            np.save(fh, np.ascontiguousarray(array), allow_pickle=False)
            fh.flush()
            os.fsync(fh.fileno())
        files[target.name] = _describe(target)
    for name, data in (("meta.json", meta), ("files.json", extra)):
        _write_json_atomic(gen_dir / name, data)
        files[name] = _describe(gen_dir / name)
    _fsync_dir(gen_dir)
    return files


def _describe(path: Path) -> dict[str, Any]:
    return {"size": path.stat().st_size, "sha256": file_sha256(path)}


def _write_json_atomic(target: Path, data: Any) -> None:
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh, ensure_ascii=False, separators=(",", ":"))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):  # not every platform can open a folder
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _remove_old_generations(path: Path, keep: set[str]) -> None:
    for child in path.iterdir():
        stale_gen = child.is_dir() and child.name.startswith("g") and child.name not in keep
        if stale_gen or child.name.startswith(f".{MANIFEST}.tmp-"):
            with contextlib.suppress(OSError):
                shutil.rmtree(child) if child.is_dir() else child.unlink()


@contextlib.contextmanager
def writer_lock(
    path: Path, *, wait_s: float = LOCK_WAIT_S, on_wait: Callable[[str], None] | None = None
) -> Iterator[None]:
    """Hold the index's writer lock (flock on `.lock`) for the block: one writer at a time.

    `index --update` holds it from loading the index to saving it, so that a second update waits and then starts
    from the first one's result instead of overwriting it. When another process holds it, `on_wait` is told once
    (with its pid where known) and the lock is tried again until `wait_s` have passed; then RetrievalError. The
    kernel drops the lock of a process that dies, so a killed writer never blocks the next one. A block nested in
    one that holds the lock already (in this thread) just runs.
    """
    key = (Path(path).resolve(), threading.get_ident())
    if key in _held:
        yield
        return
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: one writer at a time is then the user's job
        yield
        return
    with open(Path(path) / ".lock", "a+") as fh:
        _acquire(fh, fcntl, Path(path), wait_s, on_wait)
        with contextlib.suppress(OSError):  # who holds it, for a waiter's message (a full disk only loses that)
            fh.seek(0)
            fh.truncate()
            fh.write(f"{os.getpid()}\n")
            fh.flush()
        _held.add(key)
        try:
            yield
        finally:
            _held.discard(key)
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _acquire(fh: Any, fcntl: Any, path: Path, wait_s: float, on_wait: Callable[[str], None] | None) -> None:
    deadline = time.monotonic() + wait_s
    told = False
    while True:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        fh.seek(0)
        holder = fh.read().strip()
        who = f"process {holder}" if holder.isdigit() else "another process"
        if time.monotonic() >= deadline:
            raise RetrievalError(
                f"the index {path} is still being written by {who} after {wait_s:.0f} s of waiting; try again "
                "when it has finished"
            )
        if not told and on_wait is not None:
            on_wait(who)
            told = True
        time.sleep(0.1)


def read_manifest(path: Path) -> dict[str, Any]:
    """The manifest of the index at `path`, checked for format and version."""
    target = Path(path) / MANIFEST
    if not Path(path).exists():
        raise RetrievalError(f"index not found: {path}")
    if not target.is_file():
        raise RetrievalError(f"not an index (no {MANIFEST}): {path}")
    manifest = _read_json(target)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise RetrievalError(f"corrupt index file {target}: not an {FORMAT_NAME} manifest")
    version = manifest.get("version")
    if not isinstance(version, int):
        raise RetrievalError(f"corrupt index file {target}: no format version")
    if version > FORMAT_VERSION:
        raise RetrievalError(
            f"index file {target} has format version {version}, newer than this offline-agent reads "
            f"({FORMAT_VERSION}); upgrade offline-agent or rebuild the index"
        )
    if version < FORMAT_VERSION:
        raise RetrievalError(f"index file {target} has old format version {version}; rebuild the index")
    if not isinstance(manifest.get("files"), dict) or not isinstance(manifest.get("generation"), str):
        raise RetrievalError(f"corrupt index file {target}: missing generation or file list")
    if not _GENERATION_RE.fullmatch(manifest["generation"]):
        raise RetrievalError(f"corrupt index file {target}: bad generation name")
    for name, info in manifest["files"].items():
        if not _FILE_RE.fullmatch(name) or not isinstance(info, dict) or not isinstance(info.get("size"), int):
            raise RetrievalError(f"corrupt index file {target}: bad entry for {name[:40]!r} in the file list")
    return manifest


def _read_json(target: Path) -> Any:
    try:
        return jsonio.read_file(target)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise RetrievalError(f"cannot read index file {target}: {exc.strerror or exc}") from None
    except jsonio.JSONReadError as exc:
        raise RetrievalError(f"corrupt index file {target}: {exc}") from None


def read_index(
    path: Path, *, mmap: bool = True, verify: bool | None = None
) -> tuple[dict[str, np.ndarray], dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Load (arrays, meta, extra, manifest) of the index at `path`.

    `verify` True checks every file's sha256, False none, None every file when the index is small enough for that
    to cost little (VERIFY_ON_LOAD_MAX_BYTES), else its JSON files now and its arrays later
    (checksums.PendingChecks).
    """
    path = Path(path)
    for attempt in range(5):
        manifest = read_manifest(path)
        check = verify if verify is not None else _total_size(manifest) <= VERIFY_ON_LOAD_MAX_BYTES
        check = check if verify is not None or check else "json"
        try:
            return (*_read_generation(path, manifest, mmap=mmap, verify=check), manifest)
        except FileNotFoundError as exc:
            # A writer may have replaced the generation between our two reads: look again.
            if attempt < 4 and read_manifest(path).get("generation") != manifest["generation"]:
                continue
            raise RetrievalError(f"index file missing: {exc.filename}") from None
    raise AssertionError("unreachable")  # pragma: no cover


def _total_size(manifest: dict[str, Any]) -> int:
    return sum(max(0, info["size"]) for info in manifest["files"].values())


def _read_generation(
    path: Path, manifest: dict[str, Any], *, mmap: bool, verify: bool | str
) -> tuple[dict[str, np.ndarray], dict[str, Any], dict[str, Any]]:
    gen_dir = path / manifest["generation"]
    arrays: dict[str, np.ndarray] = {}
    meta: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for name, info in manifest["files"].items():
        target = gen_dir / name
        size = target.stat().st_size  # FileNotFoundError: handled by the caller
        if size != info.get("size"):
            raise RetrievalError(f"truncated or altered index file {target}: {size} bytes, expected {info.get('size')}")
        checked = verify is True or (verify == "json" and name.endswith(".json"))
        if checked and file_sha256(target) != info.get("sha256"):
            raise RetrievalError(f"corrupt index file {target}: checksum mismatch; rebuild the index")
        if name.endswith(".json"):
            data = _read_json(target)
            if not isinstance(data, dict):
                raise RetrievalError(f"corrupt index file {target}: expected a JSON object")
            if name == "meta.json":
                meta = data
            else:
                extra = _checked_extra(target, data)
        elif name.endswith(".npy"):
            arrays[name[:-4]] = _load_array(target, mmap=mmap and size >= _MMAP_MIN_BYTES)
    if not meta:
        raise RetrievalError(f"index file missing: {gen_dir / 'meta.json'}")
    return arrays, meta, extra


def _checked_extra(target: Path, extra: dict[str, Any]) -> dict[str, Any]:
    """files.json with the shape every reader of it expects (a manifest that matches it says only that it was not
    altered since it was written): else a RetrievalError, not an AttributeError in whatever lists the indexes."""
    files, roots, ingest = extra.get("files", {}), extra.get("roots", []), extra.get("ingest", {})
    if not (isinstance(files, dict) and all(isinstance(info, dict) for info in files.values())):
        raise RetrievalError(f"corrupt index file {target}: 'files' is not an object of objects")
    if not (isinstance(roots, list) and all(isinstance(root, str) for root in roots)):
        raise RetrievalError(f"corrupt index file {target}: 'roots' is not a list of paths")
    if not isinstance(ingest, dict):
        raise RetrievalError(f"corrupt index file {target}: 'ingest' is not an object")
    return extra


def _load_array(target: Path, *, mmap: bool) -> np.ndarray:
    try:
        array = np.load(target, mmap_mode="r" if mmap else None, allow_pickle=False)
        # A plain ndarray view of the map: np.memmap's Python __getitem__ costs a microsecond per access.
        return np.asarray(array)
    except FileNotFoundError:
        raise
    except (OSError, ValueError, EOFError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise RetrievalError(f"corrupt index file {target}: {reason}") from None


def remove_index(path: Path) -> None:
    """Delete a saved index folder (refuses folders that are not indexes)."""
    path = Path(path)
    if not is_index_dir(path):
        raise RetrievalError(f"not an index (no {MANIFEST}): {path}")
    trash = path.with_name(f".{path.name}.rm-{os.getpid()}")
    os.replace(path, trash)  # readers see it gone at once; deleting the files can take a while
    shutil.rmtree(trash, ignore_errors=True)


def disk_size(path: Path) -> int:
    """Bytes used by the current generation of the index at `path`."""
    manifest = read_manifest(path)
    return sum(int(info.get("size", 0)) for info in manifest["files"].values())
