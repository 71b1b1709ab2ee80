"""What the edge holds for its whole life: keys, the ledger, limits, queues, metrics and
the stored responses (in the keys' database)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from ..config import DEFAULT_MAX_BODY_BYTES
from ..observe.metrics import Metrics
from .access.key_gate import KeyGate
from .access.keys import KeyStore
from .admission.limits import Limiter, LimitsConfig, MemoryLimiter
from .admission.queue import QueueConfig, Queues
from .fleet.node_choice import Balance
from .storage.response_store import ResponseTable
from .storage.usage import UsageLedger


@dataclass
class EdgeState:
    keys: KeyStore
    ledger: UsageLedger
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    limiter: Limiter = field(default_factory=MemoryLimiter)
    queues: Queues = field(default_factory=lambda: Queues(QueueConfig()))
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    settle_grace_seconds: float = 5.0
    metrics: Metrics = field(default_factory=Metrics)
    body_timeout_seconds: float = 30.0   # a body that stops arriving this long: 408
    balance: Balance = field(default_factory=Balance)   # when a session's node is too busy
    gate: KeyGate = field(init=False)
    responses: ResponseTable = field(init=False)
    # the ends of requests (settling, the ledger row) still being written after their
    # client left: held here so that no task is dropped half-way (edge/middleware.py)
    finishing: set[asyncio.Task[None]] = field(default_factory=set)

    def __post_init__(self) -> None:
        # The keys' cache and revision watch, on the ledger's database threads.
        self.gate = KeyGate(self.keys, self.ledger.threads)
        self.responses = ResponseTable(self.keys.engine)

    @classmethod
    def for_keys(cls, keys: KeyStore, **options: object) -> EdgeState:
        return cls(keys=keys, ledger=UsageLedger(keys.engine), **options)  # type: ignore[arg-type]
