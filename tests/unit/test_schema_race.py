"""Two processes creating the schema of one database at once: the loser looks again."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, inspect
from sqlalchemy.exc import OperationalError

from b3os_infer.edge.storage import db


def test_a_create_that_loses_the_race_is_tried_again_and_finds_the_tables(
        tmp_path, monkeypatch):
    engine = create_engine(f"sqlite:///{tmp_path / 'keys.db'}")
    real = db.metadata.create_all
    calls = []

    def racing(bind, **kwargs):
        calls.append(1)
        if len(calls) == 1:   # the other process created the table between check and create
            real(bind, **kwargs)
            raise OperationalError("CREATE TABLE api_keys", {}, Exception("already exists"))
        real(bind, **kwargs)

    monkeypatch.setattr(db.metadata, "create_all", racing)
    db.create_schema(db.metadata, engine)
    assert len(calls) == 2
    assert "api_keys" in inspect(engine).get_table_names()


def test_a_schema_that_cannot_be_created_still_fails_after_the_attempts(tmp_path, monkeypatch):
    engine = create_engine(f"sqlite:///{tmp_path / 'keys.db'}")

    def broken(bind, **kwargs):
        raise OperationalError("CREATE TABLE api_keys", {}, Exception("disk I/O error"))

    monkeypatch.setattr(db.metadata, "create_all", broken)
    with pytest.raises(OperationalError):
        db.create_schema(db.metadata, engine, attempts=2)
