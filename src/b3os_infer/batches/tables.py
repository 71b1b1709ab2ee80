"""The batch tables, in the edge database beside keys and usage (their own metadata, so
the edge's schema stays its own; ``BatchStore`` creates them)."""

from __future__ import annotations

from sqlalchemy import (
    Column,
    Float,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
)

metadata = MetaData()

# Uploaded files (OpenAI Files, purpose batch) and the output and error files of batches.
files = Table(
    "batch_files", metadata,
    Column("id", String(40), primary_key=True),
    Column("key_id", String(32), nullable=False, index=True),
    Column("purpose", String(20), nullable=False),
    Column("filename", Text, nullable=False),
    Column("bytes", Integer, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float),
    Column("content", LargeBinary, nullable=False),
)

# One batch of either API. ``state``: in_progress, canceling, ended or failed (OpenAI's
# input that did not validate); ``outcome`` once ended: completed, canceled or expired.
batches = Table(
    "batches", metadata,
    Column("id", String(40), primary_key=True),
    Column("api", String(10), nullable=False),
    Column("key_id", String(32), nullable=False, index=True),
    Column("endpoint", Text, nullable=False),
    Column("state", String(12), nullable=False, index=True),
    Column("outcome", String(12)),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
    Column("ended_at", Float),
    Column("cancel_initiated_at", Float),
    Column("total", Integer, nullable=False),
    Column("input_file_id", String(40)),
    Column("output_file_id", String(40)),
    Column("error_file_id", String(40)),
    Column("extra", Text),   # JSON: OpenAI's metadata, completion_window, errors
)

# The requests of a batch, in order; ``state``: pending, succeeded, errored, canceled or
# expired. A request runs from ``pending`` and is written once, with its answer, when done:
# one cut short (a restart, a preemption) is still pending and runs again.
items = Table(
    "batch_items", metadata,
    Column("batch_id", String(40), nullable=False),
    Column("idx", Integer, nullable=False),
    Column("custom_id", Text, nullable=False),
    Column("model", Text, nullable=False),
    Column("body", Text, nullable=False),
    Column("state", String(10), nullable=False, index=True),
    Column("status_code", Integer),
    Column("request_id", String(40)),
    Column("answer", Text),   # the route's response body (JSON), success or error
    Column("input_tokens", Integer),
    Column("output_tokens", Integer),
    Column("cached_tokens", Integer),
    Column("finished_at", Float),
    PrimaryKeyConstraint("batch_id", "idx"),
)
