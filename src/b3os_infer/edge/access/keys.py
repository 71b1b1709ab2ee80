"""API keys: only a SHA-256 hash is stored, compared in constant time.

A key may be limited to some models and may expire. Storage is the edge database
(``edge/storage/db.py``): SQLite by default, Postgres by URL.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, func, select, update

from ... import ids
from ..storage.db import api_keys, open_database

SCOPES = {
    "infer": "every route under /v1/infer but the model listings and the admin API (messages, "
             "completions, responses, embeddings, batches, files)",
    "models:read": "model listings",
    "metrics:read": "the Prometheus scrape, GET /metrics",
    "server_tools": "server tools (web search, web fetch) run by the node for the key's "
                    "requests; a request that offers one without it is refused (403)",
    "admin": "every route",
}
DEFAULT_SCOPES = ("infer", "models:read", "server_tools")
_PREFIX = "b3os_"
_TOUCH_SECONDS = 60.0


@dataclass(frozen=True)
class KeyRecord:
    id: str
    name: str
    scopes: tuple[str, ...]
    created_at: str
    last_used_at: str | None
    revoked_at: str | None
    models: tuple[str, ...] | None = None
    expires_at: str | None = None

    def allows(self, scope: str) -> bool:
        return scope in self.scopes or "admin" in self.scopes

    def allows_model(self, model_id: str) -> bool:
        return self.models is None or model_id in self.models

    def expired(self, now: str | None = None) -> bool:
        return self.expires_at is not None and self.expires_at <= (now or utc_now())


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def key_digest(key: str) -> str:
    """What is stored of a key (never the key itself)."""
    return hashlib.sha256(key.encode()).hexdigest()


def well_formed(key: str) -> bool:
    """Shaped like a key we make (``b3os_<id>_<secret>``); only those are looked up."""
    return _key_id(key) is not None


def _key_id(key: str) -> str | None:
    if not key.startswith(_PREFIX):
        return None
    parts = key[len(_PREFIX):].split("_", 1)
    return parts[0] if len(parts) == 2 else None


_COLUMNS = (api_keys.c.id, api_keys.c.name, api_keys.c.scopes, api_keys.c.created_at,
            api_keys.c.last_used_at, api_keys.c.revoked_at, api_keys.c.models,
            api_keys.c.expires_at)


class KeyStore:
    def __init__(self, database: Engine | Path | str) -> None:
        if isinstance(database, Path):
            database = f"sqlite:///{database}"
        self.engine = open_database(database) if isinstance(database, str) else database
        self._touched: dict[str, float] = {}
        self._lock = threading.Lock()
        self.revoked_here = 0   # revocations made through this store, in this process

    def create(self, name: str, scopes: tuple[str, ...] = DEFAULT_SCOPES, *,
               models: tuple[str, ...] | None = None,
               expires_at: str | None = None) -> tuple[KeyRecord, str]:
        unknown = [s for s in scopes if s not in SCOPES]
        if unknown:
            raise ValueError(f"unknown scope {unknown[0]!r}; scopes are {', '.join(SCOPES)}")
        key_id = ids.ulid()[-12:]
        key = f"{_PREFIX}{key_id}_{secrets.token_urlsafe(32).replace('_', 'x')}"
        record = KeyRecord(key_id, name, tuple(scopes), utc_now(), None, None,
                           tuple(models) if models else None, expires_at)
        with self.engine.begin() as db:
            db.execute(api_keys.insert().values(
                id=key_id, name=name, key_hash=key_digest(key), scopes=json.dumps(list(scopes)),
                models=json.dumps(list(models)) if models else None,
                created_at=record.created_at, expires_at=expires_at))
        return record, key

    def list(self) -> list[KeyRecord]:
        with self.engine.connect() as db:
            rows = db.execute(select(*_COLUMNS).order_by(api_keys.c.created_at,
                                                         api_keys.c.id)).all()
        return [_record(tuple(row)) for row in rows]

    def active_count(self) -> int:
        query = select(func.count()).select_from(api_keys).where(api_keys.c.revoked_at.is_(None))
        with self.engine.connect() as db:
            return int(db.execute(query).scalar_one())

    def revoke(self, key_or_id: str) -> KeyRecord:
        """Effective at once in this process; on every edge that shares the database at
        its next look at ``revision`` (``key_gate.py``: at most a second later)."""
        key_id = _key_id(key_or_id) or key_or_id
        with self.engine.begin() as db:
            db.execute(update(api_keys).where(api_keys.c.id == key_id,
                                              api_keys.c.revoked_at.is_(None))
                       .values(revoked_at=utc_now()))
        self.revoked_here += 1
        record = next((r for r in self.list() if r.id == key_id), None)
        if record is None:
            raise KeyError(f"no key with id {key_id!r}")
        return record

    def revision(self) -> tuple[int, int]:
        """Changes whenever a key is revoked, created or deleted: one cheap query that each
        edge makes once a second instead of looking up every key on every request."""
        query = select(func.count(), func.count(api_keys.c.revoked_at)).select_from(api_keys)
        with self.engine.connect() as db:
            total, revoked = db.execute(query).one()
        return int(total), int(revoked)

    def verify(self, key: str) -> KeyRecord | None:
        """The key's record if it is known and not revoked; None otherwise. Blocking and
        uncached: the request path goes through ``KeyGate`` instead.

        An expired key is returned (so the caller can say it expired); check ``expired()``.
        """
        record = self.lookup(key)
        if record is not None and self.touch_due(record.id):
            self.touch(record.id)
        return record

    def touch_due(self, key_id: str) -> bool:
        """True at most once a minute per key: then its ``last_used_at`` is written."""
        now = time.monotonic()
        with self._lock:
            if now - self._touched.get(key_id, -1e9) <= _TOUCH_SECONDS:
                return False
            self._touched[key_id] = now
        return True

    def touch(self, key_id: str) -> None:
        with self.engine.begin() as db:
            db.execute(update(api_keys).where(api_keys.c.id == key_id)
                       .values(last_used_at=utc_now()))

    def lookup(self, key: str) -> KeyRecord | None:
        key_id = _key_id(key)
        if key_id is None:
            return None
        with self.engine.connect() as db:
            row = db.execute(select(*_COLUMNS, api_keys.c.key_hash)
                             .where(api_keys.c.id == key_id)).first()
        if row is None or row[5] is not None:
            return None
        if not hmac.compare_digest(row[8], key_digest(key)):
            return None
        return _record(tuple(row[:8]))


def _record(row: tuple) -> KeyRecord:  # type: ignore[type-arg]
    models = tuple(json.loads(row[6])) if row[6] else None
    return KeyRecord(row[0], row[1], tuple(json.loads(row[2])), row[3], row[4], row[5],
                     models, row[7])
