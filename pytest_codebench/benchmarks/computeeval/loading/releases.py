"""ComputeEval releases by name: ``--codebench-dataset 2026-1`` becomes NVIDIA's own datapack.

NVIDIA shipped the releases up to 2026-1 inside its PyPI package ``nvidia-compute-eval`` 2026.1,
as ``compute_eval/releases/<name>-problems.tar.gz``; since 2026.2 every release lives in the
Hugging Face dataset (see hub), where NVIDIA corrects problems in place. So the Hub comes first,
for every name (its client answers from its own cache when the Hub cannot be reached, and says
so); only where neither the Hub nor that cache can answer is an older release read from the
2026.1 wheel, where the user has it (the license forbids redistributing them): an installed
``compute_eval`` package (located, never imported: it pulls in heavy dependencies), a wheel
cached in the cache dir, or a wheel that pip downloads. The header says which, and that a
wheel's copy may predate NVIDIA's corrections. Offline, the client retries the Hub for about
23 s first; ``HF_HUB_OFFLINE=1`` spares that. The datapack used is checked against the wheel's RECORD
and extracted alone into the cache (the benchmark reads datapacks from a path).

Cache layout under ``<cache-dir>/computeeval/``: ``wheels/*.whl`` (and ``wheels/<version>.no-releases``
for versions found to hold none), ``releases/<version>/<name>-problems.tar.gz`` (``installed-<version>``
for copies from an installed package), ``resolve.lock``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from filelock import FileLock, Timeout
from packaging.version import InvalidVersion, Version

from pytest_codebench.errors import HarnessError
from pytest_codebench.once import write_atomically
from pytest_codebench.options import CACHE_DIR, DATASET
from pytest_codebench.sweeps.verdict_keys import digest

from . import hub
from .datapacks import read_problems
from .wheel import PACKAGE, RELEASES, Wheel, check_member, member_name, record_digest, record_entry, wheel_version

if TYPE_CHECKING:
    from pytest_codebench.context import RunContext

MODULE = "compute_eval"
# The newest version known to hold releases when this was written: named in the offline hint.
KNOWN_VERSION = "2026.1"
RELEASE_NAME = re.compile(r"\d{4}-\d{1,2}")
# The same PyPI name also carries another package line (26.x, 25.x) with no releases inside:
# at most this many versions, newest first, are downloaded in search of one that has them.
MAX_TRIES = 5
PIP_TIMEOUT = 900.0
STASH_KEY = pytest.StashKey["Resolved | None"]()
HUB = "hugging face hub"

Announce = Callable[[str], None]


@dataclasses.dataclass(frozen=True)
class Resolved:
    """Where a release name led: the datapack, and what it was read from."""

    release: str
    path: Path
    source: str  # "installed package", "cached wheel" or "downloaded wheel"
    version: str | None  # of nvidia-compute-eval, when known
    origin: str | None = None  # the wheel, or the installed package's file
    wheel_sha256: str | None = None
    revision: str | None = None  # the Hugging Face dataset's commit, for source "hugging face hub"

    def to_json(self) -> dict[str, Any]:
        return {"package": PACKAGE, **{k: str(v) if isinstance(v, Path) else v for k, v in vars(self).items()}}

    def header(self) -> str:
        if self.source == HUB:
            return f"codebench: ComputeEval release {self.release} from {self.origin}, revision {self.revision}"
        version = f"{PACKAGE} {self.version}" if self.version else f"{PACKAGE} (version unknown)"
        sha = f", wheel sha256 {self.wheel_sha256}" if self.wheel_sha256 else ""
        return (
            f"codebench: ComputeEval release {self.release} from {version} ({self.source}{sha}); "
            "it may predate NVIDIA's in-place corrections on the Hugging Face dataset"
        )


# -- pure rules ---------------------------------------------------------------------------------


def looks_like_release(text: str) -> bool:
    """Whether ``--codebench-dataset`` names a release (``2026-1``) rather than a file: an
    existing path always wins."""
    return bool(RELEASE_NAME.fullmatch(text)) and not Path(text).exists()


def versions_to_try(versions: Iterable[str]) -> list[str]:
    """The versions worth downloading, newest first: final releases only (PEP 440 order puts
    2026.1 above 26.3), at most MAX_TRIES of them."""
    parsed = []
    for text in versions:
        try:
            version = Version(text)
        except InvalidVersion:
            continue
        if not (version.is_prerelease or version.is_devrelease):
            parsed.append((version, text))
    return [text for _, text in sorted(parsed, reverse=True)][:MAX_TRIES]


def _version_key(path: Path) -> tuple[int, Version]:
    try:
        return 1, Version(wheel_version(path) or "")
    except InvalidVersion:
        return 0, Version("0")


# -- the cache -----------------------------------------------------------------------------------


def extract(wheel: Wheel, release: str, root: Path, source: str) -> Resolved:
    """The release's datapack out of ``wheel``, verified, in the cache (reused when intact)."""
    member = member_name(release)
    version = wheel_version(wheel.path)
    target = root / "releases" / (version or "unknown") / f"{release}-problems.tar.gz"
    entry = record_entry(wheel.record, member)
    intact = False
    if target.exists() and entry is not None and entry[0] in hashlib.algorithms_guaranteed:
        intact = record_digest(target.read_bytes(), entry[0]) == entry[1]
    if not intact:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(target, wheel.read(member))
    return Resolved(release, target, source, version, str(wheel.path), wheel.sha256())


