"""Checksums of an index's files: every file of a small index on load, each group of a large one on first use.

The manifest holds each file's sha256. Hashing costs about 80 ms for 8 MB and 3 s for 244 MB of arrays on 2 busy
cores, while a load through mmap costs milliseconds: so storage.read_index hashes every file of an index up to
VERIFY_ON_LOAD_MAX_BYTES on load, and a larger index is hashed group by group the first time the group is
used (`PendingChecks`: the passage table before the first passage is read, the postings before the first search,
everything before an update or a save), so that no damaged byte is read unseen. `index info --verify` hashes any
index at once.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any

from offline_agent.errors import RetrievalError

# Indexes up to this size (several thousand passages: the sample corpus takes 1.6 KB a passage) have every
# file's sha256 checked on load, about 45 ms at the most on a busy 2-core machine, so that no damaged byte goes
# unseen; larger ones get the structural checks (checks.py) on load, and each group of arrays its sha256 check the
# first time it is used (checksums.PendingChecks). `index info --verify` checks everything at once.
VERIFY_ON_LOAD_MAX_BYTES = 16 << 20


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def lazy_checks(path: Path, manifest: dict[str, Any], verify: bool | None) -> PendingChecks | None:
    """The checks a load left for later: every array's sha256, when `verify` is None and the index is larger than
    VERIFY_ON_LOAD_MAX_BYTES (read_index then checked its JSON files only); None when there are none."""
    if (
        verify is not None
        or sum(max(0, info["size"]) for info in manifest["files"].values()) <= VERIFY_ON_LOAD_MAX_BYTES
    ):
        return None
    return PendingChecks(Path(path) / manifest["generation"], manifest)


class PendingChecks:
    """The sha256 checks of a large index's arrays, each group's run the first time the group is used: the passage
    table (text, titles, sources, offsets) before the first passage is read, the postings before the first search,
    all of them before an update. A large index still opens in milliseconds, and no altered byte is read unseen."""

    PASSAGES = ("text_", "doc_", "p_", "live")

    def __init__(self, gen_dir: Path, manifest: dict[str, Any]) -> None:
        self.gen_dir = gen_dir
        names = [name for name in manifest["files"] if name.endswith(".npy")]
        passages = [name for name in names if name.startswith(self.PASSAGES)]
        self._groups = {"passages": passages, "postings": [name for name in names if name not in passages]}
        self._sha256 = {name: manifest["files"][name].get("sha256") for name in names}
        self._lock = threading.Lock()

    def check(self, group: str) -> None:
        """Check the files of `group` ("passages", "postings" or "all") unless done; RetrievalError on a mismatch."""
        with self._lock:
            for name in [n for g in self._groups if group in (g, "all") for n in self._groups[g]]:
                if file_sha256(self.gen_dir / name) != self._sha256[name]:
                    raise RetrievalError(
                        f"corrupt index file {self.gen_dir / name}: checksum mismatch; rebuild the index"
                    )
            for g in list(self._groups):
                if group in (g, "all"):
                    self._groups[g] = []

    @property
    def done(self) -> bool:
        return not any(self._groups.values())


__all__ = ["PendingChecks", "file_sha256", "lazy_checks"]
