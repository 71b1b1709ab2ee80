"""Building the edge's state from the config file and the environment."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta

from ..config import Config, Home, per_model
from ..observe.metrics import Metrics
from .access.keys import KeyStore
from .admission.limits import Limiter, LimitsConfig, MemoryLimiter
from .admission.queue import QueueConfig, Queues
from .admission.redis_limits import RedisLimiter
from .fleet.node_choice import Balance
from .state import EdgeState
from .storage.db import database_url, open_database
from .storage.usage import UsageLedger

REDIS_ENV = "B3OS_INFER_REDIS_URL"


def key_store(home: Home, config: Config | None = None) -> KeyStore:
    url = database_url(home.database, config.edge.database_url if config else None)
    return KeyStore(open_database(url))


def limiter(config: Config) -> Limiter:
    url = config.edge.redis_url or os.environ.get(REDIS_ENV)
    if not url:
        return MemoryLimiter()
    return RedisLimiter(url)


def limits(config: Config) -> LimitsConfig:
    """The ``[limits.*]`` tables as the edge applies them."""
    return LimitsConfig(*per_model(config.limits))


def concurrency(config: Config) -> QueueConfig:
    """The ``[concurrency.*]`` tables as the edge applies them."""
    return QueueConfig(*per_model(config.concurrency))


def edge_state(config: Config, keys: KeyStore) -> EdgeState:
    return EdgeState(keys=keys, ledger=UsageLedger(keys.engine), limits=limits(config),
                     limiter=limiter(config), queues=Queues(concurrency(config)),
                     max_body_bytes=config.edge.max_body_bytes,
                     metrics=Metrics(config.metrics),
                     body_timeout_seconds=config.edge.body_timeout_seconds,
                     balance=Balance(config.edge.balance_abs_threshold,
                                     config.edge.balance_rel_threshold))


_DURATION = re.compile(r"(\d+)([mhdw])")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def expiry(text: str) -> str:
    """``30d``, ``12h``, ``90m``, ``2w`` from now, or an ISO date/time, as UTC RFC 3339."""
    if match := _DURATION.fullmatch(text.strip()):
        at = datetime.now(UTC) + timedelta(**{_UNITS[match[2]]: int(match[1])})
    else:
        try:
            at = datetime.fromisoformat(text.strip())
        except ValueError:
            raise ValueError(f"--expires {text!r}: give a duration such as 30d, 12h, 90m, "
                             "2w, or a date such as 2027-01-31") from None
        at = at.replace(tzinfo=at.tzinfo or UTC).astimezone(UTC)
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")
