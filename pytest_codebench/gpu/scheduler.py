"""Who may use which GPU: one readers/writer lock per GPU, machine-wide.

Correctness tests share a GPU (a bounded number at once); timing and profiling phases hold it
alone. Every process of every run of this user on the machine (xdist workers included) agrees
through FileLock files in the per-user lock folder, so nothing needs a server and a holder that
dies drops its locks with its file descriptors.

Per GPU there are three kinds of lock file: a *queue*, a *gate* and a row of *slots*.

- A shared holder passes the queue and the gate (takes each and lets it go at once) while it
  takes one free slot among the first ``slots``; it then holds only that slot.
- An exclusive holder takes the queue, then the gate (waiting behind another exclusive holder
  if need be), lets the queue go for the next exclusive waiter, and takes every slot file as
  the shared holders before it finish. From the moment it holds the queue, no new shared holder
  starts on that GPU (writer preference: a stream of short tests cannot starve a timing phase,
  and no test slips in between two timing phases waiting in turn).

Every lock is only ever *tried* (never waited on while another is held), so no cycle of waits
can form; waits are polls with a deadline that end in a HarnessError saying what they waited for.

filelock (4.x) ships a ``ReadWriteLock`` of its own; it is not used, because (1) its readers are
unbounded, and bounded sharing is the point here, so slot locks would be needed beside it anyway;
(2) it rides on SQLite's locks, whose writer preference its own code says holds only while the
wait runs in one piece in a process with a single thread (pytest-timeout's thread method, or any
helper thread, makes it retry in 50 ms attempts, between which the writer holds nothing); (3)
picking any free GPU among several needs non-blocking tries on each, which again drop the claim.
Plain FileLocks (flock), tried without blocking, give all three.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

from filelock import FileLock, Timeout

from ..errors import HarnessError
from ..once import lock_folder

# ``--codebench-gpu-share`` lets any number of tests share a GPU; in practice the number is
# bounded by the tests that can run at once (one per xdist worker of each run), and a GPU could
# not hold many more CUDA contexts than this anyway (each takes some hundreds of MiB of device
# memory). The exclusive holder takes every slot file up to this cap, whatever bound the shared
# holders of each run set, so runs with different --codebench-gpu-slots still keep a timing phase
# alone; the cap keeps that to a few dozen files.
SHARE_CAP = 64

# Shared holders taken by this process, per GPU lock path: an exclusive request inside one
# would wait for itself until its timeout.
_HELD_HERE: Counter[str] = Counter()


def parse_slots(text: str) -> int:
    """``--codebench-gpu-slots``: 1 to SHARE_CAP."""
    try:
        value = int(text.strip())
    except ValueError:
        raise ValueError(f"not an integer: {text.strip()!r}") from None
    if not 1 <= value <= SHARE_CAP:
        raise ValueError(f"must be from 1 to {SHARE_CAP}, not {value} (--codebench-gpu-share lifts the bound)")
    return value


class _Gpu:
    """One GPU's lock files (slot locks are made as they are first needed)."""

    def __init__(self, directory: Path, gpu: str) -> None:
        self.id = gpu
        # A GPU id may be a UUID or a MIG name (``MIG-GPU-…/1/0``): keep it a plain file name.
        self.name = re.sub(r"[^\w.-]", "_", gpu)
        self.queue = FileLock(str(directory / f"gpu-{self.name}-queue.lock"))
        self.gate = FileLock(str(directory / f"gpu-{self.name}.lock"))
        self._directory = directory
        self._slots: list[FileLock] = []

    def slot(self, index: int) -> FileLock:
        while len(self._slots) <= index:
            self._slots.append(FileLock(str(self._directory / f"gpu-{self.name}-slot-{len(self._slots)}.lock")))
        return self._slots[index]

    def enter(self, index: int) -> FileLock | None | bool:
        """For a shared holder: slot ``index``, taken while no exclusive holder waits for or
        holds the GPU; None where that slot is taken; False where the GPU is closed to new
        shared holders (queue or gate held)."""
        if not _try(self.queue):
            return False
        try:
            if not _try(self.gate):
                return False
            try:
                slot = self.slot(index)
                return slot if _try(slot) else None
            finally:
                self.gate.release()
        finally:
            self.queue.release()


def _try(lock: FileLock) -> bool:
    """``lock`` taken without waiting. One this thread holds already counts as taken: FileLock
    would nest, and two holders of one slot in a process would be one to the others."""
    if lock.is_locked:
        return False
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return False
    return True


