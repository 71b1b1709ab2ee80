"""Tiny fake model packs: wheels laid out as the real ones, and a fetch that copies them."""

from __future__ import annotations

import hashlib
import shutil
import zipfile
from collections.abc import Sequence
from pathlib import Path

from b3os_infer.packs import Pack

CHUNKS = [b"GGUF" + bytes(range(256)) * 9, b"second chunk " * 300, b"the end"]


def fake_pack(chunks: Sequence[bytes] = CHUNKS, sha256: str | None = None) -> Pack:
    whole = b"".join(chunks)
    return Pack(name="tiny", upstream="Tiny (test)", prefix="tiny-model-part",
                count=len(chunks), version="1.0.0", size=len(whole),
                sha256=sha256 or hashlib.sha256(whole).hexdigest())


def make_wheels(pack: Pack, chunks: Sequence[bytes], where: Path) -> Path:
    """Wheels laid out as the real packs are: tiny_model_partN/data/partNN.bin."""
    where.mkdir(parents=True, exist_ok=True)
    for n, chunk in enumerate(chunks, start=1):
        module = f"tiny_model_part{n}"
        wheel = where / f"{module}-{pack.version}-py3-none-any.whl"
        info = f"{module}-{pack.version}.dist-info"
        with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(f"{module}/__init__.py", "")
            zf.writestr(f"{module}/data/part{n:02d}.bin", chunk)
            zf.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\n"
                        f"Name: tiny-model-part{n}\nVersion: {pack.version}\n")
            zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\n"
                        "Root-Is-Purelib: true\nTag: py3-none-any\n")
            zf.writestr(f"{info}/RECORD", "")
    return where


class CopyFetch:
    """Stands in for pip: copies the wheels asked for out of ``index``."""

    def __init__(self, index: Path) -> None:
        self.index = index
        self.calls: list[list[str]] = []

    def __call__(self, requirements: Sequence[str], dest: Path) -> None:
        self.calls.append(list(requirements))
        for requirement in requirements:
            name, version = requirement.split("==")
            for wheel in self.index.glob(f"{name.replace('-', '_')}-{version}-*.whl"):
                shutil.copy(wheel, dest)
