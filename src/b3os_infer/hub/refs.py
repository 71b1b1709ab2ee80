"""Names of Hub models and the choice of a GGUF among a repository's files (no I/O).

A reference is ``hf.co/OWNER/REPO`` or ``hf.co/OWNER/REPO:TAG``; TAG is a quantization
(``Q4_K_M``) or a file name, matched case-insensitively. A GGUF split in parts
(``NAME-00001-of-00003.gguf``) is one model made of all its parts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from . import HubError

PREFIXES = ("hf.co/", "huggingface.co/")
DEFAULT_QUANT = "Q4_K_M"
_REPO = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
_SPLIT = re.compile(r"^(?P<base>.+)-(?P<part>\d{5})-of-(?P<count>\d{5})\.gguf$", re.IGNORECASE)
_QUANT = re.compile(r"^(I?Q\d+(_[A-Z0-9]+)*|[BF]?F\d+|BF16|MXFP4(_MOE)?)$", re.IGNORECASE)


@dataclass(frozen=True)
class Reference:
    """``hf.co/OWNER/REPO[:TAG]`` as the user wrote it."""

    repo: str
    tag: str | None = None

    def __str__(self) -> str:
        return f"hf.co/{self.repo}" + (f":{self.tag}" if self.tag else "")


@dataclass(frozen=True)
class RemoteFile:
    """A file of the repository with the size and SHA-256 the Hub's LFS metadata gives."""

    path: str
    size: int
    sha256: str


@dataclass(frozen=True)
class Gguf:
    """One model of a repository: a GGUF file, or all the parts of a split GGUF in order."""

    repo: str
    parts: tuple[RemoteFile, ...]

    @property
    def first(self) -> str:
        """The file llama.cpp opens (it finds a split's other parts itself)."""
        return self.parts[0].path

    @property
    def tag(self) -> str:
        """The quantization in the file name (upper case), else the file name without .gguf."""
        return quant_of(self.first) or _stem(self.first)

    @property
    def name(self) -> str:
        """The name it is installed and served under: ``hf.co/OWNER/REPO:TAG``."""
        return f"hf.co/{self.repo}:{self.tag}"

    @property
    def size(self) -> int:
        return sum(part.size for part in self.parts)


def is_reference(text: str) -> bool:
    return text.startswith(PREFIXES)


def parse(text: str) -> Reference:
    """``hf.co/OWNER/REPO[:TAG]`` (or ``huggingface.co/…``); HubError if it is not one."""
    rest = next((text[len(p):] for p in PREFIXES if text.startswith(p)), None)
    repo, _, tag = (rest or "").partition(":")
    if not _REPO.match(repo) or (_ and not tag):
        raise HubError(f"{text!r} is not a Hub model name: write hf.co/OWNER/REPO or "
                       "hf.co/OWNER/REPO:TAG (TAG a quantization such as Q4_K_M, or a file name)")
    return Reference(repo=repo, tag=tag or None)


def quant_of(path: str) -> str | None:
    """The quantization a GGUF's name (or its folder) gives, e.g. ``Q4_K_M``; None if none."""
    folders = path.split("/")[:-1]
    words = re.split(r"[-.]", _stem(path))
    for word in [*reversed(words), *reversed(folders)]:
        if _QUANT.match(word):
            return word.upper()
    return None


def ggufs(repo: str, files: Iterable[RemoteFile]) -> list[Gguf]:
    """The repository's models: single GGUFs and complete splits; projectors left out."""
    singles: list[Gguf] = []
    splits: dict[tuple[str, int], list[tuple[int, RemoteFile]]] = {}
    for file in files:
        base = file.path.rsplit("/", 1)[-1]
        if not base.lower().endswith(".gguf") or base.lower().startswith("mmproj"):
            continue
        if match := _SPLIT.match(file.path):
            key = (match["base"], int(match["count"]))
            splits.setdefault(key, []).append((int(match["part"]), file))
        else:
            singles.append(Gguf(repo, (file,)))
    for (_, count), parts in splits.items():
        if sorted(n for n, _ in parts) == list(range(1, count + 1)):
            singles.append(Gguf(repo, tuple(f for _, f in sorted(parts, key=lambda p: p[0]))))
    return sorted(singles, key=lambda g: g.first)


def choose(reference: Reference, models: Sequence[Gguf]) -> Gguf:
    """The model the reference names among ``models``; HubError saying what there is if none."""
    if not models:
        raise HubError(f"{reference.repo} has no GGUF file: only GGUF models can be served")
    if reference.tag is None:
        return _default(reference, models)
    found = [m for m in models if _matches(reference.tag, m)]
    if len(found) == 1:
        return found[0]
    listed = ", ".join(m.first for m in (found or models))
    what = "matches several GGUF files" if found else "matches no GGUF file"
    raise HubError(f"tag {reference.tag!r} {what} of {reference.repo}; its GGUF files: {listed}")


def _default(reference: Reference, models: Sequence[Gguf]) -> Gguf:
    if len(models) == 1:
        return models[0]
    found = [m for m in models if m.tag == DEFAULT_QUANT]
    if len(found) == 1:
        return found[0]
    listed = ", ".join(m.first for m in models)
    raise HubError(f"{reference.repo} has several GGUF files and no single {DEFAULT_QUANT}: "
                   f"name one as hf.co/{reference.repo}:TAG; its GGUF files: {listed}")


def _matches(tag: str, model: Gguf) -> bool:
    wanted = tag.lower()
    names = {model.tag.lower()}
    for part in model.parts:
        base = part.path.rsplit("/", 1)[-1].lower()
        names |= {part.path.lower(), base, _stem(base)}
    return wanted in names


def _stem(path: str) -> str:
    base = path.rsplit("/", 1)[-1]
    if match := _SPLIT.match(base):
        return match["base"]
    return base[:-5] if base.lower().endswith(".gguf") else base
