"""What ``b3os-infer models add|list|rm`` and ``serve --model hf.co/…`` do with Hub models."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from ..progress import ProgressBar
from . import HubError
from .pull import Hub, Puller
from .pulled import DOWNLOADING, INSTALLED, Record, Store
from .refs import Reference, choose, is_reference, parse


@contextmanager
def _pulling(text: str) -> Iterator[None]:
    """While pulling: no log line per HTTP request (httpx logs each at INFO; the progress
    bar says it), and Ctrl-C a one-line HubError rather than a traceback."""
    loggers = [logging.getLogger(name) for name in ("httpx", "httpx2", "huggingface_hub")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.WARNING)
    try:
        yield
    except KeyboardInterrupt as exc:
        raise HubError(f"stopped pulling {text}; what was downloaded is kept: run the same "
                       "command again to resume") from exc
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def puller(models: Path, hub: Hub | None = None, stream: TextIO = sys.stderr) -> Puller:
    def progress(label: str) -> ProgressBar:
        return ProgressBar(label, stream)

    def said(line: str) -> None:
        print(line, file=stream, flush=True)

    return Puller(hub or Hub(), Store(models), progress, said)


def add(text: str, models: Path, hub: Hub | None = None) -> int:
    """``models add hf.co/…``: 0 when installed (now or before), 1 after saying why not."""
    try:
        with _pulling(text):
            record, downloaded = puller(models, hub).add(parse(text))
    except HubError as exc:
        print(f"b3os-infer: {exc}", file=sys.stderr)
        return 1
    path = Store(models).first(record)
    if downloaded:
        print(f"installed {record.name}: {path}\n{record.size:,} bytes in "
              f"{len(record.files)} file(s), SHA-256 checked against the Hub's")
    else:
        print(f"{record.name} is already installed: {path}")
    print(f"serve it with: b3os-infer serve --model {record.name}")
    return 0


def served(text: str, models: Path, hub: Hub | None = None) -> tuple[str, Path]:
    """``serve --model hf.co/…``: the id and GGUF to serve, added first when missing."""
    with _pulling(text):
        record = puller(models, hub).ensure(parse(text))
    return record.name, Store(models).first(record)


def table(models: Path) -> list[str]:
    """``models list``'s lines for the Hub models in the home."""
    store = Store(models)
    lines = [f"{'HUB MODEL':<52}{'SIZE':>10}  {'STATE':<13}SOURCE"]
    for record in store.records():
        lines.append(f"{record.name:<52}{record.size / 1e6:>7.1f} MB  {_state(store, record):<13}"
                     f"{record.source}")
    if len(lines) == 1:
        lines.append("(none yet: b3os-infer models add hf.co/OWNER/REPO[:TAG])")
    return lines


def _state(store: Store, record: Record) -> str:
    """installed; partial (a download to resume with ``models add``); or incomplete (files
    removed by hand since)."""
    if record.state == DOWNLOADING:
        return "partial"
    return INSTALLED if store.complete(record) else "incomplete"


def remove(text: str, models: Path) -> int:
    """``models rm hf.co/OWNER/REPO[:TAG]``: the model's files, partial ones and record."""
    store = Store(models)
    try:
        record = _named(store, parse(text))
    except HubError as exc:
        print(f"b3os-infer: {exc}", file=sys.stderr)
        return 1
    store.remove(record)
    print(f"removed {record.name} ({record.size:,} bytes)")
    return 0


def _named(store: Store, reference: Reference) -> Record:
    """The model in the store (whatever its state) the reference names, chosen as on the Hub."""
    records = store.records(reference.repo)
    if not records:
        raise HubError(f"no model of {reference.repo} is installed: `b3os-infer models list` "
                       "shows what is")
    chosen = choose(reference, [r.gguf for r in records])
    return next(r for r in records if r.gguf == chosen)


__all__ = ["add", "is_reference", "remove", "served", "table"]
