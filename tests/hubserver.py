"""A small Hugging Face Hub on loopback, for the tests of ComputeEval's hub releases.

It speaks the part of the Hub's protocol that ``huggingface_hub.hf_hub_download`` uses (found by
running the client against it): ``HEAD`` and ``GET /datasets/<repo>/resolve/<revision>/<path>``,
answered with the commit (``X-Repo-Commit``), the file's ETag and its size. Every request must
carry ``Authorization: Bearer <token>``; without it the answer is the Hub's own for a gated
repository (401, ``X-Error-Code: GatedRepo``), which the client turns into ``GatedRepoError``.
Pointing ``HF_ENDPOINT`` at ``server.url`` makes the real client download from here.
"""

from __future__ import annotations

import hashlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

TOKEN = "hf_codebench_test_token"


class Hub:
    """One dataset repository: its files at one commit, replaced whole by :meth:`publish`."""

    def __init__(self, repo: str, token: str = TOKEN) -> None:
        self.repo = repo
        self.token = token
        self.files: dict[str, bytes] = {}
        self.commit = ""
        self.requests: list[str] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def publish(self, files: dict[str, bytes]) -> str:
        """A new commit holding ``files``; its sha (as the Hub's, 40 hex digits)."""
        self.files = dict(files)
        digest = hashlib.sha1(repr(sorted(files.items())).encode())  # noqa: S324 - a commit id, not security
        self.commit = digest.hexdigest()
        return self.commit

    def __enter__(self) -> Hub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's name
                pass

            def do_HEAD(self) -> None:  # noqa: N802 - http.server's name
                self._answer(body=False)

            def do_GET(self) -> None:  # noqa: N802
                self._answer(body=True)

            def _answer(self, body: bool) -> None:
                hub.requests.append(f"{self.command} {self.path}")
                prefix = f"/datasets/{hub.repo}/resolve/"
                path = unquote(self.path.split("?", 1)[0])
                if self.headers.get("Authorization") != f"Bearer {hub.token}":
                    return self._error(401, "GatedRepo", "Access to this dataset is restricted.", body)
                if not path.startswith(prefix):
                    return self._error(404, "RepoNotFound", "Repository not found", body)
                revision, _, name = path[len(prefix) :].partition("/")
                if revision not in ("main", hub.commit):
                    return self._error(404, "RevisionNotFound", "Invalid rev id", body)
                if name not in hub.files:
                    return self._error(404, "EntryNotFound", "Entry not found", body)
                data = hub.files[name]
                self.send_response(200)
                self.send_header("X-Repo-Commit", hub.commit)
                self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Content-Type", "application/octet-stream")
                self.end_headers()
                if body:
                    self.wfile.write(data)

            def _error(self, status: int, code: str, message: str, body: bool) -> None:
                payload = f'{{"error": "{message}"}}'.encode()
                self.send_response(status)
                self.send_header("X-Error-Code", code)
                self.send_header("X-Error-Message", message)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if body:
                    self.wfile.write(payload)

        return Handler
