import sqlite3

import pytest

from b3os_infer.edge.access.keys import KeyStore


@pytest.fixture
def store(tmp_path):
    return KeyStore(tmp_path / "keys.sqlite3")


def test_created_key_verifies_and_only_its_hash_is_stored(store, tmp_path):
    record, key = store.create("ci", ("infer",))
    assert store.verify(key).id == record.id
    dump = "\n".join(sqlite3.connect(tmp_path / "keys.sqlite3").iterdump())
    assert key not in dump


def test_wrong_or_malformed_keys_do_not_verify(store):
    _, key = store.create("ci")
    assert store.verify(key[:-1] + ("a" if key[-1] != "a" else "b")) is None
    assert store.verify("not-a-key") is None


def test_revoked_key_stops_verifying_by_id_or_by_key(store):
    record, key = store.create("a")
    store.revoke(record.id)
    assert store.verify(key) is None
    other, other_key = store.create("b")
    store.revoke(other_key)
    assert store.verify(other_key) is None
    assert store.active_count() == 0


def test_list_shows_scopes_and_last_use_never_the_key(store):
    record, key = store.create("a", ("infer", "models:read"))
    store.verify(key)
    (listed,) = store.list()
    assert listed.scopes == ("infer", "models:read")
    assert listed.last_used_at is not None


def test_unknown_scope_and_unknown_id_are_errors(store):
    with pytest.raises(ValueError):
        store.create("a", ("everything",))
    with pytest.raises(KeyError):
        store.revoke("nope")
