"""The edge's database: keys, the usage ledger and stored responses, through SQLAlchemy.

SQLite under ``$B3OS_INFER_HOME`` by default; any SQLAlchemy URL (Postgres for a fleet:
``postgresql+psycopg://user:pass@host/db``) by ``[edge] database_url`` or
``B3OS_INFER_DATABASE_URL``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Column,
    Engine,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    event,
    inspect,
    text,
)
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

DATABASE_ENV = "B3OS_INFER_DATABASE_URL"

metadata = MetaData()

api_keys = Table(
    "api_keys", metadata,
    Column("id", String(32), primary_key=True),
    Column("name", Text, nullable=False),
    Column("key_hash", String(64), nullable=False),
    Column("scopes", Text, nullable=False),
    Column("models", Text),
    Column("created_at", String(20), nullable=False),
    Column("expires_at", String(20)),
    Column("last_used_at", String(20)),
    Column("revoked_at", String(20)),
)

usage = Table(
    "usage", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("request_id", String(40), nullable=False),
    Column("key_id", String(32), index=True),
    Column("model", Text, nullable=False),
    Column("route", Text, nullable=False),
    Column("status", Integer, nullable=False),
    Column("input_tokens", Integer, nullable=False),
    Column("output_tokens", Integer, nullable=False),
    Column("cached_tokens", Integer, nullable=False),
    Column("latency_ms", Float, nullable=False),
    Column("created_at", String(20), nullable=False),
)

# Responses kept for ``GET /responses/{id}`` and ``previous_response_id``: the response
# and its input items as JSON, owned by the key that made it.
stored_responses = Table(
    "stored_responses", metadata,
    Column("id", String(64), primary_key=True),
    Column("key_id", String(32), nullable=False, index=True),
    Column("model", Text, nullable=False),
    Column("created_at", String(20), nullable=False),
    Column("body", Text, nullable=False),
    Column("items", Text, nullable=False),
)

# Columns added after the first release; an older database gets them on open.
_ADDED_COLUMNS = {"api_keys": {"models": "TEXT", "expires_at": "VARCHAR(20)"}}


def database_url(home_database: Path, configured: str | None = None) -> str:
    return configured or os.environ.get(DATABASE_ENV) or f"sqlite:///{home_database}"


def open_database(url: str) -> Engine:
    """An engine with the schema in place (created or brought up to date)."""
    engine = create_engine(url, pool_pre_ping=True)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    create_schema(metadata, engine)
    _add_missing_columns(engine)
    return engine


def create_schema(tables: MetaData, engine: Engine, attempts: int = 5) -> None:
    """Create the missing tables. Processes that open one database at the same moment
    (two edges started together) race between "is it there" and "create it": the one
    that loses sees "already exists" and looks again."""
    for attempt in range(attempts):
        try:
            tables.create_all(engine)
            return
        except (OperationalError, ProgrammingError, IntegrityError):
            if attempt == attempts - 1:
                raise
            time.sleep(0.1 * (attempt + 1))


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


def _add_missing_columns(engine: Engine) -> None:
    inspector = inspect(engine)
    for table, columns in _ADDED_COLUMNS.items():
        present = {c["name"] for c in inspector.get_columns(table)}
        for name, sql_type in columns.items():
            if name not in present:
                with engine.begin() as db:
                    db.execute(text(f"ALTER TABLE {table} ADD COLUMN {name} {sql_type}"))
