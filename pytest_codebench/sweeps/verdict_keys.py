"""What a stored verdict is keyed by: everything that decides it, hashed. Pure functions.

A verdict is reused only where its key matches: the benchmark, the task's record, the model's
normalised answer, the harness that graded (its version and a digest of the code that can change
the benchmark's verdicts, the core and the benchmark's own package: a change to that code never
reuses an old verdict, and a change to another benchmark grades nothing again), the runner's
fingerprint (host, image), the machine facts the benchmark says matter (toolkit, GPUs, compiler)
and every setting that can change a verdict. A timing verdict (a speedup) also carries the
machine's own identity: it is reused only on the machine that measured it; so does a skip the
machine decided (no GPU). A verdict that rests on what grading found besides (ComputeEval: the
outcome of the problem's reference here) is served only where its benchmark says it still holds
(``Benchmark.holds``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable
from typing import Any

from ..options import Option, Settings
from ..verdict import Status, Verdict

# Made once: json.dumps with options builds an encoder per call, a third of a digest's cost.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def canonical(value: Any) -> bytes:
    """``value`` as JSON with sorted keys and no spaces: equal data, equal bytes, in every
    process and on every machine. What JSON cannot hold is written as its ``str``."""
    return _ENCODER.encode(value).encode("utf-8", "surrogatepass")


def digest(value: Any) -> str:
    """The sha256 of ``value``'s canonical JSON, in hex."""
    return hashlib.sha256(canonical(value)).hexdigest()


def content_key(task: str, answer: str) -> str:
    """One sample's identity within a run: its task's digest and its answer's. Two samples
    with the same content key get the same verdict (they are graded once)."""
    return hashlib.sha256(f"{task}\0{answer}".encode()).hexdigest()


def item_key(run: str, content: str) -> str:
    """The store's key of one sample: what the whole run shares (``run``, the digest of a
    :class:`RunIdentity`) and the sample's own content key."""
    return hashlib.sha256(f"{run}\0{content}".encode()).hexdigest()


@dataclasses.dataclass(frozen=True)
class RunIdentity:
    """What every verdict of a run depends on besides its task and its answer."""

    benchmark: str
    #: ``verdict_code()``: the package version and a digest of the core and the benchmark's own code.
    harness: str
    #: ``runner.fingerprint()``: the host and how commands run there (an image, a sandbox).
    runner: str
    #: What the benchmark probed of the machine that decides a verdict (``Benchmark.key_facts``).
    facts: dict[str, Any]
    #: Every setting that can change a verdict, by option name (:func:`grading_settings`).
    settings: dict[str, Any]
    #: The machine's own identity, for timing verdicts (``Benchmark.timed``); else None.
    machine: str | None = None

    def digest(self) -> str:
        return digest(dataclasses.asdict(self))


def grading_settings(settings: Settings, options: Iterable[Option[Any]]) -> dict[str, Any]:
    """The value of each of ``options`` that can change a verdict (all but those declared
    ``grading=False``: where reports go, k, the fail-under bar, the run directory, the shard...)."""
    return {option.name: settings[option] for option in options if option.grading}


def storable(verdict: Verdict) -> bool:
    """Whether the store keeps ``verdict`` for later runs: the model's own verdicts (passed or
    failed), and the skips this machine decided (:func:`machine_decided`), under a key of their
    own. A harness error or any other skip may not happen again (another moment): a later run
    grades the item again."""
    return verdict.outcome.status in (Status.PASSED, Status.FAILED) or machine_decided(verdict)


def machine_decided(verdict: Verdict) -> bool:
    """A skip the benchmark excused as this machine's doing (no GPU, a toolkit too old, the
    problem's reference failing here too): it holds on this machine as long as what the run
    probed of it (the toolkit, the GPUs: the run's ``facts``) holds, and on no other."""
    return verdict.outcome.status is Status.SKIPPED and verdict.excused


def machine_key(key: str, machine: str) -> str:
    """The store's key of a :func:`machine_decided` skip: the sample's ``key`` and the
    machine's own identity, so that another machine (or this one given a GPU, which changes
    the run's facts and so ``key``) grades the sample again."""
    return hashlib.sha256(f"{key}\0machine\0{machine}".encode()).hexdigest()


def shareable(verdict: Verdict) -> bool:
    """Whether the duplicates of a sample in the same run take its ``verdict`` as theirs: the
    model's verdicts, and the skips and errors the benchmark excused as this machine's doing
    (the same machine, the same answer: the same excuse). Any other skip or error (one that
    counts as failed only because the model's code had run) is graded again."""
    return storable(verdict) or verdict.excused
