"""TensorBench: a model's patch to the Scorch repository, graded by Scorch's whole test suite.

One item per (task, prediction); predictions follow SWE-bench (``instance_id``,
``model_name_or_path``, ``model_patch``). Each item gets a work tree of the task's
``base_commit`` from a machine-wide mirror, applies the patch with SWE-bench's fallbacks, then
runs the task's commands in an environment the harness provisions once (a venv per set of
requirements, or an image under the Docker runner): the setup commands, the extension rebuild,
and the suite, whose own JUnit XML gives the verdict.

The phases live apart: reading tasks and predictions (load), the environment, its compiler
cache and the baseline run that fills it (environment, cache), running the commands (suite)
and what their results mean (rules). What makes a later task of a base commit cheap: the
environment is built once, and the compiler cache shared by every item of the machine holds
the extension's objects and the kernels the suite compiles at run time.
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from pytest_codebench.benchmark import Benchmark
from pytest_codebench.cases import Case, Dataset
from pytest_codebench.errors import DatasetError
from pytest_codebench.grading import Grading
from pytest_codebench.options import SOLUTIONS, K
from pytest_codebench.reports.metrics import describe_excluded, describe_pass_at_k, pass_at_ks, score_intervals
from pytest_codebench.reports.reporting import ItemResult, Summary, examples
from pytest_codebench.sweeps.solution_sets import SolutionSet, find_sets
from pytest_codebench.verdict import Outcome, Verdict
from pytest_codebench.workspace.files import UnsafePath
from pytest_codebench.workspace.patches import apply, confined, parse

from .cache import CACHE_HINT
from .edits import hook_edits, merged, static_edits
from .environment import Provisioner, check_environment, mirror
from .load import GOLD, baseline_limits, read_tasks, split_by_model, without_gold
from .load import load as read_dataset
from .options import ALLOW_HARNESS_EDITS, COMPILER_CACHE, FAIL_VACUOUS, OPTIONS, RERUNS, RUN_TESTS
from .rules import canaries_counted_apart, known_failures, missing_tests, with_harness_edits, with_vacuous
from .suite import TESTBED, TreeRun
from .swebench import SWEBENCH_DIR, write_swebench
from .twin import test_files
from .vacuous import vacuous_tests


class TensorBench(Benchmark):
    name = "tensorbench"
    default_dataset = "tensorbench/tensorbench.json"
    options = (*OPTIONS, SWEBENCH_DIR)
    # SWE-bench's predictions, one file per model: NAME.jsonl (or a JSON list, NAME.json).
    solution_suffixes = (".jsonl", ".json")
    # Each task's reference patch (its ``patch`` field), as SWE-bench's ``gold`` predictions.
    solution_keywords = ("gold",)

    @functools.cached_property
    def solution_sets(self) -> list[SolutionSet]:
        """As every benchmark's, with a predictions file of several ``model_name_or_path``
        values one set per model (SWE-bench's convention)."""
        return split_by_model(find_sets(self.settings[SOLUTIONS], self.solution_suffixes), self.dataset_path())

    def load(self) -> Dataset:
        return read_dataset(self.dataset_path(), self.solution_sets)

    @functools.cached_property
    def baseline_limits(self) -> dict[str, float]:
        """Per base commit, its baseline's time limit, read once per process (a worker's too)."""
        return baseline_limits(read_tasks(self.dataset_path()))

    def answer(self, case: Case) -> Any:
        return (case.solution or {}).get("model_patch") or ""  # not the prediction's model name

    def marks(self, case: Case) -> list[pytest.MarkDecorator]:
        # Under --dist loadgroup, a base commit's items share a worker and its warm caches
        # (by the commit itself: case.group is the name readers see, a task's category).
        commit = case.record.get("base_commit")
        return [pytest.mark.xdist_group(commit[:12])] if isinstance(commit, str) and commit else []

    @functools.cached_property
    def no_gold_patch(self) -> list[str]:
        """With ``--codebench-solutions gold``: the tasks that have no reference patch, which
        gold has no item for (none else, or where the dataset cannot be read: loading says why)."""
        try:
            if not any(each.path == GOLD for each in self.solution_sets):
                return []
            return without_gold(read_tasks(self.dataset_path()))
        except (OSError, ValueError, DatasetError):
            return []

    def left_out(self) -> tuple[str, int]:
        """Gold's run is over the tasks that have a reference patch: a selection, which every
        output names (a model's run leaves no task out: one it did not answer fails)."""
        missing = self.no_gold_patch
        if not missing:
            return "", 0
        count = f"{len(missing)} task{'s' * (len(missing) != 1)}"
        return f"{SOLUTIONS.cli} gold ({count} without a gold patch: {examples(missing)})", len(missing)

    def report_info(self) -> dict[str, Any]:
        # Every task gold left out, by id (the scope's line names a few).
        gold = any(each.path == GOLD for each in self.solution_sets)
        return {"no_gold_patch": self.no_gold_patch} if gold else {}

    # -- checkout and patch ----------------------------------------------------------------------

    def prepare(self, case: Case, workspace: Path) -> str | None:
        commit = case.record["base_commit"]
        mirror(self.context, case.record, self.dataset_path().parent).worktree(commit, workspace / TESTBED)
        patch = (case.solution or {}).get("model_patch") or ""
        (workspace / "model.patch").write_text(patch if patch.endswith("\n") or not patch else patch + "\n")
        try:
            confined(workspace / TESTBED, parse(patch))
        except UnsafePath as exc:
            return f"the patch writes outside the repository: {exc}"
        return None

    # -- grading ---------------------------------------------------------------------------------

    def grade(self, grading: Grading) -> Verdict:
        case, runner = grading.case, grading.runner
        diff = parse((case.solution or {}).get("model_patch") or "")
        if diff.empty:
            return grading.verdict(Outcome.EMPTY_PATCH, "the prediction's model_patch is empty")
        tree = grading.workspace / TESTBED
        applied = apply(tree, grading.workspace / "model.patch")
        grading.log("patch", applied.log)
        if applied.method is None:
            tail = "\n".join(applied.log.splitlines()[-15:])
            return grading.verdict(Outcome.PATCH_FAILED, applied.reason, output_tail=tail)
        vacuous = vacuous_tests(tree, diff)
        tests = test_files(tree, diff)  # before any code of the patch runs
        edits = static_edits(diff, tree)
        provisioner = Provisioner(self.context, self.dataset_path().parent, self.baseline_limits)
        environment, cache = provisioner.environment(case, runner)
        base = provisioner.baseline(case, runner, environment, cache)
        check_environment(environment)  # after the baseline: its code ran in the environment too
        grading.figures["patch_method"] = applied.method
        if vacuous:
            grading.figures["vacuous_tests"] = ", ".join(vacuous)
        run = TreeRun(grading, environment, cache, tests=tests)
        verdict = run.run(self.settings[RUN_TESTS], self.settings[RERUNS])
        verdict = known_failures(verdict, base["failed"] if base else [])
        if run.witnessed is not None:
            hooks = hook_edits(run.witnessed.hooks, diff.files, base.get("hooks") if base else None)
            edits = merged(edits, hooks)
            verdict = missing_tests(verdict, base.get("passed", []) if base else [], run.witnessed.outcomes)
        verdict = with_harness_edits(verdict, edits, self.settings[ALLOW_HARNESS_EDITS])
        verdict = with_vacuous(verdict, vacuous, self.settings[FAIL_VACUOUS])
        return canaries_counted_apart(verdict, run.canaries)

    # -- results ---------------------------------------------------------------------------------

    def summarize(self, results: list[ItemResult]) -> Summary:
        """pass@k overall and per group (a task's category), what is left out of it, the
        tests that assert nothing and the compiler caches."""
        ks = self.settings[K]
        overall = pass_at_ks(results, ks)
        lines = [describe_pass_at_k("all tasks:", overall)]
        by_group: dict[str, list[ItemResult]] = defaultdict(list)
        for result in results:
            if result["task_id"]:  # an answer to no task is in no problem's score, nor any group's
                by_group[result.get("group") or "(no group)"].append(result)
        groups = {group: pass_at_ks(members, ks) for group, members in sorted(by_group.items())}
        lines += [describe_pass_at_k(f"  {group}:", figures) for group, figures in groups.items()]
        lines += describe_excluded(overall)
        vacuous = [
            f"{result['id']}: {result['figures']['vacuous_tests']}"
            for result in results
            if result["figures"].get("vacuous_tests")
        ]
        if vacuous:
            lines.append("added tests that assert nothing: " + "; ".join(vacuous))
        caches = _caches(results)
        lines += [self._cache_line(kind, figures) for kind, figures in caches.items()]
        pass1 = overall["pass@k"].get("1")
        metrics = {**overall, "groups": groups, "vacuous": vacuous, "compiler_cache": caches}
        score = None if pass1 is None else 100 * pass1
        return Summary(lines=lines, metrics=metrics, score=score, intervals=score_intervals(overall))

    def finish(self, results: list[ItemResult]) -> None:
        """SWE-bench's files (--codebench-swebench-dir), on the controller: every item's result."""
        missing = self.no_gold_patch
        if missing:
            self.outputs.append(
                f"gold: {len(missing)} task{'s' * (len(missing) != 1)} without a gold patch (the task's patch field), "
                f"left out of the run and the score: {', '.join(missing)}"
            )
        folder = self.settings[SWEBENCH_DIR]
        if folder:
            written = write_swebench(self.output_path(folder), self.context.run_dir.name, results, self.run_cases())
            self.outputs += [f"swebench: {path}" for path in written]

    def _cache_line(self, kind: str, figures: dict[str, int]) -> str:
        if kind != "none":
            used = f"{figures['hits']} hits, {figures['misses']} misses"
            return f"compiler cache: {kind} for {figures['items']} item(s): {used}"
        if self.settings[COMPILER_CACHE] == "none":
            why = f"{COMPILER_CACHE.cli} none"
        else:
            why = f"neither ccache nor sccache works where the commands run: {CACHE_HINT}"
        return f"compiler cache: NONE for {figures['items']} item(s): each compiled everything from scratch ({why})"


def _caches(results: list[ItemResult]) -> dict[str, dict[str, int]]:
    """Per compiler cache kind: the items that compiled through it, its hits and misses."""
    caches: dict[str, Counter[str]] = defaultdict(Counter)
    for result in results:
        figures = result["figures"]
        if "compiler_cache" in figures:
            used = {
                "hits": int(figures.get("compiler_cache_hits", 0)),
                "misses": int(figures.get("compiler_cache_misses", 0)),
            }
            caches[str(figures["compiler_cache"])].update(items=1, **used)
    return {kind: dict(counts) for kind, counts in caches.items()}
