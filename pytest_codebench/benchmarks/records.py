"""Reading benchmark files: JSON lines, datapack archives, and fields checked with a clear error."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import json
import math
import re
import tarfile
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from ..errors import DatasetError

# No timeout or limit a dataset gives may exceed a day: larger ones are typos or attacks (1e300
# overflows pytest-timeout's timer and ends the whole session).
MAX_SECONDS = 86400.0
# What a datapack may expand to, and what one member read into memory may hold: real
# datapacks are a few megabytes; a gzip bomb expands a small file to gigabytes.
MAX_UNPACKED = 256 << 20
# JSON values (objects, arrays, strings, numbers, literals) one record may hold before it is
# decoded. Decoded, a value costs 30 to 60 times its text: 85 MiB of ``{}`` took 2.44 GB. Real
# records hold a few hundred at most.
MAX_RECORD_VALUES = 100_000
# Strings, which hold no values (the regular expression's loop unrolled: linear, no backtracking).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\],:]', re.DOTALL)


@dataclasses.dataclass(frozen=True)
class Budget:
    """How much of a file is decoded: values per record, values in all (None: no bound), and
    refused records reported one by one before the rest are refused as one."""

    record: int = MAX_RECORD_VALUES
    total: int | None = None
    refused: int = 100


# A model's output (ComputeEval solutions, PIE generations, TensorBench predictions) is a few
# MB: read up to MAX_MODEL_OUTPUT bytes, a record of a handful of values (a file or a diff per
# problem and sample: a one-file solution counts 14), 300,000 values in all (1,000 problems x
# 20 samples of one file). Each valid record is an item (1.9 KB each to collect): the total
# bounds them too, to 30,000 of the smallest. An 88 KB gzip of ``{}`` under the dataset's 256
# MiB cap would have taken the harness past 7 GB.
MAX_MODEL_OUTPUT = 32 << 20
MODEL_OUTPUT = Budget(record=10_000, total=300_000)


@dataclasses.dataclass(frozen=True)
class Line:
    """One line of a JSONL file: its 1-based number, its exact bytes (with the newline the
    writer gave it, for hashing) and either the decoded object or why it could not be read."""

    number: int
    raw: bytes
    value: dict[str, Any] | None
    error: DatasetError | None


def read_jsonl(label: str, data: bytes, budget: Budget = Budget()) -> Iterator[Line]:
    """Every non-blank line of ``data``; a line that is not a JSON object, or holds more than
    its ``budget`` of values (counted before decoding), carries an error. Past the budget's
    ``total``, or its count of refused lines, one last line with an error says the rest were
    not read, and reading stops."""
    spent = refused = 0
    for number, raw in _lines(data):
        if not raw.strip():
            continue
        if not raw.endswith(b"\n"):
            raw += b"\n"  # writers end every line with one; the last may have lost it
        values = values_in(raw)
        # Only what is decoded costs memory: a refused record's values do not count.
        spent += values if values <= budget.record else 0
        if refused >= budget.refused or (budget.total is not None and spent > budget.total):
            why = f"more than {budget.refused} refused records" if refused >= budget.refused else None
            why = why or f"more than {budget.total} JSON values in all"
            yield Line(
                number, b"", None, DatasetError(label, f"holds {why}: this line and the rest not read", line=number)
            )
            return
        error = None
        if values > budget.record:
            field = _field_past(raw, budget.record)
            why = f"holds more than {budget.record} JSON values (objects, arrays, strings, numbers): not decoded"
            error = DatasetError(label, why, line=number, field=field)
        else:
            try:
                value = json.loads(raw)
            except ValueError as exc:  # also a number of thousands of digits, which int() refuses
                error = DatasetError(label, f"not valid JSON ({exc})", line=number)
            else:
                if isinstance(value, dict):
                    yield Line(number, raw, value, None)
                    continue
                error = DatasetError(label, "not a JSON object", line=number)
        refused += 1
        yield Line(number, raw, None, error)


def _lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(1-based number, bytes) of each line, one at a time: a list of every line of a file of
    millions of empty ones would take gigabytes."""
    start, number = 0, 1
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end + 1
        yield number, data[start:end]
        start, number = end, number + 1


def values_in(raw: bytes) -> int:
    """At least as many as the JSON values ``raw`` holds, counted without decoding it: every
    value but an array's first element follows a comma or a colon, and every container opens
    with a bracket (strings, with whatever they hold, left out first)."""
    skeleton = _STRING.sub(b"", raw)
    return 1 + sum(skeleton.count(mark) for mark in (b",", b":", b"[", b"{"))


