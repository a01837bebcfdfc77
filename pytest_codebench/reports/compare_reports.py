"""``codebench compare A.json B.json [--model-a NAME] [--model-b NAME] [--markdown OUT.md]
[--json OUT.json]`` (also ``python -m pytest_codebench compare``): two JSON reports' models
compared with a test (:mod:`.model_tests`), each report one model, named by its file (or by
its one model, where it names one). A report of several models (a sweep) is one model only as
``--model-a``/``--model-b`` names it: never all its models' samples pooled as one.

Reports of different benchmarks, datasets (sha256) or harness versions are refused: their
verdicts are not of one grading, and a difference between them would be the harness's or the
data's as much as the models'. So is a report over a selection of its dataset or an interrupted
run, unless ``--allow-subset``: the comparison is on the problems both graded, and a subset
would quietly narrow it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..benchmark import get_benchmark_class
from ..errors import HarnessError
from . import markdown
from .model_tests import ModelComparison, compare, comparison_lines, comparison_markdown
from .scope import subset_refusal


class CompareError(Exception):
    """Reports that cannot be compared, and why (naming the files)."""


@dataclasses.dataclass(frozen=True)
class Part:
    """One report to compare, as read from ``path``."""

    path: Path
    data: dict[str, Any]

    def facts(self) -> dict[str, Any]:
        """What two reports must agree on to be compared."""
        return {
            "benchmark": self.data["benchmark"],
            "dataset sha256": self.data["dataset"].get("sha256"),
            "harness version": self.data.get("harness_version"),
        }


def read_part(path: Path) -> Part:
    # As merge reads a shard's report; not imported from it, which imports this module for its CLI.
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise CompareError(f"{path}: cannot read a JSON report ({exc})") from None
    if not isinstance(data, dict) or not all(key in data for key in ("benchmark", "dataset", "items")):
        raise CompareError(f"{path}: not a codebench JSON report (no benchmark, dataset or items)")
    return Part(path, data)


def check_comparable(first: Part, second: Part) -> None:
    mine, theirs = first.facts(), second.facts()
    for name, value in mine.items():
        if theirs[name] != value:
            raise CompareError(
                f"not comparable: {first.path} and {second.path} have different {name}s ({value} and {theirs[name]})"
            )


def label(part: Part, other: Part) -> str:
    """The model's name: the report's one model, else its file's stem (its path where both stems agree)."""
    models = list(part.data.get("models") or {})
    if len(models) == 1:
        return str(models[0])
    return str(part.path) if part.path.stem == other.path.stem else part.path.stem


def one_model(part: Part, model: str | None, flag: str) -> tuple[str | None, list[Any]]:
    """The model of ``part`` to compare (``model``, given by ``flag``), and its items: a report
    of several models must name one, and a name it does not hold is refused."""
    models = list(part.data.get("models") or {})
    if model is None:
        if len(models) > 1:
            raise CompareError(
                f"{part.path} holds {len(models)} models ({', '.join(models)}): name the one to compare with {flag}"
            )
        return None, part.data["items"]
    if model not in models:
        raise CompareError(
            f"{part.path} has no model named {model} ({flag}; its models: {', '.join(models) or 'none'})"
        )
    return model, [item for item in part.data["items"] if item.get("model") == model]


def compare_reports(
    first_path: Path, second_path: Path, models: Sequence[str | None] = (None, None), allow_subset: bool = False
) -> ModelComparison:
    first, second = read_part(first_path), read_part(second_path)
    check_comparable(first, second)
    for part in (first, second):
        refusal = subset_refusal(str(part.path), part.data)
        if refusal and not allow_subset:
            raise CompareError(f"{refusal}. --allow-subset compares it anyway")
    (name_a, items_a), (name_b, items_b) = (
        one_model(first, models[0], "--model-a"),
        one_model(second, models[1], "--model-b"),
    )
    names = name_a or label(first, second), name_b or label(second, first)
    if names[0] == names[1]:
        names = str(first.path), str(second.path)
    try:  # the benchmark's own figures (PIE's %Correct and %Optimized), not one rule for all
        find = get_benchmark_class(first.data["benchmark"]).compared_problems
    except HarnessError as exc:
        raise CompareError(f"{first.path}: {exc}") from None
    return compare(*names, find(items_a), find(items_b))


def add_command(commands: Any) -> None:
    """The ``compare`` subcommand, on ``commands`` (argparse's subparsers)."""
    command = commands.add_parser(
        "compare",
        help="compare two JSON reports' models: pass@1 difference and geomean speedup ratio, with a test",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    command.add_argument("reports", nargs=2, type=Path, metavar="REPORT.json", help="model A's, then model B's")
    command.add_argument("--model-a", metavar="NAME", help="the model of the first report to compare (a sweep's)")
    command.add_argument("--model-b", metavar="NAME", help="the model of the second report to compare (a sweep's)")
    subset_help = "compare a report over a selection of its dataset or an interrupted run"
    command.add_argument("--allow-subset", action="store_true", help=subset_help)
    command.add_argument("--markdown", type=Path, metavar="OUT.md", help="also write the comparison as markdown")
    command.add_argument("--json", type=Path, metavar="OUT.json", help="also write the comparison as JSON")


def run(args: argparse.Namespace) -> list[str]:
    """The lines to print; writes the outputs asked for. Raises :class:`CompareError`."""
    first, second = args.reports
    comparison = compare_reports(first, second, (args.model_a, args.model_b), args.allow_subset)
    lines = comparison_lines([comparison])
    if args.markdown is not None:
        markdown.publish(args.markdown, comparison_markdown([comparison]))
        lines.append(f"markdown: {args.markdown}")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"comparisons": [comparison]}, indent=2) + "\n")
        lines.append(f"json: {args.json}")
    return lines
