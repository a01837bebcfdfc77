"""Git checkouts for benchmarks graded against a repository: one bare mirror per repository
URL on this machine, and a cheap work tree per item.

The mirror is fetched under a file lock, so xdist workers (and concurrent runs) wait for one
fetch instead of racing; a commit it lacks triggers one re-fetch. A work tree is a
``git clone --shared`` of the mirror: its objects stay in the mirror (alternates), nothing
in the mirror changes when it is made or removed, and removing it is deleting a folder.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

from filelock import FileLock

from ..errors import HarnessError
from ..names import name_with

FETCH_TIMEOUT = 1800
GIT_TIMEOUT = 300
# Git run by the harness ignores the caller's and the system's git configuration (hooks,
# aliases, credential helpers, fsmonitor): only what we pass applies.
GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0"}
IDENTITY = ("-c", "user.name=pytest-codebench", "-c", "user.email=codebench@localhost")


def git(*args: str, cwd: Path | None = None, timeout: float = GIT_TIMEOUT) -> subprocess.CompletedProcess[str]:
    """Run git (never raises for its exit code; the caller reads ``returncode``)."""
    try:
        return subprocess.run(
            ["git", *IDENTITY, *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            env={**os.environ, **GIT_ENV},
        )
    except subprocess.TimeoutExpired:
        raise HarnessError(f"git {' '.join(args[:2])} ran past {timeout:g} s") from None
    except FileNotFoundError:
        raise HarnessError("git is not installed") from None


def _checked(result: subprocess.CompletedProcess[str], what: str) -> str:
    if result.returncode != 0:
        raise HarnessError(f"{what} failed (exit {result.returncode}): {result.stderr.strip()[-1000:]}")
    return result.stdout


def resolve_url(url: str, relative_to: Path) -> str:
    """A URL as given, or a local path made absolute (relative to ``relative_to``)."""
    if re.match(r"^[\w+.-]+://", url) or re.match(r"^[\w.-]+@[\w.-]+:", url):
        return url
    return str((relative_to / url).resolve())


@dataclasses.dataclass(frozen=True)
class Mirror:
    """The bare mirror of one repository URL under ``cache_dir/git``."""

    url: str
    cache_dir: Path

    @property
    def path(self) -> Path:
        name = re.sub(r"[^\w.-]+", "_", self.url.rstrip("/").rsplit("/", 1)[-1]).removesuffix(".git")
        digest = hashlib.sha256(self.url.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        return self.cache_dir / "git" / name_with(name, f"-{digest}.git")

    def has(self, commit: str) -> bool:
        return self.path.exists() and git("cat-file", "-e", f"{commit}^{{commit}}", cwd=self.path).returncode == 0

    def ensure(self, commit: str) -> str:
        """Make sure the mirror holds ``commit``: clone it the first time, fetch once when the
        commit is missing. Returns the full SHA."""
        if not self.has(commit):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with FileLock(str(self.path) + ".lock"):
                # Another process may have fetched while this one waited for the lock.
                if not self.has(commit):
                    self._fetch()
                if not self.has(commit):
                    raise HarnessError(f"commit {commit} is not in {self.url} (fetched it again to make sure)")
        return _checked(git("rev-parse", f"{commit}^{{commit}}", cwd=self.path), "git rev-parse").strip()

    def _fetch(self) -> None:
        if not self.path.exists():
            partial = self.path.with_name(self.path.name + ".partial")
            shutil.rmtree(partial, ignore_errors=True)
            _checked(
                git("clone", "--mirror", "--quiet", self.url, str(partial), timeout=FETCH_TIMEOUT),
                f"cloning {self.url}",
            )
            # Work trees borrow the mirror's objects: never let an automatic gc drop one.
            _checked(git("config", "gc.auto", "0", cwd=partial), "git config")
            partial.rename(self.path)  # a half-done clone never looks like a mirror
        else:
            _checked(
                git("fetch", "--quiet", "--prune", "origin", cwd=self.path, timeout=FETCH_TIMEOUT),
                f"fetching {self.url}",
            )

    def worktree(self, commit: str, dest: Path) -> str:
        """Make a clean work tree of ``commit`` at ``dest`` (which must not exist), sharing the
        mirror's objects, its ``HEAD`` detached at the commit. Returns the full SHA."""
        sha = self.ensure(commit)
        _checked(git("clone", "--shared", "--no-checkout", "--quiet", str(self.path), str(dest)), "git clone --shared")
        _checked(git("checkout", "--quiet", "--detach", sha, cwd=dest), f"git checkout {sha}")
        return sha

    def read(self, commit: str, path: str) -> str | None:
        """One text file of ``commit``, or None when it has no such file."""
        result = git("show", f"{commit}:{path}", cwd=self.path)
        return result.stdout if result.returncode == 0 else None
