"""A Hugging Face Hub on 127.0.0.1: the HTTP API as ``huggingface_hub`` uses it, over files here.

What it answers, as huggingface.co does:

- ``GET /api/models/{repo}`` and ``/api/models/{repo}/revision/{rev}``: the model's info with
  ``sha`` and ``siblings``; with ``?blobs=True`` (``files_metadata=True``) each sibling has its
  ``size``, ``blobId`` and ``lfs`` ``{size, sha256, pointerSize}``.
- ``HEAD``/``GET /{repo}/resolve/{rev}/{file}``: a 302 to the file's bytes on the CDN (here
  ``/cdn/{sha256}`` on a second port: another origin, as the real CDN is) with
  ``X-Repo-Commit``, ``ETag``, ``X-Linked-Etag`` and ``X-Linked-Size``.
- ``GET /cdn/{sha256}``: the bytes, with ``Range`` (206, ``Content-Range``) for resuming.
- Errors with the headers ``huggingface_hub`` reads: ``X-Error-Code: RepoNotFound`` (401
  without a token, 404 with one), ``GatedRepo`` (401 without a token, 403 with one not
  granted), ``EntryNotFound`` (404); ``X-Error-Message`` says it in words.

A file can be served damaged (``corrupt``: one byte changed, the listing's hash kept) or cut
once (``cut_once``: the first full GET stops after that many bytes, as a dropped connection),
fail once (``fail_once``: the first GET of its bytes answers that HTTP status), or stall once
(``stall_once``: the first full GET sends that many bytes and then nothing, as a slow link).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

_BLOCK = 1 << 20


@dataclass
class HubFile:
    """A file of a repository: its bytes on disk, and how to misbehave when serving it."""

    source: Path
    corrupt: bool = False
    cut_once: int | None = None
    fail_once: int | None = None     # the first GET of the bytes answers this status
    stall_once: int | None = None    # the first full GET sends this many bytes, then waits
    sha256: str = ""

    def __post_init__(self) -> None:
        self.sha256 = self.sha256 or _sha256(self.source)

    @property
    def size(self) -> int:
        return self.source.stat().st_size


@dataclass
class HubRepo:
    files: dict[str, HubFile]
    gated: bool = False
    granted: tuple[str, ...] = ()       # tokens with access to a gated repo
    commit: str = "0123456789abcdef0123456789abcdef01234567"


@dataclass
class Seen:
    method: str
    path: str
    range: str | None
    authorization: str | None


@dataclass
class LocalHub:
    repos: dict[str, HubRepo]
    seen: list[Seen] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)
    url: str = ""
    cdn: str = ""

    def blob(self, sha256: str) -> HubFile | None:
        return next((f for r in self.repos.values() for f in r.files.values()
                     if f.sha256 == sha256), None)


_SHA_CACHE: dict[tuple[str, int, int], str] = {}


def _sha256(path: Path) -> str:
    key = (str(path), path.stat().st_size, path.stat().st_mtime_ns)
    if key not in _SHA_CACHE:
        digest = hashlib.sha256()
        with path.open("rb") as source:
            while block := source.read(_BLOCK):
                digest.update(block)
        _SHA_CACHE[key] = digest.hexdigest()
    return _SHA_CACHE[key]


_INFO = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+?)(/revision/(?P<rev>[^/]+))?$")
_RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<file>.+)$")
_CDN = re.compile(r"^/cdn/(?P<sha>[0-9a-f]{64})$")


class _Handler(BaseHTTPRequestHandler):
    hub: LocalHub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        return

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def do_GET(self) -> None:
        self._answer(body=True)

    def _answer(self, body: bool) -> None:
        url = urlsplit(self.path)
        path = unquote(url.path)
        self.hub.seen.append(Seen(self.command, path, self.headers.get("Range"),
                                  self.headers.get("Authorization")))
        if match := _INFO.match(path):
            self._info(match["repo"], "blobs" in parse_qs(url.query))
        elif match := _RESOLVE.match(path):
            self._resolve(match["repo"], match["rev"], match["file"])
        elif match := _CDN.match(path):
            self._bytes(match["sha"], body)
        else:
            self._error(404, "", "Not found")

    def _token(self) -> str | None:
        header = self.headers.get("Authorization") or ""
        return header.removeprefix("Bearer ") or None

    def _repo(self, name: str) -> HubRepo | None:
        repo = self.hub.repos.get(name)
        if repo is None:
            status = 404 if self._token() else 401
            self._error(status, "RepoNotFound", "Repository not found")
        return repo

    def _info(self, name: str, blobs: bool) -> None:
        if (repo := self._repo(name)) is None:
            return
        siblings = [{"rfilename": path} | ({"size": f.size, "blobId": f.sha256[:40],
                                            "lfs": {"size": f.size, "sha256": f.sha256,
                                                    "pointerSize": 135}} if blobs else {})
                    for path, f in repo.files.items()]
        self._json(200, {"_id": name, "id": name, "modelId": name, "sha": repo.commit,
                         "private": False, "disabled": False,
                         "gated": "auto" if repo.gated else False,
                         "tags": ["gguf"], "siblings": siblings})

    def _resolve(self, name: str, rev: str, path: str) -> None:
        if (repo := self._repo(name)) is None:
            return
        if repo.gated and self._token() not in repo.granted:
            status = 403 if self._token() else 401
            self._error(status, "GatedRepo", f"Access to model {name} is restricted. You must "
                        "have access to it and be authenticated to access it. Please log in.")
            return
        if (file := repo.files.get(path)) is None or rev not in (repo.commit, "main"):
            self._error(404, "EntryNotFound", f"{path} does not exist on {rev}")
            return
        self.send_response(302)
        self.send_header("Location", f"{self.hub.cdn}/cdn/{file.sha256}")
        self.send_header("X-Repo-Commit", repo.commit)
        self.send_header("ETag", f'"{file.sha256[:40]}"')
        self.send_header("X-Linked-Etag", f'"{file.sha256}"')
        self.send_header("X-Linked-Size", str(file.size))
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _bytes(self, sha256: str, body: bool) -> None:
        if (file := self.hub.blob(sha256)) is None:
            self._error(404, "", "No such blob")
            return
        if body and file.fail_once is not None:
            status, file.fail_once = file.fail_once, None
            self._error(status, "", "Service unavailable")
            return
        start = _range_start(self.headers.get("Range"))
        self.send_response(206 if start else 200)
        self.send_header("Content-Length", str(file.size - start))
        self.send_header("Accept-Ranges", "bytes")
        if start:
            self.send_header("Content-Range", f"bytes {start}-{file.size - 1}/{file.size}")
        self.end_headers()
        if body:
            self._send(file, start)

    def _send(self, file: HubFile, start: int) -> None:
        if not start and file.stall_once is not None:
            stall, file.stall_once = file.stall_once, None
            self.wfile.write(next(_blocks(file, 0))[1][:stall])
            self.wfile.flush()
            self.hub.stopping.wait(60)
            self.close_connection = True
            return
        limit = file.cut_once if not start else None
        if limit is not None:
            file.cut_once = None
        for offset, block in _blocks(file, start):
            if limit is not None and offset + len(block) > limit:
                self.wfile.write(block[:max(limit - offset, 0)])
                self.close_connection = True
                self.wfile.flush()
                self.connection.shutdown(2)
                return
            self.wfile.write(block)

    def _error(self, status: int, code: str, message: str) -> None:
        body = json.dumps({"error": message}).encode()
        self.send_response(status)
        if code:
            self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", message)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, payload: object) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


def _range_start(header: str | None) -> int:
    match = re.match(r"^bytes=(\d+)-$", header or "")
    return int(match[1]) if match else 0


def _blocks(file: HubFile, start: int) -> Iterator[tuple[int, bytes]]:
    with file.source.open("rb") as source:
        source.seek(start)
        offset = start
        while block := source.read(_BLOCK):
            if file.corrupt and offset <= file.size // 2 < offset + len(block):
                at = file.size // 2 - offset
                block = block[:at] + bytes([block[at] ^ 0xFF]) + block[at + 1:]
            yield offset, block
            offset += len(block)


@contextmanager
def local_hub(repos: dict[str, HubRepo]) -> Iterator[LocalHub]:
    """The Hub serving ``repos`` on a free port of 127.0.0.1, stopped afterwards."""
    hub = LocalHub(repos)
    handler = type("Handler", (_Handler,), {"hub": hub})
    servers = [ThreadingHTTPServer(("127.0.0.1", 0), handler) for _ in range(2)]
    hub.url, hub.cdn = (f"http://127.0.0.1:{s.server_address[1]}" for s in servers)
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in servers]
    for thread in threads:
        thread.start()
    try:
        yield hub
    finally:
        hub.stopping.set()
        for server, thread in zip(servers, threads, strict=True):
            server.shutdown()
            server.server_close()
            thread.join()
