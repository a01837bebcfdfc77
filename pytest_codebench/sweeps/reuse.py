"""Verdicts reached once and given again: from the store (an earlier run graded the sample) and
from a duplicate (a sample of this run with the same task and the same answer).

Before an item is graded (before its workspace is made) its key is looked up in the store
(``--codebench-store on`` or ``read``). Samples of one task whose answers are equal are found
at collection: the first is graded, the others wait for its verdict (a file lock per key, in
the run's folder, shared by every xdist worker; xdist's workers run duplicates after the
firsts so that they rarely wait) and take it, naming the item that was graded (``same_as``).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import platform
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock, Timeout

from ..benchmark import Benchmark
from ..cases import Case
from ..once import write_atomically
from ..options import CACHE_DIR, CORE_OPTIONS, STORE, Option
from ..reports.harness import verdict_code
from ..reports.reporting import ItemResult, reused
from ..runners import Runner
from ..verdict import Verdict
from .shared_store import SharedStore
from .store import FILE_NAME, Stored, StoreError, VerdictStore, decode, encode
from .stored_logs import bring_logs
from .verdict_keys import (
    RunIdentity,
    content_key,
    digest,
    grading_settings,
    item_key,
    machine_decided,
    machine_key,
    shareable,
    storable,
)

# Where a machine says who it is (systemd, then D-Bus): the same across reboots and renames.
MACHINE_ID_FILES = (Path("/etc/machine-id"), Path("/var/lib/dbus/machine-id"))


@dataclasses.dataclass(frozen=True)
class Origin:
    """Where a verdict not graded by its own item came from."""

    #: From the store: an earlier run graded it (``run`` names it).
    cached: bool = False
    #: The item of this run whose identical sample was graded.
    same_as: str | None = None
    run: str | None = None


ORIGIN_KEY = pytest.StashKey[Origin]()
# On an item one of whose duplicates is in this run: the content key they share.
SHARED_KEY = pytest.StashKey[str]()


def store_path(cache_dir: str) -> Path:
    return Path(cache_dir) / FILE_NAME


def machine_identity() -> str:
    """This machine's own name for itself (its machine-id), and its host name."""
    for path in MACHINE_ID_FILES:
        try:
            return f"{path.read_text().strip()}@{platform.node()}"
        except OSError:
            continue
    return platform.node()


def run_identity(benchmark: Benchmark, runner: Runner, runner_options: Sequence[Option[Any]]) -> RunIdentity:
    """What every verdict of this run depends on besides its task and answer (see verdict_keys)."""
    options = [*CORE_OPTIONS, *type(benchmark).options, *runner_options]
    return RunIdentity(
        benchmark=benchmark.name,
        harness=verdict_code(benchmark.name, Path(inspect.getfile(type(benchmark)))),
        runner=runner.fingerprint(),
        facts=benchmark.key_facts(runner),
        settings=grading_settings(benchmark.settings, options),
        machine=machine_identity() if benchmark.timed else None,
    )


