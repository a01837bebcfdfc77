"""Several solution sets in one run (a sweep: one set per model): how ``--codebench-solutions``
names them, how a directory of sets is read, and how their items are named.

``--codebench-solutions`` takes a comma-separated list. Each entry is a path, ``NAME=PATH`` (a
set named by hand), or a directory: every file in it named like a set of the benchmark
(ComputeEval: NVIDIA's ``NAME-solutions.tar.gz``) is one set, named by the file. With one set,
the items keep their ids (``CUDA/3[0]``); with several, each item's id carries its set's name
(``CUDA/3[gpt-5:0]``), and the reports give one row per set.

Imported by :mod:`.options` (the option's parser): stays below it, importing nothing of the core.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..names import MAX_NAME, hashed

if TYPE_CHECKING:
    from ..cases import Case

# A set's name goes into item ids (``TASK[NAME:N]``), node ids and file names: none of the
# characters that take them apart (``[``, ``]``, ``:``, ``/``, spaces).
NAME = re.compile(r"[A-Za-z0-9][\w.+@-]*")
# Dropped from a file's name to name its set when the benchmark's own suffix does not match.
STORAGE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".jsonl", ".json", ".gz")
_SAMPLE_ID = re.compile(r"(?P<head>.*)\[(?P<sample>\d+)\]")


@dataclasses.dataclass(frozen=True)
class SolutionSpec:
    """One entry of ``--codebench-solutions`` as given: a path (a file, a directory of sets, or
    a benchmark's keyword such as ``baseline``), and the name given to it with ``NAME=PATH``."""

    path: str
    name: str | None = None

    def __str__(self) -> str:  # as given, for the JSON report's options
        return f"{self.name}={self.path}" if self.name else self.path


@dataclasses.dataclass(frozen=True)
class SolutionSet:
    """One set of the model's answers: its name (None: the run's only set, not named by hand)
    and its path (None: the benchmark's default answers). ``model``: where one file holds the
    answers of several models (SWE-bench's ``model_name_or_path``), the one this set keeps."""

    name: str | None
    path: str | None
    model: str | None = None


def parse_solutions(text: str) -> list[SolutionSpec]:
    """``PATH[,PATH...]``, each ``PATH`` or ``NAME=PATH`` (an existing file whose name holds
    ``=`` is a path). A path holding ``,`` cannot be given."""
    specs = []
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        name, equals, path = entry.partition("=")
        if equals and not Path(entry).exists():
            specs.append(SolutionSpec(path.strip(), _valid_name(name.strip(), entry)))
        else:
            specs.append(SolutionSpec(entry))
    if not specs:
        raise ValueError("expected a path, or several separated by commas")
    return specs


def _valid_name(name: str, given: str) -> str:
    if not NAME.fullmatch(name):
        raise ValueError(
            f"{given!r}: a set's name is letters, digits and _ . + @ - (starting with a letter or digit), not {name!r}"
        )
    return name


def find_sets(specs: list[SolutionSpec], suffixes: Sequence[str]) -> list[SolutionSet]:
    """The sets ``specs`` name, in the order given (a directory's by file name). ``suffixes``:
    how the benchmark's set files are named in a directory (``-solutions.tar.gz``). Raises
    ValueError for a directory without a set, a name no file gives, and two sets of one name."""
    if not specs:
        return [SolutionSet(None, None)]
    found: list[tuple[str, str]] = []  # (name, path)
    for spec in specs:
        path = Path(spec.path)
        if spec.name is None and path.is_dir():
            files = sorted(child for child in path.iterdir() if _suffix(child.name, suffixes) and child.is_file())
            if not files:
                wanted = " or ".join(f"*{suffix}" for suffix in suffixes)
                raise ValueError(f"{spec.path}: a directory of solution sets, but it holds no {wanted} file")
            found += [(_name_of(file.name, suffixes, str(file)), str(file)) for file in files]
        else:
            found.append((spec.name or _name_of(path.name, suffixes, spec.path), spec.path))
    if len(found) == 1 and specs[0].name is None:
        return [SolutionSet(None, found[0][1])]
    paths: dict[str, str] = {}
    for name, where in found:
        if name in paths:
            raise ValueError(f"two solution sets are named {name}: {paths[name]} and {where} (name one NAME=PATH)")
        paths[name] = where
    return [SolutionSet(name, where) for name, where in found]


def display_name(sets: Sequence[SolutionSet], suffixes: Sequence[str]) -> str | None:
    """The name a run of one set not named by hand shows for its model: its file's, as a sweep
    names each of its sets (``gpt-5-solutions.tar.gz``: ``gpt-5``); None for the benchmark's
    default answers or a file whose name cannot name a set. Shown only: the items keep their ids."""
    if len(sets) != 1 or sets[0].name is not None or sets[0].path is None:
        return None
    try:
        return _name_of(Path(sets[0].path).name, suffixes, sets[0].path)
    except ValueError:
        return None


def set_name(model: str) -> str:
    """A model's own name (``openai/gpt-4o``) as a set's name: ``/`` becomes ``__`` (as
    SWE-bench names its files), anything else that would break an item's id (``:``,
    brackets, spaces) ``_``; a name left empty (``..``) or too long for a file name ends in a
    hash of the model's whole name (:func:`~pytest_codebench.names.hashed`), so that two
    models keep two sets."""
    name = re.sub(r"[^\w.+@-]", "_", model.strip().replace("/", "__")).lstrip("_.+@-")
    if not name:  # ``.``, ``..``: two such models still make two sets
        return hashed(model, "unnamed")
    return name if len(name.encode()) <= MAX_NAME else hashed(model, name)


def _suffix(file_name: str, suffixes: Sequence[str]) -> str | None:
    return next((suffix for suffix in suffixes if file_name.endswith(suffix) and file_name != suffix), None)


def _name_of(file_name: str, suffixes: Sequence[str], path: str) -> str:
    """The name of the set in ``file_name``: the name without the benchmark's suffix
    (``gpt-5-solutions.tar.gz``: ``gpt-5``), else without how it is stored (``gpt-5.jsonl``)."""
    suffix = _suffix(file_name, suffixes) or next((s for s in STORAGE_SUFFIXES if file_name.endswith(s)), "")
    name = file_name[: len(file_name) - len(suffix)]
    if not NAME.fullmatch(name):
        raise ValueError(f"{path}: {name!r} cannot name a solution set (letters, digits, _ . + @ -): give NAME={path}")
    return name


def model_id(case_id: str, model: str) -> str:
    """The id of an item of the set ``model``: ``CUDA/3[0]`` is ``CUDA/3[gpt-5:0]``; an id
    without a sample number (a record of no task) gets the name in brackets."""
    match = _SAMPLE_ID.fullmatch(case_id)
    if match is None:
        return f"{case_id}[{model}]"
    return f"{match['head']}[{model}:{match['sample']}]"


def split_id(item_id: str) -> tuple[str, str | None, str]:
    """``CUDA/3[gpt-5:0]``: (``CUDA/3``, ``gpt-5``, ``0``); ``CUDA/3[0]``: (``CUDA/3``, None, ``0``)."""
    head, bracket, tail = item_id.rpartition("[")
    if not bracket or not tail.endswith("]"):
        return item_id, None, ""
    model, colon, sample = tail[:-1].rpartition(":")
    return head, (model if colon else None), sample


def sweep(sets: Sequence[SolutionSet], cases_of: Callable[[SolutionSet], list[Case]]) -> list[Case]:
    """Every set's cases (``cases_of(set)``), set after set, each with its set's name as its
    ``model`` and, where there are several sets, in its id."""
    several = len(sets) > 1
    cases: list[Case] = []
    for each in sets:
        made = cases_of(each)
        if each.name is None:
            cases += made
            continue
        name = each.name
        cases += [
            dataclasses.replace(case, model=name, id=model_id(case.id, name) if several else case.id) for case in made
        ]
    return cases
