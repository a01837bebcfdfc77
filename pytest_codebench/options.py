"""Every codebench option, declared once: a CLI flag, its ini twin and its environment variable,
read once (in ``pytest_configure``) into typed values.

Precedence follows pytest-timeout: default < ini < environment < command line.
``Option("dataset")`` is ``--codebench-dataset``, ini ``codebench_dataset`` and ``CODEBENCH_DATASET``.
Each owner (the core, a benchmark, a runner) declares its options as module constants and
reads them with ``settings[OPTION]``: typed, and findable with grep.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, Literal, TypeVar

import pytest

from .reports.thresholds import Threshold, thresholds
from .sweeps.plan import parse_part
from .sweeps.shards import parse_shard
from .sweeps.solution_sets import SolutionSpec, parse_solutions
from .sweeps.store_url import parse_url

T = TypeVar("T")
N = TypeVar("N", int, float)
IniType = Literal["string", "bool", "int", "float", "args"]


def parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"not a boolean: {text!r}")


def positive(kind: Callable[[str], N]) -> Callable[[str], N]:
    """``kind`` (int or float), refusing zero and negative values."""

    def parse(text: str) -> N:
        try:
            value = kind(text.strip())
        except ValueError:
            raise ValueError(f"not a{'n integer' if kind is int else ' number'}: {text.strip()!r}") from None
        if not value > 0:
            raise ValueError(f"must be above 0, not {text.strip()}")
        return value

    return parse


def int_list(text: str) -> list[int]:
    """``1,10`` or ``1 10``: positive integers."""
    values = [positive(int)(part) for part in text.replace(",", " ").split()]
    if not values:
        raise ValueError("expected at least one number")
    return values


def str_list(text: str) -> list[str]:
    return text.replace(",", " ").split()


@dataclasses.dataclass(frozen=True)
class Choice:
    """Parses one of ``choices``; ``--help`` lists them. ``noun`` names what is chosen where
    the choices are what is installed (``unknown runner 'dockr'; installed: docker, local``)."""

    choices: tuple[str, ...]
    noun: str | None = None

    def __call__(self, text: str) -> str:
        value = text.strip().lower()
        if value not in self.choices:
            if self.noun:
                raise ValueError(f"unknown {self.noun} {text.strip()!r}; installed: {', '.join(self.choices)}")
            raise ValueError(f"expected one of {', '.join(self.choices)}, not {text!r}")
        return value


def choice(*choices: str) -> Choice:
    return Choice(choices)


@dataclasses.dataclass(frozen=True)
class Option(Generic[T]):
    """One setting. ``parse`` turns the text of a flag, an environment variable or an ini
    value into its value and raises ValueError, with why, on a bad one. ``flag`` options
    take no argument on the command line and have a ``--no-`` form; ``ini`` is the type
    pytest reads the ini value as."""

    name: str
    help: str
    default: T
    parse: Callable[[str], T]
    metavar: str | None = None
    flag: bool = False
    ini_type: IniType = "string"
    #: Where the option's own name would read badly (``--codebench-benchmark``).
    cli_name: str | None = None
    ini_name: str | None = None
    #: Whether the value can change a verdict: every option that can is part of the verdict
    #: store's key (a verdict graded under another value is not reused); those that cannot
    #: (where reports go, k, the run directory, the shard) say ``grading=False``.
    grading: bool = True

    @property
    def cli(self) -> str:
        return self.cli_name or f"--codebench-{self.name}"

    @property
    def ini(self) -> str:
        return self.ini_name or f"codebench_{self.name}".replace("-", "_")

    @property
    def env(self) -> str:
        return self.ini.upper()

    @property
    def dest(self) -> str:
        return self.ini


def text_option(
    name: str, help: str, *, metavar: str, default: str | None = None, grading: bool = True
) -> Option[str | None]:
    return Option(name, help, default, str, metavar, grading=grading)


def bool_option(name: str, help: str, *, grading: bool = True) -> Option[bool]:
    return Option(name, help, False, parse_bool, flag=True, ini_type="bool", grading=grading)


def int_option(name: str, help: str, *, default: int, metavar: str = "N", grading: bool = True) -> Option[int]:
    return Option(name, help, default, positive(int), metavar, ini_type="int", grading=grading)


def _default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pytest-codebench")


def _absolute_dir(value: str) -> str:
    """A folder as an absolute path, taken from where pytest runs: commands run in workspaces of
    their own, where a relative path names another folder (or none)."""
    return os.path.abspath(os.path.expanduser(value))


BENCHMARK = Option(
    "benchmark",
    "Grade this benchmark: every task sample becomes a test item.",
    None,
    str,
    "NAME",
    cli_name="--codebench",
    ini_name="codebench",
    grading=False,  # the benchmark's name is in the key on its own
)
DATASET = text_option(
    "dataset",
    "The benchmark's tasks: a datapack or a file, or a release name (ComputeEval: 2026-1, downloaded once); "
    "each benchmark has a bundled default, its sample.",
    metavar="PATH",
    grading=False,  # the store keys each task by its record, not by the file's path
)
SOLUTIONS: Option[list[SolutionSpec]] = Option(
    "solutions",
    "The model's answers (a datapack or a file), or 'baseline' for the tasks' reference answers; several sets "
    "(models) comma separated, each PATH, NAME=PATH, or a directory of NAME-solutions.tar.gz files.",
    [],
    parse_solutions,
    "PATH[,PATH...]",
    grading=False,  # the store keys each sample by its answer, not by the file's path
)
RUNNER = Option("runner", "Where commands run.", "local", str, "NAME")
K: Option[list[int]] = Option(
    "k", "The k values of pass@k to report, comma separated.", [1], int_list, "K[,K...]", ini_type="args", grading=False
)


FAIL_UNDER: Option[list[Threshold]] = Option(
    "fail-under",
    "Exit status follows the benchmark's score (in percent) instead of the items; in a sweep every "
    "model's own score. NAME=PERCENT gates one model of the sweep, or a named score the benchmark "
    "reports (ComputeEval with --codebench-perf: fast_1.0=40); several comma separated. Any harness "
    "error fails it too, unless --codebench-allow-errors.",
    [],
    thresholds,
    "SCORE[,NAME=SCORE...]",
    grading=False,
)
ALLOW_ERRORS = bool_option(
    "allow-errors",
    "Let --codebench-fail-under pass a run in which items ended in a harness error (the score alone decides).",
    grading=False,
)
REPORT = text_option("report", "Write the results as JSON to this path.", metavar="PATH", grading=False)
MARKDOWN = text_option(
    "markdown",
    "Write a markdown report to this path (one row per model), also appended to $GITHUB_STEP_SUMMARY when set.",
    metavar="PATH",
    grading=False,
)
HTML = text_option(
    "html",
    "Write the HTML report (index.html, its assets and data) into this folder: opens from the file system.",
    metavar="DIR",
    grading=False,
)
RUN_DIR = text_option(
    "run-dir",
    "Each run keeps its logs and state in a folder under DIR (default: .codebench/runs under the rootdir).",
    metavar="DIR",
    grading=False,
)
KEEP_LOGS = Option(
    "keep-logs",
    "Days each run folder under the default .codebench/runs (its logs, which reports point to) is kept: older "
    "ones are removed when a run starts, never the newest, and the run says so.",
    14.0,
    positive(float),
    "DAYS",
    ini_type="float",
    grading=False,
)
OUTPUT_LIMIT = int_option(
    "output-limit",
    "Bytes of output kept per command (half from the head, half from the tail).",
    default=256 * 1024,
    metavar="BYTES",
)
ENV: Option[list[str]] = Option(
    "env",
    "Extra environment variable names (globs) passed to untrusted code; secrets never are.",
    [],
    str_list,
    "NAME[,NAME...]",
    ini_type="args",
)
BUILD_JOBS = int_option(
    "build-jobs",
    "Builds allowed at once on this machine, across xdist workers (default: CPU count).",
    default=os.cpu_count() or 1,
    grading=False,
)
KEEP_WORKSPACES = bool_option("keep-workspaces", "Keep each item's workspace after grading.", grading=False)
CACHE_DIR = Option(
    "cache-dir",
    "What is reused across runs on this machine: git mirrors, environments, compiler caches.",
    _default_cache_dir(),
    _absolute_dir,
    "DIR",
    grading=False,
)
REPO = text_option(
    "repo",
    "Clone this URL or path instead of the tasks' own repository URL (a local mirror; offline).",
    metavar="URL_OR_PATH",
)
SHARD: Option[tuple[int, int] | None] = Option(
    "shard",
    "Grade only part I of N of the items, every sample of a task in the same part (a CI matrix).",
    None,
    parse_shard,
    "I/N",
    grading=False,
)
PLAN = text_option(
    "plan",
    "Grade one part of the plan that codebench plan wrote (a cluster's array job); the part is --codebench-part.",
    metavar="PLAN.json",
    grading=False,
)
PART: Option[int | str | None] = Option(
    "part",
    "The part of --codebench-plan this element grades, from 0; env reads SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX.",
    None,
    parse_part,
    "I|env",
    grading=False,
)
STORE_MODES = choice("off", "read", "write", "on")


def parse_store(text: str) -> str:
    """A mode, or ``s3://BUCKET/PREFIX``: the store a cluster shares (read and write)."""
    if text.strip().startswith("s3://"):
        parse_url(text)
        return text.strip()
    return STORE_MODES(text)


