"""Several completions decoded together in one llama.cpp context: the batched side of `eval --parallel N`.

Why: one completion at a time leaves most of each llama_decode call's work unshared. Generating a token costs
about as much as reading the model's weights once, whether the batch holds one sequence's token or four; batching
N questions' next tokens into one call makes generation nearly N times cheaper per token. Prompt evaluation is
already batched and, on a CPU, bound by arithmetic, so it gains little: the speed-up of a whole evaluation depends
on how much of a question's time is generation (benchmarks/speed/decoding_bench.py measures it).

How: `eval --parallel N` runs N questions on N threads, each running the ordinary agent loop against the same
LlamaCppBackend. Each thread gets a slot (a llama.cpp sequence id) on its first call and keeps it; its calls to
`complete` hand a GuidedDecoder (backends/decoding.py: the same decisions as the one-sequence path) to this
scheduler and wait. One scheduler thread owns the context: it packs the pending work of every slot into each
llama_decode call (the next token, and any draft, of the slots that are generating first, then chunks of the
prompts being evaluated), then lets each slot's decoder pick its tokens from its own logits rows.

The context has one key/value cache shared by all sequences (kv_unified): the prompt start every question
shares is evaluated once and copied to the other sequences as cell references (llama_memory_seq_cp), not as
data, and each slot keeps its own sequence from step to step, so prefix reuse works per slot as it does for one
sequence. Its size is the context window times N, so every sequence can reach the full window.
"""

from __future__ import annotations

import ctypes
import threading
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from offline_agent.backends.decoding import GuidedDecoder
from offline_agent.backends.llama_batch import fill_batch
from offline_agent.backends.stream import common_prefix
from offline_agent.errors import ConfigError, ModelError


class BatchHost(Protocol):
    """What the scheduler uses of the backend that owns it (llamacpp.LlamaCppBackend): its loaded llama.cpp model
    and bindings, its sizes and threads, and its saved prompt prefixes. A protocol, so this module, which the
    backend imports, does not import the backend back."""

    _llama_cpp: Any
    llm: Any
    context_size: int
    n_batch: int
    n_ubatch: int
    threads: int
    flash_attn: bool

    def saved_prefix(self, tokens: list[int]) -> bytes | None: ...

    def save_prefix(self, tokens: list[int], ctx: Any, seq_id: int) -> None: ...


INTERRUPTED = "the evaluation was interrupted"


class _Aborted(Exception):
    """A cancel came while the scheduler was working: drop what it was doing."""


@dataclass(eq=False)
class _Job:
    """One request of a slot's thread: a completion to decode, or a prompt start to have in the cache."""

    slot: int
    tokens: list[int]
    decoder: GuidedDecoder | None  # None: warm the cache with `tokens`
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None
    cached: int = 0  # prompt tokens found in the slot's cache
    batch: list[int] = field(default_factory=list)  # the decoder's current batch
    committed: int = 0  # ... how many of its tokens are committed (the rest is a draft)
    evaluated: int = 0  # ... how many of them are in the cache
    base: int = 0  # the sequence length where the current batch starts


class _SlotLease:
    """A thread's hold on a slot; the slot goes back to the free list when the thread's local data is freed."""

    def __init__(self, free: list[int], slot: int) -> None:
        self._free = free
        self.slot = slot

    def __del__(self) -> None:
        self._free.append(self.slot)  # list.append is atomic: safe from whatever thread frees this