class Reuse:
    """One process's side of reuse: the store's connection, the run's identity (computed on
    the first lookup), the digests of tasks seen, and the lock folder for duplicates."""

    def __init__(
        self, benchmark: Benchmark, identity: Callable[[Runner | None], RunIdentity], runner: Callable[[], Runner]
    ) -> None:
        self.benchmark = benchmark
        #: The run's own runner (a case of its own image brings its own).
        self.runner = runner
        given = benchmark.settings[STORE]
        #: The bucket a cluster shares (``s3://...``), in front of which the local file serves.
        self.url = given if given.startswith("s3://") else None
        self.mode = "on" if self.url else given
        self.path = store_path(benchmark.settings[CACHE_DIR])
        self.run = benchmark.context.run_dir.name
        self.shared = benchmark.context.run_dir / "duplicates"
        self._identity = identity
        self._tasks: dict[tuple[str | None, str], str] = {}
        self._digests_of: dict[str, str] = {}
        self._store: VerdictStore | SharedStore | None = None
        self._warned = False

    # -- the store ------------------------------------------------------------------------------

    def open(self) -> VerdictStore | SharedStore | None:
        """The store, opened on first use (None with ``--codebench-store off``). Raises
        :class:`StoreError` for a file that cannot serve, or a shared store out of reach."""
        if self.mode == "off":
            return None
        if self._store is None:
            local = VerdictStore(self.path, readable=self.mode in ("on", "read"), writable=self.mode != "read")
            self._store = SharedStore(self.url, local) if self.url else local
        return self._store

    def usage_error(self) -> str | None:
        """Why the store cannot serve this run (a usage error, before anything is graded), or None."""
        try:
            self.open()
        except StoreError as exc:
            return f"{STORE.cli}: {exc}; {STORE.cli} off runs without it"
        return None

    def close(self) -> None:
        if self._store is not None:
            self._store.close()

    @functools.cached_property
    def run_digest(self) -> str:
        return self._identity(None).digest()

    def _run_digest(self, runner: Runner | None) -> str:
        """The run's digest, or the digest of a case's own runner (another image): its
        fingerprint names the image that ran, so a verdict is reused only in that image."""
        if runner is None:
            return self.run_digest
        fingerprint = runner.fingerprint()
        if fingerprint not in self._digests_of:
            self._digests_of[fingerprint] = self._identity(runner).digest()
        return self._digests_of[fingerprint]

    # -- keys -------------------------------------------------------------------------------------

    def content_key(self, case: Case) -> str:
        """The sample's task and answer, hashed (each task's digest once per process)."""
        return content_key(*self._digests(case))

    def _digests(self, case: Case) -> tuple[str, str]:
        task = self._tasks.get((case.model, case.task_id))
        if task is None:
            task = self._tasks[(case.model, case.task_id)] = digest(self.benchmark.task_key(case))
        return task, digest(self.benchmark.answer(case))

    def plan(self, items: list[pytest.Item], *, move: bool) -> list[pytest.Item]:
        """``items`` with the duplicates (a sample whose task and answer an earlier item has)
        marked and, where ``move``, moved after the others, in the same order in every xdist
        worker. Only the answers of tasks with several samples are hashed."""
        cases = [(item, case) for item in items if (case := _gradable(item)) is not None]
        samples: dict[str, int] = {}
        for _, case in cases:
            samples[case.task_id] = samples.get(case.task_id, 0) + 1
        groups: dict[tuple[str, str], list[pytest.Item]] = {}
        for item, case in cases:
            if samples[case.task_id] > 1:
                groups.setdefault(self._digests(case), []).append(item)
        later: set[int] = set()
        for digests, members in groups.items():
            if len(members) > 1:
                key = content_key(*digests)
                for member in members:
                    member.stash[SHARED_KEY] = key
                later.update(id(member) for member in members[1:])
        if not later or not move:
            return items
        return [item for item in items if id(item) not in later] + [item for item in items if id(item) in later]

    # -- serving ----------------------------------------------------------------------------------

    def verdict(
        self, item: pytest.Item, case: Case, grade: Callable[[], Verdict], runner: Runner | None = None
    ) -> tuple[Verdict, Origin | None]:
        """The item's verdict: from the store, from a duplicate graded in this run, or
        ``grade()``'s (kept for the duplicates and the store where it may be); ``runner``: the
        case's own, where it is not the run's."""
        shared = item.stash.get(SHARED_KEY, None)
        store = self.open()
        if store is None and shared is None:
            return grade(), None
        content = shared or self.content_key(case)
        key = item_key(self._run_digest(runner), content) if store is not None else content
        if store is not None and store.readable:
            # The model's verdict, else a skip this machine decided (kept under its own key).
            hit = self._lookup(store, key) or self._lookup(store, machine_key(key, self.machine))
            if hit is not None and (hit.run != self.run or hit.item != case.id) and self._holds(case, hit, runner):
                if hit.run != self.run:
                    logs = self.benchmark.context.log_folder(case.id)
                    return bring_logs(hit.verdict, logs, hit.run), Origin(cached=True, run=hit.run)
                return hit.verdict, Origin(same_as=hit.item, run=hit.run)
        if shared is None:
            return self._graded(store, key, case, grade), None
        return self._once(shared, case, lambda: self._graded(store, key, case, grade))

    def _graded(
        self, store: VerdictStore | SharedStore | None, key: str, case: Case, grade: Callable[[], Verdict]
    ) -> Verdict:
        started = time.monotonic()
        verdict = grade()
        self._keep(store, key, Stored(verdict, self.run, case.id, time.monotonic() - started))
        return verdict

    def _once(self, shared: str, case: Case, grade: Callable[[], Verdict]) -> tuple[Verdict, Origin | None]:
        """``grade()`` for the first of a group of duplicates, the verdict it left (where
        :func:`shareable`) for the others; a file per group in the run's folder, under its lock."""
        self.shared.mkdir(parents=True, exist_ok=True)
        path = self.shared / f"{shared}.json"
        lock = FileLock(str(path) + ".lock")
        try:
            # Bounded by the item's own backstop; a holder that died released its lock.
            lock.acquire(timeout=case.timeout or -1)
        except Timeout:
            return grade(), None
        try:
            if path.exists():
                kept = json.loads(path.read_text())
                return decode(kept["verdict"]), Origin(same_as=kept["item"], run=self.run)
            verdict = grade()
            if shareable(verdict):
                write_atomically(path, json.dumps({"verdict": encode(verdict), "item": case.id}))
            return verdict, None
        finally:
            lock.release()

    def _holds(self, case: Case, hit: Stored, runner: Runner | None) -> bool:
        """Whether the benchmark may serve ``hit`` (see ``Benchmark.holds``)."""
        return self.benchmark.holds(case, hit.verdict, runner or self.runner())

    def _lookup(self, store: VerdictStore | SharedStore, key: str) -> Stored | None:
        try:
            return store.get(key)
        except Exception as exc:  # noqa: BLE001 - a store that fails mid-run costs a grading, never the item
            self._warn(f"could not read the verdict store {self.url or self.path} ({exc}); grading instead")
            return None

    @functools.cached_property
    def machine(self) -> str:
        return machine_identity()

    def _keep(self, store: VerdictStore | SharedStore | None, key: str, stored: Stored) -> None:
        if store is None or not storable(stored.verdict):
            return
        if machine_decided(stored.verdict):
            key = machine_key(key, self.machine)
        try:
            store.put(key, stored, self.benchmark.name)
        except Exception as exc:  # noqa: BLE001 - the verdict stands; only its reuse is lost
            self._warn(f"could not keep a verdict in the verdict store {self.url or self.path} ({exc})")

    def _warn(self, message: str) -> None:
        if not self._warned:  # once per process: the next failures say nothing new
            self._warned = True
            warnings.warn(message, pytest.PytestWarning, stacklevel=2)


def _gradable(item: pytest.Item) -> Case | None:
    """The case an item grades, where it has an answer to grade."""
    case: Case | None = getattr(item, "case", None)
    if case is None or case.error is not None or case.missing is not None:
        return None
    return case


def reuse_lines(results: list[ItemResult], reuse: Reuse) -> list[str]:
    """The terminal's account of reuse: how many verdicts came from the store, and how many
    gradings duplicates saved."""
    counts = reused(results)
    lines = []
    if reuse.mode != "off":
        lines.append(
            f"verdict store ({reuse.mode}): {counts['cached']} of {len(results)} items from earlier runs "
            f"({reuse.url or reuse.path})"
        )
    if counts["same_as"]:
        lines.append(
            f"duplicates: {counts['same_as']} samples identical to another of their task took its verdict "
            f"({counts['same_as']} gradings saved)"
        )
    return lines
