"""Whether this machine can grade a problem at all: the problem's own reference solution,
built and tested here, remembered in the cache directory.

A model's build or test failure only counts when the reference passes the same steps here.
The check runs only after a failure, so a run whose solutions pass pays nothing for it.

Three rules keep a remembered outcome true:

- Its key is everything that can change it: the problem's record, and the verdict store's own
  identity of the run (:func:`~pytest_codebench.sweeps.reuse.run_identity`: the harness's
  code, the runner's fingerprint, the toolkit and GPUs probed, every setting that can change a
  verdict, ``--codebench-run-without-gpu`` among them). No hand list of settings to forget one.
- A failing outcome (the reference did not build or pass here, or errored) is trusted only in
  the run that found it: before it excuses or blames a model in a later run, the reference
  runs again, once per run. A pass or a skip is trusted from the cache: what decides it is in
  its key.
- A verdict the reference's outcome decided carries that outcome's key and what of it decided
  (:func:`rests_on`); the verdict store serves it again only while the reference, checked by
  the same rules, still decides the same (:meth:`References.holds`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

from filelock import FileLock

from pytest_codebench.cases import Case
from pytest_codebench.once import write_atomically
from pytest_codebench.options import Option
from pytest_codebench.runners import Runner
from pytest_codebench.sweeps.verdict_keys import RunIdentity, digest
from pytest_codebench.verdict import Outcome, Status, Verdict

from . import patched
from .rules import SKIP_KIND

# Bumped when what a stored answer means changes, so older answers are not trusted
# (2: tests run under the main guard, and a skip records how it skipped; 3: a pass also
# passed its canary run; 4: keyed by the run's identity, and a failure names its run).
FORMAT = 4
# A verdict's figures that say it rests on the reference: the reference's key, and its outcome
# as it decided (with how it skipped, where it did).
REFERENCE_KEY = "reference_key"
REFERENCE_OUTCOME = "reference_outcome"
# Outcomes of a reference that are checked again in each run before they are used.
FAILING = (Status.FAILED, Status.ERROR)


class StoredReference(TypedDict):
    """What the cache keeps of one reference run."""

    outcome: str
    """The reference's outcome (``passed``, ``build_error``, ``skipped``...)."""
    reason: str
    output_tail: str
    """The tail of the failing command's output, where the first error line is found."""
    skip: str
    """How its test said it could not judge here (no GPU, exit 200, a SKIP line), else ""."""
    run: str
    """The run (its folder's name) that ran it: a failing outcome is trusted only there."""


def reference_key(record: Mapping[str, Any], identity: str) -> str:
    """Names one reference outcome: the problem's exact record and ``identity``, the digest of
    the verdict store's :class:`~pytest_codebench.sweeps.verdict_keys.RunIdentity` for the
    runner that runs it."""
    named = {"format": FORMAT, "problem": record, "run": identity}
    return digest(named)[:40]


def decision(reference: Verdict) -> str:
    """What of a reference's outcome decides a model's verdict: the outcome, and how the test
    skipped where it did (``skipped (no-gpu)``)."""
    kind = reference.figures.get(SKIP_KIND)
    return f"{reference.outcome.value} ({kind})" if kind else reference.outcome.value


def rests_on(verdict: Verdict, key: str, reference: Verdict) -> Verdict:
    """``verdict``, which the reference's outcome decided (a failure it let stand, a skip it
    excused or refused), carrying that outcome's key and :func:`decision`."""
    figures = {**verdict.figures, REFERENCE_KEY: key, REFERENCE_OUTCOME: decision(reference)}
    return dataclasses.replace(verdict, figures=figures)


def trusted(stored: Mapping[str, Any], run: str) -> bool:
    """Whether a cached outcome may be used in ``run`` without running the reference again."""
    return Outcome(stored["outcome"]).status not in FAILING or stored.get("run") == run


class ReferenceCache:
    """References' outcomes by :func:`reference_key`, shared by every run on the machine.

    One process runs a given reference while the others wait for its answer (a file lock per
    key). Harness trouble during the run (an exception) is not stored: the next item tries again.
    """

    def __init__(self, cache_dir: Path, run: str) -> None:
        self.directory = cache_dir / "computeeval" / "references"
        self.run = run

    def outcome(self, key: str, run: Callable[[], Verdict]) -> Verdict:
        """The outcome under ``key``: the cached one where :func:`trusted`, else ``run()``'s, kept."""
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"{key}.json"
        with FileLock(str(path) + ".lock"):
            if path.exists():
                stored: StoredReference = json.loads(path.read_text())
                if trusted(stored, self.run):
                    figures: dict[str, float | str] = {SKIP_KIND: stored["skip"]} if stored["skip"] else {}
                    return Verdict(
                        Outcome(stored["outcome"]), stored["reason"], output_tail=stored["output_tail"], figures=figures
                    )
            verdict = run()
            stored = {
                "outcome": verdict.outcome.value,
                "reason": verdict.reason,
                "output_tail": verdict.output_tail,
                "skip": str(verdict.figures.get(SKIP_KIND, "")),
                "run": self.run,
            }
            write_atomically(path, json.dumps(stored))
            return verdict


@dataclasses.dataclass(frozen=True)
class References:
    """The problems' references as a run asks for them: ``identity(runner, runner.options)``
    is the verdict store's identity of the run for a runner (``run_identity``);
    ``run_reference(case, runner, baseline)`` grades a reference."""

    cache: ReferenceCache
    identity: Callable[[Runner, Sequence[Option[Any]]], RunIdentity]
    run_reference: Callable[[Case, Runner, dict[str, Any]], Verdict]

    def check(self, case: Case, runner: Runner, graded: Verdict | None = None) -> tuple[str, Verdict] | None:
        """The key and the outcome of the case's reference here; None where the problem has
        none. ``graded``: the item's own verdict, the reference's where its files are the
        reference's (it is not graded twice)."""
        record, baseline = case.record, case.record.get("baseline_solution")
        if not isinstance(baseline, dict):
            return None
        key = reference_key(record, self.identity(runner, runner.options).digest())
        if graded is not None and patched.tree_of(record, baseline) == patched.tree_of(record, case.solution):
            own: Verdict = graded
            return key, self.cache.outcome(key, lambda: own)
        return key, self.cache.outcome(key, lambda: self.run_reference(case, runner, baseline))

    def holds(self, case: Case, verdict: Verdict, runner: Runner) -> bool:
        """Whether a stored ``verdict`` of ``case`` may be served: one that rested on the
        reference only while the reference, checked again here, decides the same."""
        if REFERENCE_KEY not in verdict.figures:
            return True
        checked = self.check(case, runner)
        if checked is None:
            return False
        key, reference = checked
        return verdict.figures[REFERENCE_KEY] == key and verdict.figures.get(REFERENCE_OUTCOME) == decision(reference)
