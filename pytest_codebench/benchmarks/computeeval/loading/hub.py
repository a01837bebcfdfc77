"""ComputeEval releases from NVIDIA's Hugging Face dataset ``nvidia/compute-eval``.

Since 2026.2 the problems live there, not in the wheel: ``data/problems.jsonl`` is the newest
release, ``data/archive/<release>/problems.jsonl`` the older ones (bare JSON lines, no metadata,
no hashes). ``huggingface_hub`` does the fetching: it owns the cache layout, offline mode,
tokens and the endpoint, and reads ``HF_TOKEN``, ``HF_HOME``, ``HF_HUB_OFFLINE`` and
``HF_ENDPOINT`` itself; nothing here overrides them. When the Hub cannot be reached it answers
from its cache by itself, so unlike NVIDIA's loader there is no second call, and each way of
failing becomes one error that says what to do instead of a stack of the client's.

NVIDIA corrects problems in place, so a release name is not a content: the commit the file came
from (the ``snapshots/<sha>`` folder of the client's cache) is recorded with it.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from pytest_codebench.errors import HarnessError

REPO = "nvidia/compute-eval"
NEWEST = "2026-2"  # data/problems.jsonl; the wheel of 2026.1 holds every release before it


@dataclasses.dataclass(frozen=True)
class HubFile:
    path: Path
    filename: str
    revision: str | None  # the dataset's commit sha


def filename(release: str) -> str:
    return "data/problems.jsonl" if release == NEWEST else f"data/archive/{release}/problems.jsonl"


def revision_of(path: Path) -> str | None:
    """The commit a file of the client's cache belongs to: ``.../snapshots/<sha>/<filename>``."""
    parts = path.parts
    return parts[parts.index("snapshots") + 1] if "snapshots" in parts[:-1] else None


def warm_command(release: str) -> str:
    return f"hf download {REPO} {filename(release)} --repo-type dataset"


def download(release: str) -> HubFile:
    """The release's problems.jsonl, from the Hub or, where it cannot be reached, the client's cache."""
    # Imported here: the client is only needed by a run that names a release, and its
    # settings (HF_HOME, HF_ENDPOINT...) are read from the environment when it is imported.
    from huggingface_hub import constants, hf_hub_download
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    name = filename(release)
    where = f"{constants.ENDPOINT}/datasets/{REPO} ({name})"
    try:
        path = hf_hub_download(repo_id=REPO, filename=name, repo_type="dataset")
    except GatedRepoError:
        raise HarnessError(_token_hint(where, "refused access to the gated dataset")) from None
    except LocalEntryNotFoundError as exc:  # before EntryNotFoundError, of which it is one
        raise HarnessError(_offline_hint(release, where, constants, exc)) from None
    except (EntryNotFoundError, RevisionNotFoundError):
        raise HarnessError(f"{where}: no such file: the dataset has no release {release!r}") from None
    except RepositoryNotFoundError:
        raise HarnessError(_token_hint(where, "said the dataset does not exist or needs a token")) from None
    except HfHubHTTPError as exc:
        if exc.response is not None and exc.response.status_code in (401, 403):
            raise HarnessError(_token_hint(where, f"answered {exc.response.status_code}")) from None
        raise HarnessError(f"{where}: {_first_line(exc)}") from None
    return HubFile(Path(path), name, revision_of(Path(path)))


def _token_hint(where: str, what: str) -> str:
    token = "the token in HF_TOKEN" if os.environ.get("HF_TOKEN") else "no token (HF_TOKEN is not set)"
    return (
        f"{where}: the Hub {what}, with {token}. Accept the dataset's terms on huggingface.co with "
        "your account, then set HF_TOKEN to a token of that account or run `hf auth login`"
    )


def _offline_hint(release: str, where: str, constants: object, exc: Exception) -> str:
    offline = bool(getattr(constants, "HF_HUB_OFFLINE", False))
    why = "offline mode is on (HF_HUB_OFFLINE)" if offline else f"the Hub could not be reached ({_first_line(exc)})"
    home = getattr(constants, "HF_HOME", "~/.cache/huggingface")
    return (
        f"{where}: {why}, and the Hugging Face cache at {getattr(constants, 'HF_HUB_CACHE', home)} does not "
        f"hold it. On a machine with network run `{warm_command(release)}` (with HF_HOME set as you like), "
        f"then copy that HF_HOME folder here and point HF_HOME at it (here it is {home}); it then "
        "works offline, HF_HUB_OFFLINE=1 included"
    )


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
