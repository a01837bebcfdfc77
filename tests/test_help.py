"""``pytest --help`` tells a user every codebench option's choices, default and twins."""

from __future__ import annotations

import re

import pytest

from pytest_codebench.options import Option
from pytest_codebench.plugin import _all_options
from pytest_codebench.startup.registration import full_help


@pytest.fixture(scope="module")
def help_text() -> str:
    """The codebench group of ``pytest --help``, its lines joined (argparse wraps them)."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--help"], capture_output=True, text=True, check=True
    ).stdout
    group = out.split("code-generation benchmarks (pytest-codebench):", 1)[1].split("\n\n", 1)[0]
    return joined(group)


def joined(text: str) -> str:
    """Lines joined as argparse wrapped them (it also breaks lines after a hyphen)."""
    return re.sub(r"\s+", " ", text).replace("- ", "-")


def every_option() -> list[tuple[str | None, Option]]:
    return [(title, option) for title, options in _all_options() for option in options]


@pytest.mark.parametrize(("title", "option"), every_option(), ids=lambda value: getattr(value, "name", ""))
def test_every_option_names_its_ini_and_environment_twins_and_its_default(help_text, title, option):
    text = joined(full_help(option, title))
    assert text in help_text
    assert f"(ini {option.ini}, env {option.env})" in text
    if option.default not in (None, "", [], {}) and "default" not in option.help.lower():
        assert "Default: " in text


def test_installed_benchmarks_and_runners_are_the_choices(help_text):
    assert "Choices: computeeval, pie, tensorbench." in help_text.split("--codebench-dataset")[0]
    runner = help_text.split("--codebench-runner=NAME", 1)[1].split("--codebench-k", 1)[0]
    assert "local" in runner and "docker" in runner and "Default: local." in runner
    assert "Choices: auto, bwrap, none. Default: auto." in help_text  # a choice() option


def test_the_dataset_mentions_release_names_and_sizes_read_as_written(help_text):
    dataset = help_text.split("--codebench-dataset=PATH", 1)[1].split("--codebench-solutions", 1)[0]
    assert "release name" in dataset
    assert "[docker] Memory limit of a container. Default: 4g." in help_text


def test_options_both_runners_share_are_not_tagged_as_one_runners(help_text):
    for name in ("workspace-max-size", "workspace-max-files"):
        entry = help_text.split(f"--codebench-{name}=", 1)[1][:40]
        assert "[docker, local]" in entry or "[local, docker]" in entry, entry
