"""Fixtures that start the real server, as a user would, on a free port; and the tiers.

Tests live in ``unit/`` (pure code), ``app/`` (the app in process, on the fake engine) and
``live/`` (real processes: the server, the model, Redis, PostgreSQL, the agent CLIs); each
test gets its directory's marker, so ``-m "not live"`` runs only the fast tiers.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anthropic
import openai
import pytest

from support.servers import LiveServer, cli, free_port, start_server, stop, wait_healthy
from support.tiers import TIERS, TIMEOUT_S


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).resolve().parent
    for item in items:
        tier = Path(str(item.fspath)).resolve().relative_to(here).parts[0]
        if tier not in TIERS:
            raise pytest.UsageError(f"{item.nodeid}: tests live in tests/unit, tests/app or "
                                    "tests/live")
        item.add_marker(getattr(pytest.mark, tier))
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(TIMEOUT_S[tier]))


@pytest.fixture(scope="session")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    home = tmp_path_factory.mktemp("home")
    key = cli(home, "keys", "create", "--name", "tests").stdout.strip().splitlines()[-1]
    port = free_port()
    process = start_server(home, port)
    root = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(root, process)
        yield LiveServer(root=root, key=key, home=home)
    finally:
        stop(process)


@pytest.fixture
def anthropic_client(live: LiveServer) -> Iterator[anthropic.Anthropic]:
    """The official Anthropic SDK on the live server, with a B3OS key as its token."""
    with anthropic.Anthropic(auth_token=live.key, base_url=live.base_url,
                             max_retries=0) as client:
        yield client


@pytest.fixture
def openai_client(live: LiveServer) -> Iterator[openai.OpenAI]:
    """The official OpenAI SDK on the live server, with a B3OS key as its API key."""
    with openai.OpenAI(api_key=live.key, base_url=live.base_url, max_retries=0) as client:
        yield client
