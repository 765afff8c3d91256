"""Checking where a run will write before the run starts, and saying clearly why a write cannot happen.

A question can take minutes; finding out only at the end that its trace file cannot be written loses the
work. `check_writable_file` and `check_writable_folder` are called before the model loads, and raise a
ConfigError that names the real obstacle: a parent that is a regular file (mkdir's own message for that is a
misleading "File exists"), a folder where a file is wanted, or no permission. `describe_write_error` words an
OSError from a write that failed anyway (a full disk) the same way. `append_line` appends whole lines only (a
trace, results.jsonl), repairing a tail an earlier writer left torn.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
from pathlib import Path

from offline_agent.errors import ConfigError


def check_writable_file(path: str | Path, what: str) -> None:
    """ConfigError("cannot write the WHAT PATH: why") unless a file at `path` can be created or appended to."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"cannot write the {what} {path}: it is a folder")
    if path.exists():
        if not os.access(path, os.W_OK):
            raise ConfigError(f"cannot write the {what} {path}: permission denied")
        return
    obstacle = _obstacle(path.parent)
    if obstacle:
        raise ConfigError(f"cannot write the {what} {path}: {obstacle}")


def check_writable_folder(path: str | Path, what: str) -> None:
    """ConfigError("cannot use the WHAT PATH: why") unless `path` is, or can be made, a writable folder."""
    path = Path(path)
    obstacle = _obstacle(path)
    if obstacle:
        raise ConfigError(f"cannot use the {what} {path}: {obstacle}")


def describe_write_error(path: str | Path, exc: OSError) -> str:
    """Why writing `path` failed, in a few words (a parent that is a file is named, not "File exists")."""
    if isinstance(exc, (FileExistsError, NotADirectoryError)) or exc.errno in (errno.EEXIST, errno.ENOTDIR):
        obstacle = _obstacle(Path(path).parent)
        if obstacle:
            return obstacle
    return exc.strerror or str(exc) or type(exc).__name__


def append_line(path: str | Path, line: bytes) -> None:
    """Append `line` (ending in a newline) to `path` as a whole line, and fsync; OSError when it cannot.

    Whole lines only: the bytes go out with unbuffered writes, and a write that fails (a full disk) is cut back to
    the file's size before it; a tail left torn by an earlier writer (killed, or whose cut-back failed too) is
    repaired first, so the new line never continues a broken one: cut back to the last whole line, or ended with a
    newline when it is a whole JSON value that only lacks one."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        _repair_tail(fd)
        before = os.fstat(fd).st_size
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except OSError:
            cut_back(fd, before)
            raise
    finally:
        os.close(fd)


def cut_back(fd: int, size: int) -> None:
    """Truncate the file open at `fd` back to `size` bytes, as far as the disk allows (the next append repairs a
    torn tail it could not cut)."""
    with contextlib.suppress(OSError):
        os.ftruncate(fd, size)
        os.fsync(fd)


def _repair_tail(fd: int) -> None:
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    end = size
    while end > 0:  # back to the last newline, a block at a time (a trajectory line can be long)
        start = max(0, end - (1 << 16))
        block = os.pread(fd, end - start, start)
        found = block.rfind(b"\n")
        if found >= 0:
            start += found + 1
            break
        end = start
    else:
        start = 0
    tail = os.pread(fd, size - start, start)
    try:
        json.loads(tail)
    except ValueError:
        os.ftruncate(fd, start)  # a torn line: it was never whole
    else:
        os.write(fd, b"\n")  # a whole value that only lacks its newline


def _obstacle(folder: Path) -> str | None:
    """Why `folder` cannot be (made) a writable folder, or None when it can."""
    current = Path(os.path.abspath(folder))
    while not current.exists():
        if current.is_symlink():
            return f"{current} is a broken symbolic link"
        if current.parent == current:
            return f"{current} does not exist"
        current = current.parent
    if not current.is_dir():
        return f"{current} is a file, not a folder"
    if not os.access(current, os.W_OK | os.X_OK):
        return f"permission denied in {current}"
    return None
