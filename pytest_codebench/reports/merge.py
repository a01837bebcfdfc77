"""``codebench merge A.json B.json ... -o ALL.json [--markdown ALL.md] [--junit A.xml B.xml
--junitxml ALL.xml]`` (also ``python -m pytest_codebench merge``): the JSON reports of a run's
shards (``--codebench-shard I/N``, a CI matrix) as one report, and their JUnit XML files as one.

Every metric is computed again from the merged items by the benchmark's own ``summarize``, with
the settings the reports give, so the merged report is the one a single run over all the items
would have written: the same counts, metrics and per-model rows, to the last digit. Reports of
different benchmarks, datasets or harnesses, and reports that share an item, are refused: their
items are not parts of one run.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO, cast

import pytest

from ..benchmark import Benchmark, get_benchmark_class
from ..context import RunContext
from ..errors import HarnessError
from ..names import escape_controls
from ..once import LOCK_DIR, write_atomically
from ..options import CORE_OPTIONS, HTML, MARKDOWN, PART, REPORT, SHARD, K, Option, Settings
from ..runners import runner_classes
from ..sweeps import launch, plan_command
from ..sweeps.plan import PlanError, plan_gaps, read_plan
from . import compare_reports, markdown
from .comparison import ModelSummary, model_summaries, shown, table, text_table
from .html import cli as html_cli
from .html import write_html
from .junit_merge import JUnitMergeError, merge_junit
from .model_tests import comparison_lines, comparison_markdown, model_comparisons
from .part_logs import with_part_logs
from .reporting import ItemResult, RunInfo, counts, report_json
from .scope import merged_scope

# Options that differ between the parts of one run by design: each shard's part and outputs.
PER_PART = (SHARD, PART, REPORT, MARKDOWN, HTML)


class MergeError(Exception):
    """Reports that cannot be merged, and why (naming the files)."""


class Incomplete(MergeError):
    """Parts of the plan are missing or failed (exit status 3, :data:`INCOMPLETE`)."""


INCOMPLETE = 3


@dataclasses.dataclass(frozen=True)
class Part:
    """One report to merge, as read from ``path``."""

    path: Path
    data: dict[str, Any]

    @property
    def dataset(self) -> str | None:
        return cast(str | None, self.data["dataset"].get("sha256"))

    def fact(self, name: str) -> Any:
        """What the part says of ``name``: its benchmark, harness version or dataset sha256."""
        if name == "dataset sha256":
            return self.dataset
        return self.data.get(name.replace(" ", "_"))


def read_part(path: Path) -> Part:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise MergeError(f"{path}: cannot read a JSON report ({exc})") from None
    missing = [
        key for key in ("benchmark", "dataset", "options", "items") if not isinstance(data, dict) or key not in data
    ]
    if missing:
        raise MergeError(f"{path}: not a codebench JSON report (no {', '.join(missing)})")
    return Part(path, data)


def check(parts: Sequence[Part]) -> None:
    """Refuses parts that are not of one run: another benchmark, dataset (sha256) or harness
    version, naming the two files and their values; or an item in two of them. A part without
    items says nothing of its dataset (an empty shard) and agrees with any."""
    first = parts[0]
    for name in ("benchmark", "harness version", "dataset sha256"):
        for part in parts[1:]:
            if name == "dataset sha256" and None in (first.dataset, part.dataset):
                continue
            if part.fact(name) != first.fact(name):
                raise MergeError(
                    f"not parts of one run: {first.path} and {part.path} have different {name}s "
                    f"({first.fact(name)} and {part.fact(name)})"
                )
    owner: dict[str, Path] = {}
    for part in parts:
        shared = [item["nodeid"] for item in part.data["items"] if item["nodeid"] in owner]
        if shared:
            raise MergeError(
                f"{owner[shared[0]]} and {part.path} both hold {shared[0]}"
                + (f" (and {len(shared) - 1} more items)" if len(shared) > 1 else "")
                + ": each item must be in one report alone"
            )
        owner.update((item["nodeid"], part.path) for item in part.data["items"])


def check_options(parts: Sequence[Part], known: Sequence[Option[Any]]) -> None:
    """Refuses parts graded with different settings where a setting decides a verdict (an
    option with ``grading``) or a metric (``--codebench-k``): their items are not of one run,
    and the merged metrics would follow the first part's alone. Where the reports ran, how
    they were written and how fast may differ (run and cache folders, build jobs, shard)."""
    first = parts[0]
    for option in known:
        if not (option.grading or option is K):
            continue
        for part in parts[1:]:
            mine, theirs = first.data["options"].get(option.name), part.data["options"].get(option.name)
            if mine != theirs:
                raise MergeError(
                    f"not parts of one run: {first.path} and {part.path} were graded with different "
                    f"{option.cli} ({mine} and {theirs})"
                )


def settings_of(options: dict[str, Any], known: Sequence[Option[Any]]) -> Settings:
    """The settings a report's ``options`` give: each value of a ``known`` option as its parser
    reads it back (they were written as JSON, ``str`` for the rest); any other value as written."""
    by_name = {option.name: option for option in known}
    values = {}
    for name, value in options.items():
        option = by_name.get(name)
        values[name] = value if option is None or value is None else _read_back(option, value)
    return Settings(values)


def _read_back(option: Option[Any], value: Any) -> Any:
    if isinstance(value, bool):
        text = "1" if value else "0"
    elif isinstance(value, list):
        text = ",".join(str(each) for each in value)
    else:
        text = str(value)
    try:
        return option.parse(text)
    except ValueError:
        return value  # a value its parser does not read back (a shard's pair); none that summarize reads


def offline_benchmark(name: str, settings: Settings, where: Path) -> Benchmark:
    """The benchmark, to summarize results outside any pytest run: no config (summarize never
    reads one) and a run folder nothing is written to."""
    cls = get_benchmark_class(name)
    context = RunContext(cast(pytest.Config, None), settings, where, LOCK_DIR, 1)
    return cls(context)


def merge(
    paths: Sequence[Path],
    output: Path,
    markdown_path: Path | None = None,
    allow_subset: bool = False,
    plan: Path | None = None,
) -> list[str]:
    """Merges the reports at ``paths`` into ``output`` (and the markdown report); returns the
    lines to print: the benchmark's summary and the per-model table. Parts that together are
    not over every item of the dataset (a shard missing, a ``-k`` run, an interrupted part)
    are refused unless ``allow_subset``; the merged report then says what it is over."""
    parts = [read_part(path) for path in paths]
    check(parts)
    gaps = _plan_gaps(plan, parts) if plan else []
    if gaps and not allow_subset:
        raise Incomplete(
            f"the parts do not cover {plan}: {'; '.join(gaps)}. Grade the missing parts again (their verdicts "
            "already stored are served), or --allow-subset merges what is here and the report says what is missing"
        )
    scope = merged_scope([part.data for part in parts])
    if not scope.whole and not allow_subset:
        raise MergeError(
            f"the parts are not over every item of their dataset: {'; '.join(scope.lines())}. "
            "--allow-subset merges them anyway, and the merged report says so"
        )
    first = parts[0].data
    options = {**first["options"], **{option.name: None for option in PER_PART}}
    options.update({REPORT.name: str(output), MARKDOWN.name: str(markdown_path) if markdown_path else None})
    try:
        benchmark_class = get_benchmark_class(first["benchmark"])
    except HarnessError as exc:
        raise MergeError(f"{parts[0].path}: {exc}") from None
    runners = [option for runner in runner_classes().values() for option in runner.options]
    check_options(parts, [*CORE_OPTIONS, *benchmark_class.options, *runners])
    settings = settings_of(options, [*CORE_OPTIONS, *benchmark_class.options])
    benchmark = offline_benchmark(first["benchmark"], settings, output.parent)
    results: list[ItemResult] = sorted(
        (item for part in parts for item in part.data["items"]), key=lambda item: item["nodeid"]
    )
    summary = benchmark.score_record(results)
    models = model_summaries(benchmark.score_record, results)
    run: RunInfo = {
        "benchmark": first["benchmark"],
        "dataset_path": first["dataset"]["path"],
        "options": options,
        "run_dir": first.get("run_dir", ""),
        "environment": first.get("environment", {}),
        "harness_version": first.get("harness_version") or "",
        "invocation": None,  # each part's own: see merged_from
        "model": first.get("model") if not models and len({part.data.get("model") for part in parts}) == 1 else None,
        "started": min((part.data.get("started") or "" for part in parts), default="") or None,
        "wall_seconds": None,
    }
    data = report_json(run, results, summary, {name: model.to_json() for name, model in models.items()})
    data["comparisons"] = model_comparisons(results, benchmark.compared_problems)
    data["merged_from"] = [_origin(part) for part in parts]
    data.update(scope.to_json())
    if plan:
        data["plan"] = {"path": str(plan), "gaps": gaps}
    output.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(output, json.dumps(data, indent=2, default=str) + "\n")
    whole = ModelSummary(summary, counts(results))
    if markdown_path is not None:
        dataset = markdown.dataset_label(run["dataset_path"], data["dataset"]["sha256"], data["dataset"]["release"])
        text = markdown.report(benchmark, dataset, whole, shown(models, whole, run["model"]), scope.lines())
        markdown.publish(markdown_path, text + comparison_markdown(data["comparisons"]))
    lines = [*(f"not merged: {gap}" for gap in gaps), *scope.lines(), *summary.lines, whole.outcome_line()]
    if models:
        lines += ["per model:", *("  " + line for line in text_table(table(benchmark.columns, whole, models)))]
    lines += comparison_lines(data["comparisons"])
    return lines


def _plan_gaps(plan: Path, parts: Sequence[Part]) -> list[str]:
    """The parts of ``plan`` that ``parts`` do not cover whole (see :func:`.sweeps.plan.plan_gaps`)."""
    try:
        return plan_gaps(read_plan(plan), plan, [(str(part.path), part.data) for part in parts])
    except PlanError as exc:
        raise MergeError(str(exc)) from None


def _origin(part: Part) -> dict[str, Any]:
    """What the merged report keeps of each part beside its items: where it ran."""
    data = part.data
    return {
        "report": str(part.path),
        "shard": data["options"].get(SHARD.name),
        "plan_part": data.get("plan_part"),
        "run_dir": data.get("run_dir"),
        "environment": data.get("environment"),
        "items": len(data["items"]),
    }


DESCRIPTION = """\
Merges the JSON reports of a run's shards (--codebench-shard I/N, a CI matrix) into one report.
Every metric is computed again from the merged items, so the merged report is the one a single
run over all the items would have written. Reports of different benchmarks, datasets, harnesses
or grading settings, and reports that share an item, are refused. With --junit, the shards'
JUnit XML files (pytest's --junitxml) are merged too, into --junitxml.

example:
  codebench merge part1.json part2.json -o all.json --junit part1.xml part2.xml --junitxml all.xml
"""


def html(paths: Sequence[Path], folder: Path) -> list[str]:
    """Writes the HTML report of the report at ``paths`` (several: merged first, the merged
    report kept in ``folder``) into ``folder``; returns the lines to print."""
    lines: list[str] = []
    if len(paths) == 1:
        data = read_part(paths[0]).data  # as it is: an older run's report lacks newer keys
    else:
        merged = folder / "report.json"
        lines = [*merge(paths, merged), f"report: {merged}"]
        data = json.loads(merged.read_text())
    return [*lines, f"html: {write_html(data, folder)}"]


def main(argv: Sequence[str] | None = None, prog: str = "codebench") -> int:
    parser = argparse.ArgumentParser(prog=prog, description="pytest-codebench tools")
    commands = parser.add_subparsers(dest="command", required=True)
    command = commands.add_parser(
        "merge",
        help="merge the JSON reports (and JUnit XML files) of a run's shards, recomputing every metric",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    command.add_argument("reports", nargs="+", type=Path, metavar="REPORT.json", help="each shard's --codebench-report")
    command.add_argument("-o", "--output", required=True, type=Path, metavar="ALL.json", help="the merged report")
    command.add_argument("--markdown", type=Path, metavar="ALL.md", help="also write the markdown report")
    junit_help = "each shard's JUnit XML file (pytest's --junitxml), to merge into --junitxml"
    command.add_argument("--junit", nargs="+", type=Path, default=[], metavar="PART.xml", help=junit_help)
    command.add_argument("--junitxml", type=Path, metavar="ALL.xml", help="where the merged JUnit XML goes")
    subset_help = "merge parts that are not over every item of the dataset (a missing shard, -k): the report says so"
    command.add_argument("--allow-subset", action="store_true", help=subset_help)
    plan_help = "the plan the parts were graded from (codebench plan): a missing or failed part is named, exit status 3"
    command.add_argument("--plan", type=Path, metavar="PLAN.json", help=plan_help)
    html_help = "also write the merged report's page into DIR, with each part's logs from its I.logs.tar.gz"
    command.add_argument("--html", type=Path, metavar="DIR", help=html_help)
    compare_reports.add_command(commands)
    html_cli.add_command(commands)
    plan_command.add_command(commands)
    launch.add_command(commands)
    args = parser.parse_args(argv)
    if args.command in ("plan", "launch"):
        status, lines = plan_command.run(args) if args.command == "plan" else launch.run(args)
        _say("\n".join(lines), sys.stderr if status else sys.stdout)
        return status
    if args.command == "html":
        try:
            _say("\n".join(html(args.reports, args.output)))
        except MergeError as exc:
            _say(f"html: error: {exc}", sys.stderr)
            return 1
        return 0
    if args.command == "compare":
        try:
            _say("\n".join(compare_reports.run(args)))
        except compare_reports.CompareError as exc:
            _say(f"compare: error: {exc}", sys.stderr)
            return 1
        return 0
    if bool(args.junit) != bool(args.junitxml):
        parser.error("--junit PART.xml ... and --junitxml ALL.xml go together")
    try:
        lines = merge(args.reports, args.output, args.markdown, args.allow_subset, args.plan)
        junit = merge_junit(args.junit, args.junitxml) if args.junitxml else None
    except (MergeError, JUnitMergeError) as exc:
        _say(f"merge: error: {exc}", sys.stderr)
        return INCOMPLETE if isinstance(exc, Incomplete) else 1
    lines += [f"report: {args.output}", *([f"markdown: {args.markdown}"] if args.markdown else [])]
    if args.html:
        data, problems = with_part_logs(json.loads(args.output.read_text()), args.reports, args.html)
        lines += [*problems, f"html: {write_html(data, args.html)}"]
    if junit is not None:
        counted = ", ".join(f"{value} {name}" for name, value in junit.items())
        lines.append(f"junit: {args.junitxml} ({counted})")
    _say("\n".join(lines))
    return 0


def python_m() -> int:
    """``python -m pytest_codebench``: the same tool under the name it was called by."""
    return main(prog="python -m pytest_codebench")


def _say(text: str, stream: TextIO | None = None) -> None:
    """``text`` printed (to stdout by default) as the terminal shows it: a report's names are a
    model's text."""
    print(escape_controls(text, keep="\n"), file=stream or sys.stdout)
