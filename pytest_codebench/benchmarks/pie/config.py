"""PIE's settings: the plugin's options, and PIE's own eval-config YAML read into a typed,
frozen :class:`EvalConfig` (every key of PIE's ``EvaluationConfig``, same meaning and default).

An override on the command line (``--codebench-pie``) is checked when pytest starts, like every
setting; the YAML file is read when the benchmark first needs it, and a bad key or value there
is a dataset error naming the file and the key.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from pytest_codebench.errors import DatasetError
from pytest_codebench.options import Option, choice, int_option, parse_bool, positive, text_option

from ..records import load_yaml
from ..speedup import ACCEPT_SUSPECT, MAX_SPEEDUP

LANGUAGES = ("python", "cpp")


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    """PIE's EvaluationConfig: every key and its default (unknown keys are an error, as upstream)."""

    model_generated_outputs_path: str | None = None
    inputs_outputs_basepath: str | None = None
    reference_file_path: str | None = None
    output_report_file_path: str | None = None
    language: str = "python"
    num_problems_to_evaluate: int = -1
    num_trials: int = 25
    ignore_first_k: int = 0
    max_time_per_run: float = 10
    temp_dir: str | None = None
    model_generated_potentially_faster_code_col: str = "generated_answers"
    slow_code_col: str = "input"
    reference_code_col: str = "target"
    is_prompt_based: bool = False
    cpu_number: int = 0
    return_if_acc_below: float | None = None
    cflags: str = "--std=c++17 -O1"
    cpp_results_path: str | None = None


CONFIG_DEFAULTS: dict[str, Any] = dataclasses.asdict(EvalConfig())
REQUIRED = ("model_generated_outputs_path", "inputs_outputs_basepath")


def _integer(value: object) -> int:
    return int(str(value).strip())  # "25" and 25, never 2.5 or True


def _text(value: object) -> str:
    if value is None or isinstance(value, (dict, list)):
        raise ValueError("expected a text")
    return str(value)


def _number(value: object) -> float:
    number = float(str(value).strip())
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError("not a finite number")
    return number


def _optional(convert: Callable[[object], Any]) -> Callable[[object], Any]:
    return lambda value: None if value is None else convert(value)


# How each key's value is checked, by the type its field declares.
_CONVERTERS: dict[str, Callable[[object], Any]] = {
    "int": _integer,
    "float": _number,
    "bool": lambda value: value if isinstance(value, bool) else parse_bool(str(value)),
    "str": _text,
    "str | None": _optional(_text),
    "float | None": _optional(_number),
}


# The values a number key may take, both ends included: beyond them a run cannot mean
# anything (no trial, no time to run) or the budgets derived from them overflow.
RANGES: dict[str, tuple[float, float]] = {
    "num_problems_to_evaluate": (-1, 10**9),
    "num_trials": (1, 10_000),
    "ignore_first_k": (0, 10_000),
    "max_time_per_run": (0.001, 3600),
    "cpu_number": (0, 4096),
    "return_if_acc_below": (0, 1),
}


def config_value(key: str, value: object) -> Any:
    """``value`` as key ``key`` of PIE's config holds it; ValueError naming the key if unknown or bad."""
    fields = {field.name: field.type for field in dataclasses.fields(EvalConfig)}
    if key not in fields:
        raise ValueError(f"unknown eval-config key {key!r}")
    try:
        converted = _CONVERTERS[str(fields[key])](value)
    except (TypeError, ValueError):
        raise ValueError(f"{key}: {value!r} is not a valid {fields[key]}") from None
    if key == "language" and converted not in LANGUAGES:
        raise ValueError(f"language: {converted!r} is not python or cpp")
    low, high = RANGES.get(key, (None, None))
    if low is not None and high is not None and converted is not None and not low <= converted <= high:
        raise ValueError(f"{key}: {value!r} is out of range (from {low:g} to {high:g})")
    return converted


def overrides(text: str) -> dict[str, Any]:
    """``KEY=VALUE ...``, split as a shell would (``cflags='--std=c++17 -O3'`` is one pair),
    each value read as YAML, as in the config file."""
    pairs = {}
    for part in shlex.split(text):
        key, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"expected KEY=VALUE, got {part!r}")
        try:
            loaded = load_yaml(value)[1]
        except yaml.YAMLError:
            loaded = value  # not YAML: the text as it is
        pairs[key] = config_value(key, loaded)
    return pairs


CONFIG = text_option("config", "PIE's eval-config YAML (default: the bundled sample).", metavar="PATH")
PIE: Option[dict[str, Any]] = Option(
    "pie",
    "Override keys of the eval config: \"num_trials=5 cflags='-O3 -march=native'\".",
    {},
    overrides,
    "KEY=VALUE ...",
)
MIN_SPEEDUP = Option(
    "min-speedup",
    "Speedup a candidate needs to pass (1.10 is PIE's %Optimized bar).",
    1.0,
    positive(float),
    "X",
    ini_type="float",
)
PIE_METRIC = Option(
    "pie-metric",
    "What is compared: wall time, or user-space instructions.",
    "wall",
    choice("wall", "instructions"),
    "wall|instructions",
)
PYTHON = text_option(
    "python", "Python interpreter for Python programs (default: the one commands find where they run).", metavar="PATH"
)
CXX = Option("cxx", "C++ compiler.", "g++", str, "PATH")
PIE_MEMORY = int_option("pie-memory", "Address-space limit of a program, in MiB.", default=2048, metavar="MIB")
# The plausibility bound is ComputeEval's option (one option, one meaning, for every benchmark).
OPTIONS: tuple[Option[Any], ...] = (
    CONFIG,
    PIE,
    MIN_SPEEDUP,
    PIE_METRIC,
    PYTHON,
    CXX,
    PIE_MEMORY,
    MAX_SPEEDUP,
    ACCEPT_SUSPECT,
)


def read_config(path: Path, given: dict[str, Any]) -> EvalConfig:
    """The eval config at ``path`` with the overrides ``given`` (already checked) on top."""
    try:
        text = path.read_text()
        node, loaded = load_yaml(text)
        loaded = loaded or {}
        lines = _key_lines(node)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise DatasetError(path, f"not a readable YAML eval config ({exc})") from None
    if not isinstance(loaded, dict):
        raise DatasetError(path, "not a mapping of config keys")
    values = {}
    for key, value in loaded.items():
        try:
            values[key] = config_value(str(key), value)
        except ValueError as exc:
            raise DatasetError(path, str(exc), line=lines.get(str(key)), field=str(key)) from None
    config = EvalConfig(**{**values, **given})
    for key in REQUIRED:
        if not getattr(config, key):
            raise DatasetError(path, "missing", line=lines.get(key), field=key)
    if config.ignore_first_k >= config.num_trials:
        where = "ignore_first_k" if "ignore_first_k" in lines or "ignore_first_k" in given else "num_trials"
        raise DatasetError(path, "ignore_first_k drops every trial", line=lines.get(where), field="ignore_first_k")
    return config


def _key_lines(node: yaml.Node | None) -> dict[str, int]:
    """The line (from 1) each top-level key of a YAML document's ``node`` is on."""
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {str(key.value): key.start_mark.line + 1 for key, _ in node.value}


def located(config_path: Path, value: str | None) -> Path | None:
    """An input path of the config: relative to the YAML file's folder."""
    return None if value is None else (config_path.parent / value).resolve()
