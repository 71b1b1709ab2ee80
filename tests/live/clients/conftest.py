"""The live server every third-party client of the matrix talks to, and its key."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from support.client_matrix import matrix_server
from support.scripted_server import MODEL, ScriptedServer


@dataclass(frozen=True)
class Served:
    server: ScriptedServer
    key: str
    model: str = MODEL

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (and the Anthropic SDKs' base URL)."""
        return self.server.base_url


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    server = matrix_server(tmp_path_factory.mktemp("clients"))
    key = server.new_key("clients")
    server.start()
    try:
        yield Served(server, key)
    finally:
        server.stop()
