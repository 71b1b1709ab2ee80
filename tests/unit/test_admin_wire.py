"""The admin API's request model offers exactly the key store's scopes and defaults."""

from __future__ import annotations

from typing import get_args

from b3os_infer.edge.access.keys import DEFAULT_SCOPES, SCOPES
from b3os_infer.edge.admin.wire import KeyCreate, ScopeName


def test_the_scopes_a_request_may_name_are_the_key_stores() -> None:
    assert set(get_args(ScopeName)) == set(SCOPES)


def test_a_key_request_without_scopes_gets_the_cli_default() -> None:
    assert tuple(KeyCreate.model_validate({"name": "app"}).scopes) == DEFAULT_SCOPES
