"""API keys in SQLite: only a hash is stored, compared in constant time."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from .. import ids

SCOPES = {
    "infer": "inference routes (messages, chat/completions, count_tokens)",
    "models:read": "model listings",
    "admin": "every route",
}
DEFAULT_SCOPES = ("infer", "models:read")
_PREFIX = "b3os_"
_CACHE_SECONDS = 2.0
_TOUCH_SECONDS = 60.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS api_keys (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    key_hash TEXT NOT NULL,
    scopes TEXT NOT NULL,
    created_at TEXT NOT NULL,
    last_used_at TEXT,
    revoked_at TEXT
)
"""


@dataclass(frozen=True)
class KeyRecord:
    id: str
    name: str
    scopes: tuple[str, ...]
    created_at: str
    last_used_at: str | None
    revoked_at: str | None

    def allows(self, scope: str) -> bool:
        return scope in self.scopes or "admin" in self.scopes


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _key_id(key: str) -> str | None:
    if not key.startswith(_PREFIX):
        return None
    parts = key[len(_PREFIX):].split("_", 1)
    return parts[0] if len(parts) == 2 else None


class KeyStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._cache: dict[str, tuple[float, KeyRecord]] = {}
        self._touched: dict[str, float] = {}
        self._lock = threading.Lock()
        with self._connect() as db:
            db.execute(_SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=10)
        try:
            with db:
                yield db
        finally:
            db.close()

    def create(self, name: str, scopes: tuple[str, ...] = DEFAULT_SCOPES) -> tuple[KeyRecord, str]:
        unknown = [s for s in scopes if s not in SCOPES]
        if unknown:
            raise ValueError(f"unknown scope {unknown[0]!r}; scopes are {', '.join(SCOPES)}")
        key_id = ids.ulid()[-12:]
        key = f"{_PREFIX}{key_id}_{secrets.token_urlsafe(32).replace('_', 'x')}"
        record = KeyRecord(key_id, name, tuple(scopes), _now(), None, None)
        with self._connect() as db:
            db.execute("INSERT INTO api_keys VALUES (?, ?, ?, ?, ?, NULL, NULL)",
                       (key_id, name, _hash(key), json.dumps(list(scopes)), record.created_at))
        return record, key

    def list(self) -> list[KeyRecord]:
        with self._connect() as db:
            rows = db.execute("SELECT id, name, scopes, created_at, last_used_at, revoked_at "
                              "FROM api_keys ORDER BY created_at, id").fetchall()
        return [_record(row) for row in rows]

    def active_count(self) -> int:
        with self._connect() as db:
            (count,) = db.execute(
                "SELECT COUNT(*) FROM api_keys WHERE revoked_at IS NULL").fetchone()
        return int(count)

    def revoke(self, key_or_id: str) -> KeyRecord:
        key_id = _key_id(key_or_id) or key_or_id
        with self._connect() as db:
            db.execute("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND "
                       "revoked_at IS NULL", (_now(), key_id))
        with self._lock:
            self._cache.clear()
        record = next((r for r in self.list() if r.id == key_id), None)
        if record is None:
            raise KeyError(f"no key with id {key_id!r}")
        return record

    def verify(self, key: str) -> KeyRecord | None:
        """The key's record if it is known and not revoked; None otherwise."""
        digest = _hash(key)
        now = time.monotonic()
        with self._lock:
            cached = self._cache.get(digest)
        if cached and now - cached[0] < _CACHE_SECONDS:
            record: KeyRecord | None = cached[1]
        else:
            record = self._lookup(key, digest)
            if record is not None:
                with self._lock:
                    self._cache[digest] = (now, record)
        if record is not None and now - self._touched.get(record.id, -1e9) > _TOUCH_SECONDS:
            self._touched[record.id] = now
            with self._connect() as db:
                db.execute("UPDATE api_keys SET last_used_at = ? WHERE id = ?",
                           (_now(), record.id))
        return record

    def _lookup(self, key: str, digest: str) -> KeyRecord | None:
        key_id = _key_id(key)
        if key_id is None:
            return None
        with self._connect() as db:
            row = db.execute("SELECT id, name, scopes, created_at, last_used_at, revoked_at, "
                             "key_hash FROM api_keys WHERE id = ?", (key_id,)).fetchone()
        if row is None or row[5] is not None:
            return None
        if not hmac.compare_digest(row[6], digest):
            return None
        return _record(row[:6])


def _record(row: tuple) -> KeyRecord:  # type: ignore[type-arg]
    return KeyRecord(row[0], row[1], tuple(json.loads(row[2])), row[3], row[4], row[5])
