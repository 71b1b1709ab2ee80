"""Pulling a model from the Hub with ``huggingface_hub``: choose, check, download, record.

``huggingface_hub`` does what it does for every Hub client: the endpoint (``HF_ENDPOINT``),
the token (``HF_TOKEN`` or a saved login), offline mode (``HF_HUB_OFFLINE``), the model's
file listing with its LFS metadata, and each file's resolution (``HEAD …/resolve/…``, with
the Hub's errors). The bytes then move with ``transfer``, resumably and hashed.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

import httpx
from huggingface_hub import HfApi, constants, get_hf_file_metadata, get_token, hf_hub_url
from huggingface_hub.errors import (
    EntryNotFoundError,
    GatedRepoError,
    HfHubHTTPError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
)

from . import HubError, Interrupted
from .pulled import DOWNLOADING, INSTALLED, Record, Store
from .refs import Gguf, Reference, RemoteFile, choose, ggufs
from .transfer import FreeSpace, Progress, check_space, disk_free, fetch, hash_file


def _transport_errors() -> tuple[type[Exception], ...]:
    """The network errors of httpx and of the HTTP client huggingface_hub uses (httpx2 from
    its 2.0, httpx in 1.x, requests before)."""
    errors: list[type[Exception]] = [httpx.TransportError]
    for module, name in (("httpx2", "TransportError"), ("requests", "RequestException")):
        try:
            errors.append(getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError):
            continue
    return tuple(errors)


NETWORK_ERRORS = _transport_errors()
# what leaves a download to resume rather than deleted
RESUMABLE: tuple[type[Exception], ...] = (Interrupted, *NETWORK_ERRORS)


@dataclass(frozen=True)
class Resolved:
    """The model a reference names on the Hub, at the commit the Hub resolved."""

    gguf: Gguf
    revision: str
    gated: bool


@dataclass
class Hub:
    """The Hub as ``huggingface_hub`` is configured (environment, saved token)."""

    endpoint: str = field(default_factory=lambda: constants.ENDPOINT)
    offline: bool = field(default_factory=lambda: bool(constants.HF_HUB_OFFLINE))
    token: str | None = field(default_factory=get_token)
    free_space: FreeSpace = disk_free
    timeout: float = 30.0

    def resolve(self, reference: Reference) -> Resolved:
        with self._errors(reference):
            info = HfApi(endpoint=self.endpoint, token=self._token()).model_info(
                reference.repo, files_metadata=True)
        files = [RemoteFile(s.rfilename, s.lfs.size, s.lfs.sha256)
                 for s in info.siblings or () if s.lfs is not None]
        return Resolved(choose(reference, ggufs(reference.repo, files)), str(info.sha),
                        bool(info.gated))

    def location(self, reference: Reference, revision: str, path: str) -> str:
        """Where the file's bytes are (the Hub redirects LFS files to its CDN)."""
        url = hf_hub_url(reference.repo, path, revision=revision, endpoint=self.endpoint)
        with self._errors(reference):
            meta = get_hf_file_metadata(url, token=self._token())
        return str(meta.location)

    def _token(self) -> str | bool:
        """Ours, or False: huggingface_hub would otherwise look for one again."""
        return self.token or False

    def headers(self, url: str) -> dict[str, str]:
        """The token goes to the Hub only, never to the CDN it redirects to."""
        if self.token and _origin(url) == _origin(self.endpoint):
            return {"Authorization": f"Bearer {self.token}"}
        return {}

    @contextmanager
    def _errors(self, reference: Reference) -> Iterator[None]:
        try:
            yield
        except GatedRepoError as exc:
            raise HubError(self.gated_message(reference)) from exc
        except RepositoryNotFoundError as exc:
            raise HubError(f"{reference}: no model repository {reference.repo} on "
                           f"{self.endpoint} (a private one needs HF_TOKEN)") from exc
        except EntryNotFoundError as exc:
            raise HubError(f"{reference}: a file the Hub lists is missing: {exc}") from exc
        except OfflineModeIsEnabled as exc:
            raise HubError(f"{reference} is not installed and HF_HUB_OFFLINE is set") from exc
        except HfHubHTTPError as exc:
            error = Interrupted if _transient(exc) else HubError
            raise error(f"{reference}: the Hub answered {_first_line(exc)}") from exc
        except NETWORK_ERRORS as exc:
            raise Interrupted(f"{reference}: cannot reach the Hub at {self.endpoint} "
                           f"({exc or type(exc).__name__})") from exc

    def gated_message(self, reference: Reference) -> str:
        page = f"{self.endpoint}/{reference.repo}"
        if self.token:
            return (f"{reference} is gated and the account of your HF_TOKEN has no access: "
                    f"accept its conditions at {page}")
        return (f"{reference} is gated: accept its conditions at {page}, then set HF_TOKEN "
                "to a token of that account")


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port


