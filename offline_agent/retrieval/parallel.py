"""Reading and chunking files in worker processes, so that indexing a folder uses every core.

Parsing pages and cutting them into passages is most of the cost of indexing a folder of documents, and each file is
read on its own, so files go to a pool of worker processes (`index --workers N`, default every core) and their
passages come back in the walk's order: the passages, and so the index, are the same whatever the number of
workers. Workers are started with "spawn" (safe beside threads, and the same on every platform; a script that
indexes with workers needs the usual `if __name__ == "__main__":` guard), which costs a few tenths of a second, so
a small batch of files (under MIN_FILES, or MIN_BYTES in all) is read in this process. A reader registered by the
user (`register_reader`) is sent to the workers too; one that cannot be pickled keeps the reading in this process.
The workers are workers.py's: a worker that dies (`kill -9`) stops the build with one error, and Ctrl-C stops them
all. The reading itself is the caller's (ingest.py passes its `read_outcome`), so this module needs nothing of
ingest's and the two import one way.
"""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from offline_agent.retrieval.readers import READERS, register_reader
from offline_agent.retrieval.workers import ordered_map

MIN_FILES = 8
MIN_BYTES = 2 << 20
_BUILT_IN = "offline_agent.retrieval.readers."

Outcome = tuple[Any, Any]
# What a worker runs on one task: read(entry, chunk) -> the outcome (a top-level function, or a partial of one, that
# pickles: ingest's read_outcome with the run's options).
Read = Callable[[Any, bool], Any]


def read_in_processes(tasks: Sequence[tuple[Any, bool]], read: Read, workers: int) -> Iterator[Outcome] | None:
    """(entry, read(entry, chunk)) for each (entry, chunk) task in order (an entry is a file with its `size`), run
    by up to `workers` processes; None where that does not pay or cannot be done (the caller then reads in this
    process)."""
    if workers < 2 or len(tasks) < MIN_FILES or sum(e.size for e, _ in tasks) < MIN_BYTES:
        return None
    users = [r for r in dict.fromkeys(READERS.values()) if not type(r).__module__.startswith(_BUILT_IN)]
    try:
        readers = pickle.dumps(users)
    except Exception:  # noqa: BLE001 - a reader defined where a worker cannot import it
        return None
    return _read(tasks, read, min(workers, len(tasks)), readers)


def _read(tasks: Sequence[tuple[Any, bool]], read: Read, workers: int, readers: bytes) -> Iterator[Outcome]:
    per_call = max(1, min(16, len(tasks) // (workers * 16)))
    batches = [tasks[start : start + per_call] for start in range(0, len(tasks), per_call)]
    done = ordered_map(
        _read_in_worker, batches, workers, doing="reading files", initializer=_start_worker, initargs=(read, readers)
    )
    with contextlib.closing(done):  # the workers stop when the caller stops reading, not when this is collected
        for batch, outcomes in zip(batches, done, strict=True):
            yield from zip((entry for entry, _ in batch), outcomes, strict=True)


_WORKER: dict[str, Any] = {}


def _start_worker(read: Read, readers: bytes) -> None:
    _WORKER["read"] = read
    for reader in pickle.loads(readers):
        register_reader(reader, replace=True)


def _read_in_worker(batch: Sequence[tuple[Any, bool]]) -> list[Any]:
    return [_WORKER["read"](entry, chunk) for entry, chunk in batch]
