"""Checking where a run will write before the run starts, and saying clearly why a write cannot happen.

A question can take minutes; finding out only at the end that its trace file cannot be written loses the
work. `check_writable_file` and `check_writable_folder` are called before the model loads, and raise a
ConfigError that names the real obstacle: a parent that is a regular file (mkdir's own message for that is a
misleading "File exists"), a folder where a file is wanted, or no permission. `describe_write_error` words an
OSError from a write that failed anyway (a full disk) the same way.
"""

from __future__ import annotations

import errno
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