# -- the three places -----------------------------------------------------------------------------


def from_installed(release: str, root: Path) -> Resolved | None:
    """The datapack in an installed ``compute_eval`` package, found without importing it and
    checked against the installed distribution's RECORD when that is the same copy. It is
    graded from a copy in the cache: collecting a file inside the package would make pytest
    import the package's ``__init__`` (and its heavy dependencies)."""
    try:
        spec = importlib.util.find_spec(MODULE)
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec else []:
        path = Path(location) / "releases" / f"{release}-problems.tar.gz"
        if path.is_file():
            version = _check_installed(path, release)
            data = path.read_bytes()
            target = root / "releases" / f"installed-{version or 'unknown'}" / path.name
            if not target.exists() or target.read_bytes() != data:
                target.parent.mkdir(parents=True, exist_ok=True)
                write_atomically(target, data)
            return Resolved(release, target, "installed package", version, str(path))
    return None


def _check_installed(path: Path, release: str) -> str | None:
    """The installed distribution's version, after checking ``path`` against its RECORD."""
    try:
        distribution = importlib.metadata.distribution(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return None
    member = member_name(release)
    for file in distribution.files or []:
        if str(file) == member and Path(str(distribution.locate_file(file))).resolve() == path.resolve():
            entry = (file.hash.mode, file.hash.value) if file.hash else None
            check_member(str(path), member, path.read_bytes(), entry)
            return distribution.version
    return None  # another copy of compute_eval than the distribution's: nothing to check against


def cached_wheels(root: Path) -> list[Wheel]:
    """The cached wheels that hold releases, newest first."""
    paths = sorted((root / "wheels").glob("*.whl"), key=_version_key, reverse=True)
    return [wheel for wheel in map(Wheel, paths) if wheel.releases]


def _pip(args: list[str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pip", *args]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=PIP_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(command, 1, "", f"pip did not finish in {PIP_TIMEOUT:.0f} s")


def _pip_failure(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line.strip() for line in (result.stderr + result.stdout).splitlines() if line.strip()]
    return lines[-1] if lines else f"pip exited {result.returncode}"


def available_versions() -> list[str]:
    """The versions of nvidia-compute-eval the package index offers (pip's own configuration)."""
    base = ["index", "versions", "--ignore-requires-python", PACKAGE]
    result = _pip([*base, "--json"])
    if result.returncode == 0:
        return list(json.loads(result.stdout)["versions"])
    if "--json" in result.stderr:  # a pip older than `index versions --json`
        result = _pip(base)
        match = re.search(r"Available versions:(.*)", result.stdout)
        if result.returncode == 0 and match:
            return [v.strip() for v in match.group(1).split(",") if v.strip()]
    raise HarnessError(_pip_failure(result))


def download(root: Path, announce: Announce) -> Wheel:
    """The newest nvidia-compute-eval wheel that holds releases, from the cache or from pip
    (downloaded to a temporary folder, moved into place once it is known to hold releases)."""
    wheels = root / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    clear_partial(root)
    announce(f"codebench: asking the package index (pip) for {PACKAGE}, to get ComputeEval's releases")
    versions = versions_to_try(available_versions())
    cached = {wheel_version(path): path for path in wheels.glob("*.whl")}
    failures = []
    for version in versions:
        if (wheels / f"{version}.no-releases").exists():
            continue
        wheel = Wheel(cached[version]) if version in cached else _download_one(wheels, version, announce)
        if isinstance(wheel, str):
            failures.append(wheel)  # no wheel of that version (an sdist only?): try the next
            continue
        if wheel.releases:
            return wheel
        # Another package line, or a version that no longer bundles them: never downloaded again.
        (wheels / f"{version}.no-releases").touch()
        wheel.path.unlink()
    tried = ", ".join(versions) or "(no versions)"
    raise HarnessError(failures[-1] if failures else f"none of {PACKAGE} {tried} holds {RELEASES}")


def _download_one(wheels: Path, version: str, announce: Announce) -> Wheel | str:
    """The wheel of ``version``, moved into ``wheels`` whole; or what pip said went wrong."""
    announce(f"codebench: downloading {PACKAGE}=={version} into {wheels} (pip download)")
    with tempfile.TemporaryDirectory(dir=wheels, prefix=".download-") as temporary:
        args = ["download", "--no-deps", "--only-binary=:all:", "--ignore-requires-python"]
        result = _pip([*args, f"{PACKAGE}=={version}", "-d", temporary])
        got = list(Path(temporary).glob("*.whl"))
        if result.returncode != 0 or not got:
            return _pip_failure(result)
        os.replace(got[0], wheels / got[0].name)
    return Wheel(wheels / got[0].name)


def ways_out(cache_dir: Path) -> str:
    return (
        f"either run `pip download --no-deps {PACKAGE}=={KNOWN_VERSION} -d {cache_dir / 'computeeval' / 'wheels'}` "
        "on a machine with internet and copy the wheel there, or pass the path of a "
        "*-problems.tar.gz with --codebench-dataset"
    )


def resolve(release: str, cache_dir: Path, announce: Announce) -> Resolved:
    """The problems of ``release``: the Hugging Face dataset (or its client's cache); where
    neither has it, the 2026.1 wheel: installed, cached, or downloaded by pip."""
    try:
        return from_hub(release, announce)
    except HarnessError as exc:
        if release == hub.NEWEST:  # in no wheel
            raise
        away = exc
    announce(f"codebench: the Hugging Face dataset cannot give release {release}; trying {PACKAGE}'s wheel")
    root = cache_dir / "computeeval"
    found = from_installed(release, root)
    if found is not None:
        return found
    root.mkdir(parents=True, exist_ok=True)
    # Several xdist workers (or runs) resolve at once: one downloads, the others then find it.
    try:
        with FileLock(str(root / "resolve.lock"), timeout=PIP_TIMEOUT):
            return _from_wheels(release, cache_dir, root, away, announce)
    except Timeout:
        raise HarnessError(
            f"waited {PIP_TIMEOUT:.0f} s for another process resolving ComputeEval releases in {root}"
        ) from None


def from_hub(release: str, announce: Announce) -> Resolved:
    """The release's problems.jsonl from the Hugging Face dataset, or its client's cache."""
    announce(f"codebench: getting ComputeEval release {release} from the Hugging Face dataset {hub.REPO}")
    found = hub.download(release)
    return Resolved(release, found.path, HUB, None, f"{hub.REPO}:{found.filename}", revision=found.revision)


def _from_wheels(release: str, cache_dir: Path, root: Path, away: HarnessError, announce: Announce) -> Resolved:
    """A cached wheel, else the newest one pip finds; ``away`` is why the Hub could not answer."""
    cached = cached_wheels(root)
    for wheel in cached:
        if release in wheel.releases:
            return extract(wheel, release, root, "cached wheel")
    hub_said = f"the Hugging Face dataset: {away}"
    try:
        wheel = download(root, announce)
    except HarnessError as exc:
        if cached:  # offline, but what is here can still say which names exist
            raise HarnessError(
                f"--codebench-dataset: unknown ComputeEval release {release!r}: the cached {PACKAGE} "
                f"{wheel_version(cached[0].path)} holds {', '.join(cached[0].releases)}, no newer "
                f"version could be fetched ({exc}), and {hub_said}"
            ) from None
        raise HarnessError(
            f"--codebench-dataset {release}: ComputeEval release {release!r} could not be had. {hub_said}. "
            f"{PACKAGE} is not installed or cached, and downloading it with pip failed ({exc}). "
            f"Or, {ways_out(cache_dir)}."
        ) from None
    if release in wheel.releases:
        return extract(wheel, release, root, "downloaded wheel")
    raise HarnessError(
        f"--codebench-dataset: unknown ComputeEval release {release!r}: {PACKAGE} "
        f"{wheel_version(wheel.path)} holds {', '.join(wheel.releases)}, and {hub_said}"
    )


# -- the plugin's side ------------------------------------------------------------------------------


class _Header:
    """Puts the release's origin into pytest's report header."""

    def __init__(self, resolved: Resolved) -> None:
        self.resolved = resolved

    def pytest_report_header(self) -> str:
        return self.resolved.header()


def _announce(line: str) -> None:
    # Written as it happens (pytest's own reporter may not be set up yet): a download can take
    # a while, and the user must see that one is happening.
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def resolve_setting(context: RunContext) -> Resolved | None:
    """The release ``--codebench-dataset`` names, resolved once per process; None for a path."""
    given = context.settings[DATASET]
    if not given or not looks_like_release(str(given)):
        return None
    config = context.config
    if STASH_KEY in config.stash:
        return config.stash[STASH_KEY]
    resolved = resolve(str(given), Path(context.settings[CACHE_DIR]).expanduser(), _announce)
    config.stash[STASH_KEY] = resolved
    config.pluginmanager.register(_Header(resolved), "codebench-release")
    return resolved


def report_info(context: RunContext) -> dict[str, Any]:
    """The release's origin for the JSON report, when the dataset was given by release name."""
    config = context.config
    resolved = config.stash.get(STASH_KEY, None) if config is not None else None
    if not resolved:
        return {}
    # What each problem held: a release name is not a content (NVIDIA corrects in place).
    problems = read_problems(resolved.path)[0]
    hashes = {task_id: digest(problem.record) for task_id, problem in problems.items()}
    return {"release": {**resolved.to_json(), "problem_sha256": hashes}}


def clear_partial(root: Path) -> None:
    """Remove downloads left half-done by a killed process (temporary folders only)."""
    for leftover in (root / "wheels").glob(".download-*"):
        shutil.rmtree(leftover, ignore_errors=True)
