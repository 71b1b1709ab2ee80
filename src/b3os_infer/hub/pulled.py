"""What is pulled from the Hub, under ``<home>/models/hf.co/OWNER/REPO/``.

The files keep their paths in the repository; a download in progress is ``FILE.partial``
beside them. Each model has a record, ``.b3os/TAG.json`` in its repository's folder, that
names its files with their sizes and SHA-256 and its state: ``downloading`` until every
part is there and checked, then ``installed``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from .refs import Gguf, RemoteFile

INSTALLED = "installed"
DOWNLOADING = "downloading"
_RECORDS = ".b3os"


@dataclass(frozen=True)
class Record:
    """A pulled (or partly pulled) model: where it came from and what it is made of."""

    name: str
    repo: str
    revision: str
    endpoint: str
    files: tuple[RemoteFile, ...]
    state: str

    @property
    def gguf(self) -> Gguf:
        return Gguf(self.repo, self.files)

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def source(self) -> str:
        return f"{self.endpoint.rstrip('/')}/{self.repo} @ {self.revision[:12]}"


class Store:
    """The Hub models of one home (``Home.models``)."""

    def __init__(self, models: Path) -> None:
        self.root = models / "hf.co"

    def folder(self, repo: str) -> Path:
        return self.root / repo

    def path(self, repo: str, file: str) -> Path:
        return self.folder(repo) / file

    def partial(self, repo: str, file: str) -> Path:
        target = self.path(repo, file)
        return target.with_name(target.name + ".partial")

    def first(self, record: Record) -> Path:
        """The GGUF to open: the file, or a split's first part."""
        return self.path(record.repo, record.gguf.first)

    def save(self, record: Record) -> None:
        path = self._record_path(record.repo, record.gguf.tag)
        path.parent.mkdir(parents=True, exist_ok=True)
        body = asdict(record)
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(body, indent=2) + "\n")
        temporary.replace(path)

    def records(self, repo: str | None = None) -> list[Record]:
        pattern = f"{repo}/{_RECORDS}/*.json" if repo else f"*/*/{_RECORDS}/*.json"
        found = [_load(p) for p in sorted(self.root.glob(pattern))] if self.root.is_dir() else []
        return [r for r in found if r is not None]

    def installed(self, repo: str) -> list[Record]:
        return [r for r in self.records(repo) if r.state == INSTALLED and self.complete(r)]

    def complete(self, record: Record) -> bool:
        """Every file is there with its recorded size (``models add`` checked their hashes)."""
        return all(self._size(self.path(record.repo, f.path)) == f.size for f in record.files)

    def remove(self, record: Record) -> None:
        """The record, its files and their partial downloads; the folders left empty."""
        for file in record.files:
            self.path(record.repo, file.path).unlink(missing_ok=True)
            self.partial(record.repo, file.path).unlink(missing_ok=True)
        self._record_path(record.repo, record.gguf.tag).unlink(missing_ok=True)
        self._prune(self.folder(record.repo))

    def _prune(self, folder: Path) -> None:
        """Empty folders from ``folder`` up to the store's root (``hf.co``) included."""
        if not folder.is_dir():
            return
        for sub in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True):
            if sub.is_dir() and not any(sub.iterdir()):
                sub.rmdir()
        while folder != self.root.parent and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent

    def _record_path(self, repo: str, tag: str) -> Path:
        return self.folder(repo) / _RECORDS / f"{tag}.json"

    @staticmethod
    def _size(path: Path) -> int:
        return path.stat().st_size if path.is_file() else -1


def _load(path: Path) -> Record | None:
    try:
        body = json.loads(path.read_text())
        files = tuple(RemoteFile(**f) for f in body.pop("files"))
        return Record(files=files, **body)
    except (OSError, ValueError, TypeError, KeyError):
        return None