def _field_past(raw: bytes, budget: int) -> str | None:
    """The top-level field in which ``raw``'s count of values passes ``budget`` (reads at most
    about ``budget`` tokens); None where it is not an object's field."""
    depth, count, field, previous = 0, 0, None, b""
    for match in _TOKEN.finditer(raw):
        token = match.group()
        if token == b":" and depth == 1 and previous.startswith(b'"'):
            try:
                field = json.loads(previous)
            except ValueError:
                field = None
        elif token in (b"{", b"["):
            depth += 1
        elif token in (b"}", b"]"):
            depth -= 1
        count += token in (b",", b":", b"{", b"[")
        if count > budget:
            return field if isinstance(field, str) and depth >= 1 else None
        previous = token
    return field if isinstance(field, str) else None


def read_records(label: str, data: bytes, budget: Budget = Budget()) -> Iterator[Line]:
    """The objects of a JSON array, or of JSON lines, each with the line it starts on.

    One bad element of an array becomes a line with an error; an array that is not valid
    JSON cannot be split into records, nor one past the ``budget``'s total of values (counted
    before decoding), and raises :class:`DatasetError` for the whole file."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(label, f"not UTF-8 ({exc})") from None
    start = len(text) - len(text.lstrip())
    if not text.startswith("[", start):
        yield from read_jsonl(label, data, budget)
        return
    if budget.total is not None and values_in(data) > budget.total:
        raise DatasetError(label, f"holds more than {budget.total} JSON values: not decoded")
    decoder = json.JSONDecoder()
    position = start + 1
    try:
        while True:
            position = _skip_space(text, position)
            if text.startswith("]", position):
                break
            value, end = decoder.raw_decode(text, position)
            number = text.count("\n", 0, position) + 1
            raw = text[position:end].encode()
            if isinstance(value, dict):
                yield Line(number, raw, value, None)
            else:
                yield Line(number, raw, None, DatasetError(label, "not a JSON object", line=number))
            position = _skip_space(text, end)
            if text.startswith(",", position):
                position += 1
            elif not text.startswith("]", position):
                raise json.JSONDecodeError("expected ',' or ']'", text, position)
    except json.JSONDecodeError as exc:
        raise DatasetError(label, f"not a valid JSON array ({exc.msg})", line=exc.lineno) from None
    except ValueError as exc:  # a number of thousands of digits
        number = text.count("\n", 0, position) + 1
        raise DatasetError(label, f"not a valid JSON array ({exc})", line=number) from None


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position


def require(record: dict[str, Any], field: str, kind: type | tuple[type, ...], label: str, line: int) -> Any:
    """``record[field]``, which must be present and of ``kind``."""
    problem = _problem(record, field, kind)
    if problem is not None:
        raise DatasetError(label, problem, line=line, field=field)
    return record[field]


def _problem(record: dict[str, Any], field: str, kind: type | tuple[type, ...]) -> str | None:
    if field not in record:
        return "missing"
    value = record[field]
    # bool is an int to isinstance, but never a number in a dataset.
    if not isinstance(value, kind) or isinstance(value, bool) and bool not in _kinds(kind):
        expected = " or ".join(k.__name__ for k in _kinds(kind))
        return f"expected {expected}, got {type(value).__name__}"
    return None


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def optional(record: dict[str, Any], field: str, kind: type | tuple[type, ...], label: str, line: int) -> Any:
    """``record[field]`` when present and not null, else None; of ``kind`` when present."""
    if record.get(field) is None:
        return None
    return require(record, field, kind, label, line)


def seconds(record: dict[str, Any], field: str, label: str, line: int, *, required: bool = False) -> float | None:
    """``record[field]``, a number of seconds above 0 and at most :data:`MAX_SECONDS`
    (None when absent and not ``required``)."""
    value = (
        require(record, field, (int, float), label, line)
        if required
        else optional(record, field, (int, float), label, line)
    )
    if value is None:
        return None
    # NaN, Infinity and 1e400 (read as inf) are numbers to Python's json: none passes this.
    if not (math.isfinite(value) and 0 < value <= MAX_SECONDS):
        raise DatasetError(
            label, f"must be above 0 and at most {MAX_SECONDS:g} seconds, not {value!r}", line=line, field=field
        )
    return float(value)


def version(record: dict[str, Any], field: str, label: str, line: int) -> str | None:
    """``record[field]``, a version such as ``12.4`` (None when absent)."""
    value = optional(record, field, str, label, line)
    if value is not None and not re.fullmatch(r"\d{1,4}(\.\d{1,4}){0,3}", value):
        raise DatasetError(label, f"not a version such as 12.4: {value[:40]!r}", line=line, field=field)
    return value  # type: ignore[no-any-return]  # optional() checked it is a str


def file_list(record: dict[str, Any], field: str, label: str, line: int) -> list[dict[str, str]]:
    """A list of ``{"path": str, "content": str}`` objects."""
    files = require(record, field, list, label, line)
    for index, entry in enumerate(files):
        if not isinstance(entry, dict):
            raise DatasetError(label, "expected an object with path and content", line=line, field=f"{field}[{index}]")
        for key in ("path", "content"):
            problem = _problem(entry, key, str)
            if problem is not None:
                raise DatasetError(label, problem, line=line, field=f"{field}[{index}].{key}")
    return files  # type: ignore[no-any-return]  # require() checked it is a list, and each entry above


def archive_members(path: Path, names: Sequence[str], cap: int = MAX_UNPACKED) -> dict[str, bytes]:
    """The members of a .tar.gz datapack whose base names are ``names`` (at any depth), read
    into memory: nothing is extracted, so member names can never write outside. Reading stops
    once the archive has expanded past ``cap`` bytes (a gzip bomb)."""
    found: dict[str, bytes] = {}
    limit = f"{cap >> 20} MiB"
    try:
        with path.open("rb") as raw:
            compressed = path.name.endswith(("gz", ".tgz"))
            stream = _Capped(gzip.GzipFile(fileobj=raw, mode="rb") if compressed else raw, cap)
            # Stream mode: read once, front to back, through the cap; never seeks back.
            with tarfile.open(fileobj=io.BufferedReader(stream), mode="r|") as archive:
                for member in archive:
                    name = member.name.rsplit("/", 1)[-1]
                    if name not in names or not member.isfile():
                        continue
                    if name in found:
                        raise DatasetError(path, f"holds {name} twice")
                    if member.size > cap:
                        raise DatasetError(path, f"{name} is larger than {limit} ({member.size} bytes)")
                    extracted = archive.extractfile(member)
                    assert extracted is not None
                    found[name] = extracted.read(cap + 1)
    except _TooLarge:
        raise DatasetError(path, f"expands past {limit}: not read (a datapack is a few MB)") from None
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise DatasetError(path, f"not a readable .tar.gz datapack ({exc})") from None
    missing = [name for name in names if name not in found]
    if missing:
        raise DatasetError(path, f"the datapack has no {', '.join(missing)}")
    return found


class _TooLarge(Exception):
    pass


class _Capped(io.RawIOBase):
    """A readable stream that raises :class:`_TooLarge` once more than ``limit`` bytes came out."""

    def __init__(self, stream: Any, limit: int) -> None:
        self._stream = stream
        self._left = limit

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        count: int = self._stream.readinto(buffer)
        self._left -= count
        if self._left < 0:
            raise _TooLarge
        return count


def read_capped(path: Path, cap: int) -> bytes:
    """A plain file's bytes, refused unread past ``cap`` (read at most ``cap + 1`` bytes)."""
    with path.open("rb") as stream:
        data = stream.read(cap + 1)
    if len(data) > cap:
        raise DatasetError(path, f"is larger than {cap >> 20} MiB: not read")
    return data


class _NoAliases(yaml.SafeLoader):
    """YAML's safe types, without aliases: ``*name`` repeats a node without copying it, so
    that repeats of repeats turn a small file into a huge record once it is written out or
    hashed (a 1.3 KB spec became 416 MB at depth 8). No dataset needs them."""

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(None, None, "an alias (*name): not accepted, write the value out", mark)
        return super().compose_node(parent, index)


def load_yaml(text: str) -> tuple[yaml.Node | None, Any]:
    """One YAML document's node tree (None when empty) and its value, with YAML's safe types
    only and aliases refused (:class:`yaml.YAMLError`, its ``problem_mark`` on the alias)."""
    loader = _NoAliases(text)
    try:
        node = loader.get_single_node()
        return node, None if node is None else loader.construct_document(node)
    finally:
        loader.dispose()


def is_archive(path: Path) -> bool:
    return path.name.endswith((".tar.gz", ".tgz", ".tar"))


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
