"""The live server every third-party client of the matrix talks to, and its key."""

from __future__ import annotations

import asyncio
import gc
import warnings
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


@pytest.fixture(scope="module")
def client_garbage() -> Iterator[None]:
    """For clients that leave their connections (llm: an SDK client per prompt) or an event
    loop (LiteLLM) behind: collected when their module ends, their
    ResourceWarnings are theirs, not the server's, and are not raised in a later test."""
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        # LiteLLM's sync calls make the main thread an event loop of their own, which the
        # next asyncio.run() would drop unclosed
        try:
            leftover = asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:   # none is set (an earlier module closed it)
            leftover = None
        if leftover is not None and not leftover.is_running():
            leftover.close()
            asyncio.set_event_loop(None)
        gc.collect()
