"""The verdict store a whole cluster shares (``--codebench-store s3://bucket/prefix``): one
object per verdict under the prefix, written once, with the machine's own SQLite store (see
:mod:`.store`) as a read-through cache in front of it.

SQLite's WAL needs every process on one host, so the local file cannot be shared across nodes;
an object store can, and S3's conditional create (``If-None-Match: *``) makes each verdict's
first write the only one: two elements that graded the same key race, one write wins, and
both then serve the winner's verdict. The client is obstore (the Rust ``object_store`` crate
behind a small Python API): it speaks S3 and its compatible servers (MinIO, Ceph, moto), does
conditional puts (``mode="create"``), retries with backoff, and needs no boto3; fsspec's s3fs
would bring aiobotocore and an async loop for the same three calls. Credentials come from the
standard AWS environment (``AWS_ACCESS_KEY_ID``, ``AWS_SESSION_TOKEN``, ``AWS_ENDPOINT_URL``...)
or, where it has none, the shared credentials and config files (``AWS_PROFILE``); they stay in
this process: a model's commands get an environment reduced to an allowlist, and the sandbox
shows no home folder (and masks ``.aws`` in any it shows from one).
"""

from __future__ import annotations

import configparser
import datetime
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from obstore.store import ClientConfig, RetryConfig, S3Config

from .store import Stored, StoreError, VerdictStore, decode, encode
from .store_url import parse_url

# A cluster's store answers in milliseconds; one that does not within these is unreachable,
# and a run must not hang on it (a lookup that fails costs a grading, never the item).
CLIENT: ClientConfig = {"connect_timeout": "5s", "timeout": "30s"}
RETRIES: RetryConfig = {
    "max_retries": 3,
    "backoff": {
        "init_backoff": datetime.timedelta(milliseconds=100),
        "max_backoff": datetime.timedelta(seconds=2),
        "base": 2,
    },
    "retry_timeout": datetime.timedelta(seconds=20),
}


def _file_credentials(environ: Mapping[str, str]) -> dict[str, str]:
    """Keys from the shared credentials and config files, for the profile ``AWS_PROFILE``
    names (default ``default``), where the environment has none of its own."""
    if environ.get("AWS_ACCESS_KEY_ID"):
        return {}
    profile = environ.get("AWS_PROFILE", "default")
    found: dict[str, str] = {}
    home = Path.home() / ".aws"
    sources = (
        (Path(environ.get("AWS_SHARED_CREDENTIALS_FILE", home / "credentials")), profile),
        (
            Path(environ.get("AWS_CONFIG_FILE", home / "config")),
            profile if profile == "default" else f"profile {profile}",
        ),
    )
    for path, section in sources:
        parser = configparser.ConfigParser()
        try:
            parser.read(path)
        except configparser.Error:
            continue
        if parser.has_section(section):
            for key in ("aws_access_key_id", "aws_secret_access_key", "aws_session_token", "region"):
                if parser.has_option(section, key) and key not in found:
                    found[key] = parser.get(section, key)
    return found


class SharedStore:
    """The store at ``url`` behind the local store ``local`` (the same interface as
    :class:`.store.VerdictStore`). Opening checks that the bucket answers: a store that cannot
    be reached is a :class:`StoreError` naming the URL before anything is graded."""

    def __init__(self, url: str, local: VerdictStore) -> None:
        try:
            import obstore
            from obstore.store import S3Store
        except ImportError:
            raise StoreError(f"{url}: an s3:// store needs obstore (pip install 'pytest-codebench[s3]')") from None
        self._obstore = obstore
        self.url = url
        self.local = local
        self.path = local.path
        self.readable = local.readable
        self.writable = local.writable
        bucket, self.prefix = parse_url(url)
        config = cast("S3Config", _file_credentials(os.environ))
        client: ClientConfig = {**CLIENT}
        if os.environ.get("AWS_ENDPOINT_URL", "").startswith("http://"):
            client["allow_http"] = True  # a server on loopback (moto, MinIO) speaks plain HTTP
        try:
            self._remote = S3Store(
                bucket, prefix=self.prefix or None, config=config, client_options=client, retry_config=RETRIES
            )
            # The cheapest request that proves the bucket answers and the keys are good.
            next(iter(obstore.list(self._remote, chunk_size=1)), None)
        except Exception as exc:  # noqa: BLE001 - obstore's errors name the request; any is fatal here
            raise StoreError(f"the verdict store {url} cannot be reached ({_first_line(exc)})") from None

    def get(self, key: str) -> Stored | None:
        """The local copy, else the object (kept locally for the next lookup), else None."""
        hit = self.local.get(key)
        if hit is not None or not self.readable:
            return hit
        return self._fetch(key)

    def _fetch(self, key: str) -> Stored | None:
        try:
            data = json.loads(bytes(self._obstore.get(self._remote, _object(key)).bytes()))
        except FileNotFoundError:
            return None
        stored = Stored(decode(data["verdict"]), data["run"], data["item"], data.get("seconds"))
        if self.local.writable:
            self.local.put(key, stored, data["benchmark"])
        return stored

    def put(self, key: str, stored: Stored, benchmark: str) -> None:
        """Keep ``stored`` as the key's object, unless another element wrote it first (it is
        created only where none is: S3's ``If-None-Match: *``), and locally the verdict that
        won: every node serves the same one from then on. Ours stays in our own report."""
        if not self.writable:
            return
        record = {
            "verdict": encode(stored.verdict),
            "run": stored.run,
            "item": stored.item,
            "seconds": stored.seconds,
            "benchmark": benchmark,
            "stored_at": time.time(),
        }
        try:
            self._obstore.put(self._remote, _object(key), json.dumps(record).encode(), mode="create")
        except self._obstore.exceptions.AlreadyExistsError:
            if self._fetch(key) is not None:
                return
        self.local.put(key, stored, benchmark)

    def count(self) -> int:
        return self.local.count()

    def seconds(self, benchmark: str) -> dict[str, float]:
        return self.local.seconds(benchmark)

    def close(self) -> None:
        self.local.close()


def _object(key: str) -> str:
    # Two levels of fan-out by the key's first characters, as object stores partition by prefix.
    return f"verdicts/{key[:2]}/{key}.json"


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