def _transient(exc: HfHubHTTPError) -> bool:
    """429 and 5xx: worth trying again later, so a download in progress is kept."""
    status = getattr(exc.response, "status_code", None) or 0
    return status == 429 or status >= 500


def _first_line(exc: Exception) -> str:
    return next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)


def installed_choice(reference: Reference, store: Store) -> Record | None:
    """The installed model the reference names, chosen as on the Hub; None if there is none."""
    records = store.installed(reference.repo)
    try:
        chosen = choose(reference, [r.gguf for r in records])
    except HubError:
        return None
    return next(r for r in records if r.gguf == chosen)


ProgressFactory = Callable[[str], Progress]


@dataclass
class Puller:
    """``models add hf.co/…``: the model into the store, checked, or nothing installed."""

    hub: Hub
    store: Store
    progress: ProgressFactory | None = None
    said: Callable[[str], None] = lambda _: None

    def add(self, reference: Reference) -> tuple[Record, bool]:
        """The installed record, and whether it was downloaded now (False: already there)."""
        if self.hub.offline:
            if (record := installed_choice(reference, self.store)) is None:
                raise HubError(f"{reference} is not installed and HF_HUB_OFFLINE is set: "
                               "unset it to download")
            return record, False
        resolved = self.hub.resolve(reference)
        if (record := self._already(resolved)) is not None:
            return record, False
        if resolved.gated and not self.hub.token:
            raise HubError(self.hub.gated_message(reference))
        return self._download(reference, resolved), True

    def ensure(self, reference: Reference) -> Record:
        """An installed model the reference names, else the one ``add`` installs."""
        return installed_choice(reference, self.store) or self.add(reference)[0]

    def _already(self, resolved: Resolved) -> Record | None:
        for record in self.store.installed(resolved.gguf.repo):
            if record.files == resolved.gguf.parts:
                return record
        return None

    def _download(self, reference: Reference, resolved: Resolved) -> Record:
        gguf = resolved.gguf
        record = Record(gguf.name, gguf.repo, resolved.revision, self.hub.endpoint,
                        gguf.parts, DOWNLOADING)
        # the first file's resolution checks access (a gated repo answers it with 401/403)
        known = {gguf.first: self.hub.location(reference, resolved.revision, gguf.first)}
        folder = self.store.folder(gguf.repo)
        check_space(self._missing(gguf), folder, self.hub.free_space)
        folder.mkdir(parents=True, exist_ok=True)
        self.store.save(record)
        self.said(f"downloading {gguf.name} ({gguf.size / 1e9:.2f} GB in "
                  f"{len(gguf.parts)} file{'s' if len(gguf.parts) > 1 else ''}) "
                  f"from {self.hub.endpoint}/{gguf.repo}")
        try:
            self._parts(reference, resolved, known)
        except RESUMABLE as exc:
            raise HubError(f"the download of {gguf.name} was interrupted "
                           f"({exc or type(exc).__name__}); run the same command again to "
                           "resume it") from exc
        except HubError:
            self.store.remove(record)
            raise
        installed = replace(record, state=INSTALLED)
        self.store.save(installed)
        return installed

    def _missing(self, gguf: Gguf) -> int:
        """The bytes still to download: finished parts and partial downloads count as done."""
        missing = 0
        for part in gguf.parts:
            done = [p.stat().st_size for p in (self.store.path(gguf.repo, part.path),
                                                self.store.partial(gguf.repo, part.path))
                    if p.is_file()]
            missing += max(part.size - max(done, default=0), 0)
        return missing

    def _parts(self, reference: Reference, resolved: Resolved, known: dict[str, str]) -> None:
        gguf = resolved.gguf
        bar = self.progress(f"pulling {gguf.name}") if self.progress else None
        offset = 0
        with httpx.Client(timeout=self.hub.timeout, follow_redirects=True) as client:
            for part in gguf.parts:
                url = known.get(part.path) or self.hub.location(reference, resolved.revision,
                                                                part.path)
                self._part(client, url, resolved.gguf.repo, part,
                           _shifted(bar, offset, gguf.size))
                offset += part.size

    def _part(self, client: httpx.Client, url: str, repo: str, part: RemoteFile,
              progress: Callable[[int], None]) -> None:
        target = self.store.path(repo, part.path)
        if target.is_file():
            if hash_file(target) == part.sha256:
                progress(part.size)   # a part a previous run finished and checked
                return
            target.unlink()   # another revision's file
        fetch(client, url, self.hub.headers(url), part, target, progress)


def _shifted(bar: Progress | None, offset: int, total: int) -> Callable[[int], None]:
    def told(done: int) -> None:
        if bar is not None:
            bar(offset + done, total)
    return told
