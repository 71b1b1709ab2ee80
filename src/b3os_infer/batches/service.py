"""The batch service: its store and runner, built once per app (``apis.py`` builds it with
the APIs' finishers and gives their routes)."""

from __future__ import annotations

import time
from collections.abc import Mapping

from sqlalchemy import Engine
from starlette.types import ASGIApp

from ..config import BatchSettings
from ..edge.access.keys import KeyStore
from ..edge.state import EdgeState
from ..node.registry import ModelRegistry
from .async_store import BatchStore
from .execute import Executor
from .gate import Gate
from .runner import BatchRunner
from .store import BatchRow, Finisher


class BatchService:
    def __init__(self, database: Engine, edge: EdgeState, keys: KeyStore,
                 registry: ModelRegistry, settings: BatchSettings | None = None,
                 finishers: Mapping[str, Finisher] | None = None) -> None:
        self.settings = settings or BatchSettings()
        self.store = BatchStore(database, edge.ledger.threads)
        self.executor = Executor(edge, keys)
        self.runner = BatchRunner(self.store, self.executor,
                                  Gate(registry, edge.queues, self.settings.reserve_slots),
                                  self.settings, dict(finishers or {}))

    def bind(self, app: ASGIApp) -> None:
        """The node's routes, where batch requests run."""
        self.executor.bind(app)

    def start(self) -> None:
        """Run (and resume) batches; idempotent, and called by every batch route too."""
        self.runner.start()

    def submitted(self) -> None:
        self.runner.start()
        self.runner.wake()

    async def cancel(self, batch: BatchRow) -> BatchRow:
        """A batch in progress starts canceling (the runner stops its requests); the batch
        as it is then. One canceling or ended is left as it is."""
        if batch.state != "in_progress":
            return batch
        await self.store.request_cancel(batch.id, time.time())
        self.runner.wake()
        return await self.store.batch_by_id(batch.id) or batch

    async def close(self) -> None:
        await self.runner.close()

