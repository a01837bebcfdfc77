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

from ..errors import DatasetError

# No timeout or limit a dataset gives may exceed a day: larger ones are typos or attacks (1e300
# overflows pytest-timeout's timer and ends the whole session).
MAX_SECONDS = 86400.0
# What a datapack may expand to, and what one member read into memory may hold: real
# datapacks are a few megabytes; a gzip bomb expands a small file to gigabytes.
MAX_UNPACKED = 256 << 20


@dataclasses.dataclass(frozen=True)
class Line:
    """One line of a JSONL file: its 1-based number, its exact bytes (with the newline the
    writer gave it, for hashing) and either the decoded object or why it could not be read."""

    number: int
    raw: bytes
    value: dict[str, Any] | None
    error: DatasetError | None


def read_jsonl(label: str, data: bytes) -> Iterator[Line]:
    """Every non-blank line of ``data``; a line that is not a JSON object carries an error."""
    for number, raw in enumerate(data.splitlines(keepends=True), start=1):
        if not raw.strip():
            continue
        if not raw.endswith(b"\n"):
            raw += b"\n"  # writers end every line with one; the last may have lost it
        try:
            value = json.loads(raw)
        except ValueError as exc:  # also a number of thousands of digits, which int() refuses
            yield Line(number, raw, None, DatasetError(label, f"not valid JSON ({exc})", line=number))
            continue
        if not isinstance(value, dict):
            yield Line(number, raw, None, DatasetError(label, "not a JSON object", line=number))
            continue
        yield Line(number, raw, value, None)


def read_records(label: str, data: bytes) -> Iterator[Line]:
    """The objects of a JSON array, or of JSON lines, each with the line it starts on.

    One bad element of an array becomes a line with an error; an array that is not valid
    JSON cannot be split into records and raises :class:`DatasetError` for the whole file."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(label, f"not UTF-8 ({exc})") from None
    start = len(text) - len(text.lstrip())
    if not text.startswith("[", start):
        yield from read_jsonl(label, data)
        return
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


def archive_members(path: Path, names: Sequence[str]) -> dict[str, bytes]:
    """The members of a .tar.gz datapack whose base names are ``names`` (at any depth), read
    into memory: nothing is extracted, so member names can never write outside. Reading stops
    once the archive has expanded past :data:`MAX_UNPACKED` bytes (a gzip bomb)."""
    found: dict[str, bytes] = {}
    limit = f"{MAX_UNPACKED >> 20} MiB"
    try:
        with path.open("rb") as raw:
            compressed = path.name.endswith(("gz", ".tgz"))
            stream = _Capped(gzip.GzipFile(fileobj=raw, mode="rb") if compressed else raw, MAX_UNPACKED)
            # Stream mode: read once, front to back, through the cap; never seeks back.
            with tarfile.open(fileobj=io.BufferedReader(stream), mode="r|") as archive:
                for member in archive:
                    name = member.name.rsplit("/", 1)[-1]
                    if name not in names or not member.isfile():
                        continue
                    if name in found:
                        raise DatasetError(path, f"holds {name} twice")
                    if member.size > MAX_UNPACKED:
                        raise DatasetError(path, f"{name} is larger than {limit} ({member.size} bytes)")
                    extracted = archive.extractfile(member)
                    assert extracted is not None
                    found[name] = extracted.read(MAX_UNPACKED + 1)
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


def is_archive(path: Path) -> bool:
    return path.name.endswith((".tar.gz", ".tgz", ".tar"))


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
