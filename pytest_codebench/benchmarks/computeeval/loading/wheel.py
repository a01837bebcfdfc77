"""NVIDIA's nvidia-compute-eval wheels, read as zip files: which ComputeEval releases one holds,
and a member's bytes checked against the wheel's RECORD (sha256, urlsafe base64 without padding)."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import re
import zipfile
from collections.abc import Iterable
from pathlib import Path

from pytest_codebench.errors import DatasetError

PACKAGE = "nvidia-compute-eval"
RELEASES = "compute_eval/releases/"


def record_digest(data: bytes, algorithm: str = "sha256") -> str:
    """A hash as a wheel's RECORD writes it: urlsafe base64 without padding."""
    return base64.urlsafe_b64encode(hashlib.new(algorithm, data).digest()).rstrip(b"=").decode()


def record_entry(record: str, member: str) -> tuple[str, str] | None:
    """(algorithm, digest) of ``member`` in the text of a RECORD file, or None if unlisted."""
    for row in csv.reader(io.StringIO(record)):
        if row and row[0] == member and len(row) > 1 and "=" in row[1]:
            algorithm, _, digest = row[1].partition("=")
            return algorithm, digest
    return None


def check_member(label: str, member: str, data: bytes, entry: tuple[str, str] | None, hint: str = "") -> None:
    """Raise a DatasetError naming the file unless ``data`` is what RECORD says ``member`` holds."""
    if entry is None:
        raise DatasetError(label, f"{member} has no hash in the wheel's RECORD")
    algorithm, expected = entry
    if algorithm not in hashlib.algorithms_guaranteed:
        raise DatasetError(label, f"{member}: RECORD uses an unknown hash {algorithm!r}")
    actual = record_digest(data, algorithm)
    if actual != expected:
        raise DatasetError(
            label,
            f"{member} does not match the wheel's RECORD ({algorithm} {actual}, RECORD says {expected}): "
            f"altered or damaged{hint}",
        )


def member_name(release: str) -> str:
    return f"{RELEASES}{release}-problems.tar.gz"


def release_names(names: Iterable[str]) -> list[str]:
    """The releases among a wheel's or a folder's member names."""
    found = (re.fullmatch(re.escape(RELEASES) + r"(.+)-problems\.tar\.gz", name) for name in names)
    return sorted(match.group(1) for match in found if match)


def wheel_version(path: Path) -> str | None:
    """The version in a wheel's file name (``nvidia_compute_eval-2026.1-py3-none-any.whl``)."""
    parts = path.name.split("-")
    return parts[1] if len(parts) >= 5 and path.suffix == ".whl" else None


class Wheel:
    """A wheel read as a zip: its members' names and, verified against RECORD, their bytes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            with zipfile.ZipFile(path) as archive:
                self.names = archive.namelist()
                records = [n for n in self.names if n.count("/") == 1 and n.endswith(".dist-info/RECORD")]
                self.record = archive.read(records[0]).decode() if records else ""
        except (zipfile.BadZipFile, OSError) as exc:
            raise DatasetError(path, f"not a readable wheel ({exc}); delete it to download it again") from None

    @property
    def releases(self) -> list[str]:
        return release_names(self.names)

    def read(self, member: str) -> bytes:
        with zipfile.ZipFile(self.path) as archive:
            data = archive.read(member)
        check_member(
            str(self.path), member, data, record_entry(self.record, member), "; delete the wheel to download it again"
        )
        return data

    def sha256(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()
