"""Every codebench option, declared once: a CLI flag, its ini twin and its environment variable.

Precedence follows pytest-timeout: default < ini < environment < command line.
``Option("dataset")`` is ``--codebench-dataset``, ini ``codebench_dataset`` and ``CODEBENCH_DATASET``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable
from typing import Any

import pytest


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"not a boolean: {text!r}")


def _int_list(text: str) -> list[int]:
    return [int(part) for part in text.replace(" ", "").split(",") if part]


def _str_list(text: str) -> list[str]:
    return [part for part in text.replace(",", " ").split() if part]


@dataclasses.dataclass(frozen=True)
class Option:
    """One setting. ``parse`` turns the text of an ini value, an environment variable or a
    flag into its value; ``flag`` options take no argument on the command line."""

    name: str
    help: str
    default: Any = None
    parse: Callable[[str], Any] = str
    metavar: str | None = None
    flag: bool = False

    @property
    def cli(self) -> str:
        return f"--codebench-{self.name}" if self.name else "--codebench"

    @property
    def ini(self) -> str:
        return f"codebench_{self.name}".rstrip("_").replace("-", "_")

    @property
    def env(self) -> str:
        return self.ini.upper()

    @property
    def dest(self) -> str:
        return self.ini


def _default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pytest-codebench")


def bool_option(name: str, help: str) -> Option:
    return Option(name, help, default=False, parse=_bool, flag=True)


CORE_OPTIONS: tuple[Option, ...] = (
    Option("", "Grade this benchmark: every task sample becomes a test item.", metavar="NAME"),
    Option(
        "dataset",
        "The benchmark's tasks (a datapack or a file); each benchmark has a bundled default.",
        metavar="PATH",
    ),
    Option(
        "solutions",
        "The model's answers (a datapack or a file), or 'baseline' for the tasks' reference answers.",
        metavar="PATH",
    ),
    Option("runner", "Where commands run.", default="local", metavar="NAME"),
    Option(
        "k",
        "The k values of pass@k to report, comma separated.",
        default=[1],
        parse=_int_list,
        metavar="K[,K...]",
    ),
    Option(
        "fail-under",
        "Exit status follows the benchmark's score (in percent) instead of the items.",
        parse=float,
        metavar="SCORE",
    ),
    Option("report", "Write the results as JSON to this path.", metavar="PATH"),
    Option(
        "run-dir",
        "Each run keeps its logs and state in a folder under DIR (default: .codebench/runs under the rootdir).",
        metavar="DIR",
    ),
    Option(
        "output-limit",
        "Bytes of output kept per command (half from the head, half from the tail).",
        default=256 * 1024,
        parse=int,
        metavar="BYTES",
    ),
    Option(
        "env",
        "Extra environment variable names (globs) passed to untrusted code; secrets never are.",
        default=[],
        parse=_str_list,
        metavar="NAME[,NAME...]",
    ),
    Option(
        "build-jobs",
        "Builds allowed at once on this machine, across xdist workers (default: CPU count).",
        default=os.cpu_count() or 1,
        parse=int,
        metavar="N",
    ),
    bool_option("keep-workspaces", "Keep each item's workspace after grading."),
    Option(
        "cache-dir",
        "What is reused across runs on this machine: git mirrors, environments, compiler caches.",
        default=_default_cache_dir(),
        metavar="DIR",
    ),
    Option(
        "repo",
        "Clone this URL or path instead of the tasks' own repository URL (a local mirror; offline).",
        metavar="URL_OR_PATH",
    ),
)


def register(parser: pytest.Parser, options: Iterable[Option], title: str | None = None) -> None:
    group = parser.getgroup("codebench", "code-generation benchmarks (pytest-codebench)")
    for option in options:
        help = option.help if title is None else f"[{title}] {option.help}"
        cli_help = help.replace("%", "%%")  # argparse %-formats help ("%Optimized")
        if option.flag:
            group.addoption(option.cli, action="store_const", const="1", dest=option.dest, help=cli_help)
        else:
            group.addoption(option.cli, dest=option.dest, metavar=option.metavar, help=cli_help)
        # Registered as strings and parsed by the option itself, so ini files and
        # environment variables spell values the same way the command line does.
        parser.addini(option.ini, help, default=None)


class Settings:
    """The resolved value of every registered option, read through one precedence rule."""

    def __init__(self, config: pytest.Config, options: Iterable[Option]) -> None:
        self._config = config
        self._options = {option.name: option for option in options}
        self._cache: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._cache:
            self._cache[name] = self._resolve(self._options[name])
        return self._cache[name]

    def _resolve(self, option: Option) -> Any:
        for source, text in (
            (option.cli, self._config.getoption(option.dest)),
            (option.env, os.environ.get(option.env)),
            (option.ini, self._config.getini(option.ini)),
        ):
            if text is None or text == "" or text == []:
                continue
            try:
                return option.parse(str(text))
            except ValueError as exc:
                raise pytest.UsageError(f"{source}: {exc}") from None
        return option.default

    def as_dict(self) -> dict[str, Any]:
        """Every option's value, for reports."""
        return {name or "benchmark": self[name] for name in self._options}
