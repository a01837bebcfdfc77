"""Which host folders a sandboxed command sees of the tools it runs: the Python running us, the
folders of ``PATH`` and the CUDA toolkit, and never what a home keeps beside them.

A tool manager (pyenv, cargo, pip --user) finds its programs through shims that run its own
scripts, so the parent of its bin/ or shims/ folder is needed. Outside a home (/opt/conda,
/usr/local/go) it is bound whole; in a home (~/.cargo, ~/.pyenv, ~/.local) only the parts its
programs run from, since beside them lie credentials (~/.cargo/credentials.toml), configuration
and caches. As depth, what looks like a credential in a folder bound from a home is masked.
"""

from __future__ import annotations

import os
import pwd
import re
import sys
from collections.abc import Iterable
from pathlib import Path

CUDA_VARS = ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT")
# In a home, the parts of a tool manager's folder (~/.pyenv, ~/.cargo, ~/.local) that its
# programs run from; the rest (credentials, configuration, caches) stays out.
MANAGER_PARTS = ("bin", "shims", "libexec", "plugins", "pyenv.d", "versions", "version", "lib")
# Names of credentials (files or folders), masked where a folder bound from a home holds them.
CREDENTIAL = re.compile(
    r"\.(ssh|aws|azure|gcloud|docker|kube|gnupg|netrc|pypirc|npmrc|yarnrc|git-credentials|config|env)"
    r"|\.?(credentials|.*token|.*secret|.*password|keyrings?|gnupg|id_(rsa|dsa|ecdsa|ed25519)).*"
    r"|.*\.(pem|key|p12|pfx)",
    re.IGNORECASE,
)


def under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def homes() -> list[str]:
    """Folders that hold someone's home: the caller's ($HOME may be a test's, and the account's),
    and every account's usual place."""
    mine = [os.path.expanduser("~"), pwd.getpwuid(os.getuid()).pw_dir]
    return sorted({os.path.realpath(path) for path in (*mine, "/root", "/home")})


def in_home(folder: str, home_folders: Iterable[str]) -> bool:
    return any(under(folder, home) for home in home_folders)


def tool_folders(home_folders: list[str]) -> list[str]:
    """The folders commands find programs in: the Python running us, PATH, the CUDA toolkit."""
    python = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    python.append(str(Path(os.path.realpath(sys.executable)).parent.parent))
    path = [entry for entry in os.environ.get("PATH", "").split(":") if entry.startswith("/")]
    # A tool manager (pyenv, cargo) finds its programs through shims that run its own scripts:
    # its whole folder, the parent of bin/ or shims/ (never a home itself: see base_mounts). In
    # a home, only the parts its programs run from: never its credentials
    # (~/.cargo/credentials.toml), its configuration or its caches.
    managers = [str(Path(entry).parent) for entry in path if Path(entry).name in ("bin", "shims")]
    for manager in (folder for folder in managers if folder.count("/") > 1):
        real = os.path.realpath(manager)
        if real in home_folders or os.path.dirname(real) == "/home":
            continue  # ~/bin on PATH: a home is no tool manager's folder
        path += [os.path.join(manager, part) for part in MANAGER_PARTS] if in_home(real, home_folders) else [manager]
    cuda = [os.environ[name] for name in CUDA_VARS if os.environ.get(name, "").startswith("/")]
    return [*python, *path, *cuda]


def credentials(folder: str, depth: int = 2) -> Iterable[str]:
    """What looks like a credential in ``folder``, down to ``depth`` levels (never through a link)."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return
    for name in names:
        path = os.path.join(folder, name)
        if CREDENTIAL.fullmatch(name):
            yield path
        elif depth > 1 and os.path.isdir(path) and not os.path.islink(path):
            yield from credentials(path, depth - 1)
