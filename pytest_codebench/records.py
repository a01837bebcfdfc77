"""Reading benchmark files: JSON lines, datapack archives, and fields checked with a clear error."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tarfile
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .errors import DatasetError


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
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
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
    into memory: nothing is extracted, so member names can never write outside."""
    found: dict[str, bytes] = {}
    try:
        compressed = path.name.endswith(("gz", ".tgz"))
        with tarfile.open(path, "r:gz" if compressed else "r:") as archive:
            for member in archive:
                name = member.name.rsplit("/", 1)[-1]
                if name in names and member.isfile():
                    if name in found:
                        raise DatasetError(path, f"holds {name} twice")
                    extracted = archive.extractfile(member)
                    assert extracted is not None
                    found[name] = extracted.read()
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise DatasetError(path, f"not a readable .tar.gz datapack ({exc})") from None
    missing = [name for name in names if name not in found]
    if missing:
        raise DatasetError(path, f"the datapack has no {', '.join(missing)}")
    return found


def is_archive(path: Path) -> bool:
    return path.name.endswith((".tar.gz", ".tgz", ".tar"))


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