STORE = Option(
    "store",
    "The verdict store (a SQLite file in the cache dir) keeps each verdict by what decides it, so that no run "
    "grades a sample an earlier one graded: on (read and write), read, write (grade everything again and keep "
    "it), off, or s3://BUCKET/PREFIX (on, shared by every machine of a cluster through that bucket).",
    "on",
    parse_store,
    "MODE|s3://BUCKET/PREFIX",
    grading=False,
)
ADAPTIVE_TRIALS = Option(
    "adaptive-trials",
    "Stop timing a speedup once its interval has decided it (wholly above or below the bars, or narrow); "
    "--no-codebench-adaptive-trials always runs every trial.",
    True,
    parse_bool,
    flag=True,
    ini_type="bool",
)

CORE_OPTIONS: tuple[Option[Any], ...] = (
    BENCHMARK,
    DATASET,
    SOLUTIONS,
    RUNNER,
    K,
    FAIL_UNDER,
    ALLOW_ERRORS,
    REPORT,
    MARKDOWN,
    HTML,
    RUN_DIR,
    KEEP_LOGS,
    OUTPUT_LIMIT,
    ENV,
    BUILD_JOBS,
    KEEP_WORKSPACES,
    CACHE_DIR,
    REPO,
    ADAPTIVE_TRIALS,
    SHARD,
    PLAN,
    PART,
    STORE,
)


