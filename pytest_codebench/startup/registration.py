"""How the options meet pytest: registered on its parser, each with the help ``pytest --help``
shows, which tells of every option its choices, its default and its ini and environment twins,
so that no option's own help has to."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from ..options import Option


def shown_default(option: Option[Any]) -> str | None:
    """The default as ``--help`` shows it; None where there is none to show."""
    value = option.default
    if isinstance(value, bool):
        return "on" if value else "off"
    if value is None or value == "" or value == [] or value == {}:
        return None
    if option.metavar == "SIZE" and isinstance(value, int):
        # As a user would write it: 4g, not 4294967296.
        for unit, size in (("g", 1 << 30), ("m", 1 << 20), ("k", 1 << 10)):
            if value % size == 0:
                return f"{value // size}{unit}"
    return ",".join(map(str, value)) if isinstance(value, list | tuple) else str(value)


def full_help(option: Option[Any], title: str | None = None) -> str:
    """The option's help with what ``--help`` must tell of every option: its choices, its
    default (unless the help says it) and its ini and environment twins."""
    parts = [option.help]
    choices = getattr(option.parse, "choices", None)
    if choices:
        parts.append(f"Choices: {', '.join(choices)}.")
    default = shown_default(option)
    if default is not None and "default" not in option.help.lower():
        parts.append(f"Default: {default}.")
    parts.append(f"(ini {option.ini}, env {option.env})")
    text = " ".join(parts)
    return text if title is None else f"[{title}] {text}"


def register(parser: pytest.Parser, options: Iterable[Option[Any]], title: str | None = None) -> None:
    group = parser.getgroup("codebench", "code-generation benchmarks (pytest-codebench)")
    for option in options:
        help = full_help(option, title)
        cli_help = help.replace("%", "%%")  # argparse %-formats help ("%Optimized")
        if option.flag:
            group.addoption(option.cli, action="store_const", const="1", dest=option.dest, help=cli_help)
            no = option.cli.replace("--", "--no-", 1)
            group.addoption(no, action="store_const", const="0", dest=option.dest, help=f"Undo {option.cli}.")
        else:
            group.addoption(option.cli, dest=option.dest, metavar=option.metavar, help=cli_help)
        parser.addini(option.ini, help, type=option.ini_type, default=None)