class BatchedScheduler:
    """N sequences in one llama.cpp context, decoded together by one thread for up to N calling threads."""

    def __init__(self, backend: BatchHost, slots: int) -> None:
        lib = backend._llama_cpp
        self._l = lib
        self.backend = backend
        self.slots = slots
        params = lib.llama_context_default_params()
        params.n_ctx = backend.context_size * slots
        params.n_batch = backend.n_batch
        params.n_ubatch = min(backend.n_batch, backend.n_ubatch)
        params.n_seq_max = slots
        params.n_threads = backend.threads
        params.n_threads_batch = backend.threads
        params.kv_unified = True
        params.no_perf = True
        params.flash_attn_type = (
            lib.LLAMA_FLASH_ATTN_TYPE_ENABLED if backend.flash_attn else lib.LLAMA_FLASH_ATTN_TYPE_DISABLED
        )
        params.type_k = params.type_v = backend.llm.context_params.type_k
        ctx = lib.llama_init_from_model(backend.llm._model.model, params)
        if not ctx:
            raise ModelError(f"llama.cpp cannot make a context of {params.n_ctx} tokens for {slots} sequences")
        batch = lib.llama_batch_init(backend.n_batch, 0, 1)
        weakref.finalize(self, _free_context, lib, ctx, batch)
        self._ctx = ctx
        self._memory = lib.llama_get_memory(ctx)
        self._batch = batch
        self.n_batch = backend.n_batch
        self.n_vocab = backend.llm.n_vocab()
        self._held: list[list[int]] = [[] for _ in range(slots)]  # the tokens each sequence holds
        self._free = list(range(slots - 1, -1, -1))
        self._local = threading.local()
        self._changed = threading.Condition()
        self._queue: deque[_Job] = deque()
        self._active: list[_Job] = []
        self._thread: threading.Thread | None = None
        self._busy = threading.Lock()  # held by the scheduler thread while it works in llama.cpp
        self._cancelled = False
        self._failure: str | None = None

    # ---- the calling threads ----------------------------------------------------------------------------------

    def run(self, tokens: list[int], decoder: GuidedDecoder) -> int:
        """Decode one completion after the prompt `tokens` in this thread's slot; returns the prompt tokens that
        were already in the slot's cache. Blocks until the decoder is done."""
        return self._submit(_Job(self._slot(), tokens, decoder)).cached

    def warm(self, tokens: list[int]) -> None:
        """Have `tokens` (the prompt start every question shares) in this thread's slot: already there, copied
        from another slot, loaded from a saved cache, or else evaluated (and saved)."""
        self._submit(_Job(self._slot(), tokens, None))

    def cancel(self) -> None:
        """Stop: the completions in flight end with a ModelError now, new ones are refused until `resume`, and
        this returns once the scheduler thread has left llama.cpp (after the llama_decode call in progress, at
        most one batch of n_batch tokens: as long as Ctrl-C waits in the one-sequence path)."""
        with self._changed:
            self._cancelled = True
            # the active jobs stay listed: the scheduler thread may be decoding them, and forgets them itself
            self._end_jobs(INTERRUPTED)
            self._changed.notify_all()
        if self._busy.acquire(timeout=60):
            self._busy.release()

    def resume(self) -> None:
        """Take completions again after `cancel`."""
        with self._changed:
            self._cancelled = False

    def _slot(self) -> int:
        lease = getattr(self._local, "lease", None)
        if lease is None:
            try:
                slot = self._free.pop()
            except IndexError:
                raise ConfigError(
                    f"more threads than the {self.slots} parallel sequences of this llama.cpp backend"
                ) from None
            lease = self._local.lease = _SlotLease(self._free, slot)
        return lease.slot

    def _submit(self, job: _Job) -> _Job:
        with self._changed:
            if self._failure is not None:
                raise ModelError(f"batched decoding stopped earlier: {self._failure}")
            if self._cancelled:
                raise ModelError(INTERRUPTED)
            self._queue.append(job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="llama.cpp batch", daemon=True)
                self._thread.start()
            self._changed.notify_all()
        job.done.wait()
        if job.error is not None:
            raise job.error
        return job

    # ---- the scheduler thread ---------------------------------------------------------------------------------

    def _serve(self) -> None:
        try:
            while True:
                with self._changed:
                    while not self._queue and not self._active:
                        self._changed.wait()
                    arrived = list(self._queue)
                    self._queue.clear()
                with self._busy:
                    try:
                        if self._cancelled:
                            raise _Aborted
                        for job in arrived:
                            self._admit(job)
                        if self._active:
                            self._step()
                    except _Aborted:
                        self._forget()
        except BaseException as exc:  # the context is in an unknown state: fail everything, refuse what comes
            with self._changed:
                self._failure = str(exc) or type(exc).__name__
                self._fail_all(f"llama.cpp failed while generating: {self._failure}")
                self._thread = None

    def _forget(self) -> None:
        """After a cancel: drop the jobs (their threads were told) and every sequence (simpler than tracking what
        the interrupted work left in each)."""
        with self._changed:
            self._fail_all(INTERRUPTED)
        self._l.llama_memory_clear(self._memory, True)
        self._held = [[] for _ in range(self.slots)]

    def _decode(self) -> None:
        code = self._l.llama_decode(self._ctx, self._batch)
        if self._cancelled:
            raise _Aborted
        if code != 0:
            raise RuntimeError(f"llama_decode returned {code}")

    def _fail_all(self, message: str) -> None:
        """End every queued and active job with a ModelError and drop them all (the caller holds the lock)."""
        self._end_jobs(message)
        self._active.clear()

    def _end_jobs(self, message: str) -> None:
        """End every queued and active job not yet done with a ModelError, and empty the queue (the caller holds
        the lock)."""
        for job in [*self._queue, *self._active]:
            if not job.done.is_set():
                job.error = ModelError(message)
                job.done.set()
        self._queue.clear()

    def _admit(self, job: _Job) -> None:
        if job.done.is_set():  # cancelled while queued
            return
        if job.decoder is None:
            self._warm(job.slot, job.tokens)
            job.done.set()
            return
        held = self._held[job.slot]
        job.cached = min(common_prefix(held, job.tokens), len(job.tokens) - 1)
        self._cut(job.slot, job.cached)
        job.decoder.start(job.tokens[job.cached :])
        self._next_batch(job)
        self._active.append(job)

    def _next_batch(self, job: _Job) -> None:
        assert job.decoder is not None
        job.batch, job.committed = job.decoder.next_batch()
        job.evaluated = 0
        job.base = len(self._held[job.slot])

    def _step(self) -> None:
        """One llama_decode call over the pending work of every active slot, then each slot's token choice."""
        entries: list[tuple[int, int, int, bool]] = []
        rows: list[tuple[_Job, int]] = []  # jobs whose logits rows are in this call, and where they start

        def add(job: _Job, tokens: list[int], logits: bool) -> None:
            held = self._held[job.slot]
            entries.extend((token, len(held) + i, job.slot, logits) for i, token in enumerate(tokens))
            held.extend(tokens)
            job.evaluated += len(tokens)

        def add_tail(job: _Job) -> None:
            tail = job.batch[job.committed - 1 :]
            if job.evaluated == job.committed - 1 and len(tail) <= self.n_batch - len(entries):
                rows.append((job, len(entries)))
                add(job, tail, True)

        for job in self._active:  # the slots that are generating: their next token (and draft) first
            add_tail(job)
        for job in self._active:  # then prompt evaluation, in chunks, as far as the batch has room
            head = job.committed - 1
            room = self.n_batch - len(entries)
            if job.evaluated < head and room > 0:
                add(job, job.batch[job.evaluated : min(head, job.evaluated + room)], False)
                add_tail(job)
        if not entries:
            raise RuntimeError(f"a batch of {self.n_batch} tokens cannot hold a token and its draft")
        fill_batch(self._batch, entries)
        self._decode()
        for job, start in rows:
            assert job.decoder is not None
            job.decoder.stream.prompt_done()
            kept = job.decoder.take(self._rows_from(start))
            self._cut(job.slot, job.base + kept)
            if job.decoder.done:
                self._active.remove(job)
                job.done.set()
            else:
                self._next_batch(job)

    def _rows_from(self, start: int) -> Callable[[int], np.ndarray]:
        def row(j: int) -> np.ndarray:
            logits = self._l.llama_get_logits_ith(self._ctx, start + j)
            return np.ctypeslib.as_array(logits, shape=(self.n_vocab,))

        return row

    def _cut(self, slot: int, length: int) -> None:
        """Keep the first `length` tokens of a slot's sequence."""
        held = self._held[slot]
        if length < len(held):
            self._l.llama_memory_seq_rm(self._memory, slot, length, -1)
            del held[length:]

    def _warm(self, slot: int, tokens: list[int]) -> None:
        if common_prefix(self._held[slot], tokens) >= len(tokens):
            return
        for other, held in enumerate(self._held):
            if other != slot and common_prefix(held, tokens) >= len(tokens):
                self._cut(slot, 0)
                self._l.llama_memory_seq_cp(self._memory, other, slot, 0, len(tokens))
                self._held[slot] = list(tokens)
                return
        self._cut(slot, 0)
        state = self.backend.saved_prefix(tokens)
        if state is not None:
            buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
            if self._l.llama_state_seq_set_data(self._ctx, buffer, len(state), slot):
                self._held[slot] = list(tokens)
                return
            self._l.llama_memory_seq_rm(self._memory, slot, 0, -1)
        held = self._held[slot]
        for start in range(0, len(tokens), self.n_batch):
            chunk = tokens[start : start + self.n_batch]
            fill_batch(self._batch, [(token, start + i, slot, False) for i, token in enumerate(chunk)])
            self._decode()
            held.extend(chunk)
        self.backend.save_prefix(tokens, self._ctx, slot)


def _free_context(lib: Any, ctx: Any, batch: Any) -> None:
    lib.llama_batch_free(batch)
    lib.llama_free(ctx)