def _sources(config: pytest.Config, option: Option[Any]) -> Iterable[tuple[str, Any]]:
    """(where, raw value) for each place an option can be set, highest precedence first."""
    yield option.cli, config.getoption(option.dest)
    yield f"{option.env} (environment)", os.environ.get(option.env)
    try:
        yield f"{option.ini} (ini)", config.getini(option.ini)
    except ValueError as exc:  # pytest's own conversion of a typed ini value
        yield f"{option.ini} (ini)", exc


def _validate(option: Option[T], where: str, raw: Any) -> T:
    """The value of ``raw`` (text, or a value pytest read from an ini file already typed),
    or one usage error naming the option, where it was set and why the value is bad."""
    if isinstance(raw, ValueError):
        raise pytest.UsageError(f"{where}: {raw}")
    try:
        if isinstance(raw, list):
            raw = " ".join(raw)
        return option.parse(str(raw))
    except ValueError as exc:
        raise pytest.UsageError(f"{where}={raw}: {exc}") from None


class Settings:
    """The value of every registered option, each parsed and checked once."""

    def __init__(self, values: Mapping[str, Any], wheres: Mapping[str, str] | None = None) -> None:
        self._values = dict(values)
        self._wheres = dict(wheres or {})

    @classmethod
    def read(cls, config: pytest.Config, options: Iterable[Option[Any]]) -> Settings:
        """Every option's value from ``config``, the environment and the ini file. A bad value
        is a usage error before anything is graded."""
        values, wheres = {}, {}
        for option in options:
            values[option.name] = option.default
            for where, raw in _sources(config, option):
                if raw is not None and raw != "" and raw != []:
                    values[option.name] = _validate(option, where, raw)
                    wheres[option.name] = where
                    break
        return cls(values, wheres)

    def where(self, option: Option[Any]) -> str:
        """Where ``option``'s value was set (its flag, its environment variable or its ini
        key), for a check made later that names the source as a bad value's error does."""
        return self._wheres.get(option.name, option.cli)

    def __getitem__(self, option: Option[T]) -> T:
        value: T = self._values.get(option.name, option.default)
        return value

    def as_dict(self) -> dict[str, Any]:
        """Every option's value, for reports."""
        return dict(self._values)