class _Claim:
    """An exclusive holder's progress on one GPU: queued (holds its queue lock: waits behind
    another exclusive holder, and no new shared holder starts), gated (holds its gate: the same,
    and the queue is free for the next exclusive waiter), then every slot: alone."""

    QUEUED, GATED, ALONE = 1, 2, 3

    def __init__(self, gpu: _Gpu) -> None:
        self.gpu = gpu
        self.queued = self.gated = False
        self.slots: list[FileLock] = []

    def advance(self) -> int:
        """As far as it gets without waiting; the level reached (0: not even queued)."""
        if not self.gated:
            self.queued = self.queued or _try(self.gpu.queue)
            if not self.queued:
                return 0
            self.gated = _try(self.gpu.gate)
            if not self.gated:
                return self.QUEUED
            self.gpu.queue.release()
            self.queued = False
        # Slots in order, up to one still held: the gate is held, so a slot let go is never
        # taken by a new shared holder and the next round goes on from there.
        while len(self.slots) < SHARE_CAP:
            slot = self.gpu.slot(len(self.slots))
            if not _try(slot):
                return self.GATED
            self.slots.append(slot)
        return self.ALONE

    def release(self) -> None:
        for slot in reversed(self.slots):
            slot.release()
        self.slots.clear()
        for held, lock in ((self.gated, self.gpu.gate), (self.queued, self.gpu.queue)):
            if held:
                lock.release()
        self.queued = self.gated = False


class _Backoff:
    """Polls until a deadline, sleeping a little longer each time (1 ms up to 0.1 s)."""

    def __init__(self, wait: float) -> None:
        self.deadline = time.monotonic() + wait
        self.delay = 0.001

    def more(self) -> bool:
        if time.monotonic() > self.deadline:
            return False
        time.sleep(self.delay)
        self.delay = min(self.delay * 2, 0.1)
        return True


class GpuScheduler:
    """One readers/writer lock per GPU, machine-wide (FileLock files in the lock folder)."""

    def __init__(self, directory: Path, gpus: Sequence[str], slots: int | None) -> None:
        if not gpus:
            raise ValueError("no GPU to schedule")
        if slots is not None and not 1 <= slots <= SHARE_CAP:
            raise ValueError(f"slots must be from 1 to {SHARE_CAP}, not {slots}")
        lock_folder(directory)
        self.slots = SHARE_CAP if slots is None else slots
        self._gpus = [_Gpu(directory, gpu) for gpu in gpus]

    @property
    def _ids(self) -> str:
        return ", ".join(gpu.id for gpu in self._gpus)

    @contextlib.contextmanager
    def shared(self, wait: float) -> Iterator[str]:
        """A GPU id with a free shared slot, held until the block ends."""
        backoff = _Backoff(wait)
        while (taken := self._enter()) is None:
            if not backoff.more():
                bound = "" if self.slots == SHARE_CAP else f" (at most {self.slots} at once per GPU)"
                raise HarnessError(
                    f"waited {wait:.0f} s for a shared slot on GPU {self._ids}{bound}: "
                    "other tests, or timing phases holding the GPU alone, kept them"
                )
        gpu, slot = taken
        _HELD_HERE[gpu.gate.lock_file] += 1
        try:
            yield gpu.id
        finally:
            _HELD_HERE[gpu.gate.lock_file] -= 1
            slot.release()

    def _enter(self) -> tuple[_Gpu, FileLock] | None:
        """The lowest free slot over all GPUs (so tests spread evenly over several), on a GPU
        no exclusive holder waits for or holds."""
        closed: set[str] = set()
        for index in range(self.slots):
            for gpu in self._gpus:
                if gpu.id in closed:
                    continue
                slot = gpu.enter(index)
                if slot is False:
                    closed.add(gpu.id)
                elif isinstance(slot, FileLock):
                    return gpu, slot
        return None

    @contextlib.contextmanager
    def exclusive(self, wait: float) -> Iterator[str]:
        """A GPU held alone: its shared holders drain first, and no new one starts on it until
        the block ends."""
        held = [gpu.id for gpu in self._gpus if _HELD_HERE[gpu.gate.lock_file]]
        if held:
            raise RuntimeError(f"this process holds GPU {', '.join(held)} shared and asks for it alone")
        claim = self._claim(wait)
        try:
            yield claim.gpu.id
        finally:
            claim.release()

    def _claim(self, wait: float) -> _Claim:
        """Every round, the GPU that gets furthest: wholly free, else one whose shared holders
        it can wait out (new ones kept off), else a place in the queue behind another exclusive
        holder; it moves to another GPU only where that one gets further."""
        backoff = _Backoff(wait)
        claim: _Claim | None = None
        level = 0
        try:
            while True:
                if claim is not None:
                    level = claim.advance()
                for gpu in self._gpus:
                    if level == _Claim.ALONE:
                        break
                    if claim is not None and gpu is claim.gpu:
                        continue
                    other = _Claim(gpu)
                    reached = other.advance()
                    if reached > level:
                        if claim is not None:
                            claim.release()
                        claim, level = other, reached
                    else:
                        other.release()
                if claim is not None and level == _Claim.ALONE:
                    return claim
                if not backoff.more():
                    raise HarnessError(f"waited {wait:.0f} s to hold a GPU alone (GPU {self._ids}): {_why(claim)}")
        except BaseException:
            if claim is not None:
                claim.release()
            raise


def _why(claim: _Claim | None) -> str:
    if claim is None:
        return "other timing phases waited for or held every GPU"
    if claim.gated:
        return f"tests sharing GPU {claim.gpu.id} did not finish"
    return f"another timing phase held GPU {claim.gpu.id} alone"
