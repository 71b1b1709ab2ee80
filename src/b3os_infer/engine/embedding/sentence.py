"""The embedding engine: a sentence-transformers model computed in numpy, in batches.

Requests hand their token lists to one worker thread. Each time it wakes it takes every
list that is waiting, from every request, sorts them by length and computes them in
batches of at most ``batch_tokens`` padded tokens, so concurrent requests share the
matrix products and short inputs are not padded to long ones. The event loop only
waits on futures.
"""

from __future__ import annotations

import asyncio
import json
import logging
import queue
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from ...errors import InternalError
from .bert import BertEncoder

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EmbeddingInfo:
    dimensions: int
    # tokens of one input, the model's own special tokens not counted
    max_input_tokens: int
    vocab_size: int
    description: str


@dataclass(eq=False)
class _Job:
    inputs: list[list[int]]
    loop: asyncio.AbstractEventLoop
    done: asyncio.Future[np.ndarray]
    vectors: list[np.ndarray | None] = field(default_factory=list)


class SentenceEmbedder:
    """A sentence-transformers directory (BERT, mean pooling, optional Normalize)."""

    def __init__(self, directory: Path, *, batch_tokens: int = 8192) -> None:
        self.directory = directory
        self.batch_tokens = batch_tokens
        self._encoder = BertEncoder(directory)
        self._normalize = _normalizes(directory)
        self._tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        self._specials = _special_ids(self._tokenizer)
        limit = min(_max_seq_length(directory), self._encoder.config.max_positions)
        config = self._encoder.config
        self.info = EmbeddingInfo(dimensions=config.hidden, max_input_tokens=limit - 2,
                                  vocab_size=config.vocab_size,
                                  description=f"numpy BERT, {config.layers} layers")
        self._inbox: queue.Queue[_Job | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._busy = 0
        self.batches = 0  # batches computed since start, for tests and metrics

    def tokenize(self, text: str) -> list[int]:
        """The text's tokens, without the [CLS] and [SEP] the engine adds itself."""
        return list(self._tokenizer.encode(text, add_special_tokens=False).ids)

    async def embed(self, inputs: list[list[int]]) -> np.ndarray:
        """One vector per token list (each at most ``max_input_tokens``), as rows."""
        if not self.healthy():
            raise InternalError("the embedding engine is not running")
        loop = asyncio.get_running_loop()
        job = _Job(inputs, loop, loop.create_future())
        self._inbox.put(job)
        return await job.done

    async def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="embedder", daemon=True)
            self._thread.start()

    async def close(self) -> None:
        if self._thread is not None:
            self._inbox.put(None)
            await asyncio.to_thread(self._thread.join)
            self._thread = None

    def healthy(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def load(self) -> dict[str, int]:
        return {"active": self._busy, "waiting": self._inbox.qsize()}

    # ---- the worker thread ---------------------------------------------------------

    def _run(self) -> None:
        while True:
            first = self._inbox.get()
            if first is None:
                return
            jobs = [first]
            while True:
                try:
                    more = self._inbox.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._inbox.put(None)  # stop after this round
                    break
                jobs.append(more)
            self._busy = len(jobs)
            self._round([job for job in jobs if not job.done.cancelled()])
            self._busy = 0

    def _round(self, jobs: list[_Job]) -> None:
        cls, sep = self._specials
        work = [(len(tokens), job, index) for job in jobs
                for index, tokens in enumerate(job.inputs)]
        work.sort(key=lambda item: item[0])
        for job in jobs:
            job.vectors = [None] * len(job.inputs)
        try:
            for group in _groups(work, self.batch_tokens):
                batch = [[cls, *job.inputs[index], sep] for _, job, index in group]
                vectors = self._encoder.pooled(batch, normalize=self._normalize)
                self.batches += 1
                for (_, job, index), vector in zip(group, vectors, strict=True):
                    job.vectors[index] = vector
        except Exception:  # one failed batch fails this round's requests, not the worker
            log.exception("embedding batch failed")
            for job in jobs:
                job.loop.call_soon_threadsafe(_fail, job.done)
            return
        for job in jobs:
            rows = [vector for vector in job.vectors if vector is not None]
            job.loop.call_soon_threadsafe(_resolve, job.done, np.stack(rows))


def _groups(work: list[tuple[int, _Job, int]], budget: int
            ) -> list[list[tuple[int, _Job, int]]]:
    """Runs of the length-sorted inputs whose padded size (count x longest) fits the budget."""
    groups: list[list[tuple[int, _Job, int]]] = []
    current: list[tuple[int, _Job, int]] = []
    for item in work:
        if current and (len(current) + 1) * (item[0] + 2) > budget:
            groups.append(current)
            current = []
        current.append(item)
    if current:
        groups.append(current)
    return groups


def _resolve(done: asyncio.Future[np.ndarray], vectors: np.ndarray) -> None:
    if not done.done():
        done.set_result(vectors)


def _fail(done: asyncio.Future[np.ndarray]) -> None:
    if not done.done():
        done.set_exception(InternalError("the embedding engine failed"))


def _special_ids(tokenizer: Tokenizer) -> tuple[int, int]:
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    if cls is None or sep is None:
        raise ValueError("the tokenizer has no [CLS] and [SEP] tokens")
    return cls, sep


def _max_seq_length(directory: Path) -> int:
    path = directory / "sentence_bert_config.json"
    if path.is_file():
        return int(json.loads(path.read_text()).get("max_seq_length", 512))
    return 512


def _normalizes(directory: Path) -> bool:
    """Mean pooling is all we compute; Normalize when the model's modules list it."""
    pooling = directory / "1_Pooling" / "config.json"
    if pooling.is_file() and not json.loads(pooling.read_text()).get("pooling_mode_mean_tokens"):
        raise ValueError(f"{directory}: only mean pooling is supported")
    modules = directory / "modules.json"
    if not modules.is_file():
        return False
    return any(str(m.get("type", "")).endswith(".Normalize")
               for m in json.loads(modules.read_text()))
