"""Fixtures of the live tier: the agent CLIs, each test run once per installed version."""

from __future__ import annotations

import pytest

from support.agents import AgentCli, installs


@pytest.fixture(params=installs("claude"), ids=lambda cli: cli.id)
def claude_cli(request: pytest.FixtureRequest) -> AgentCli:
    """The pinned Claude Code, then the newest from npm when it is another version."""
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(params=installs("codex"), ids=lambda cli: cli.id)
def codex_cli(request: pytest.FixtureRequest) -> AgentCli:
    """The pinned Codex CLI, then the newest from npm when it is another version."""
    return request.param  # type: ignore[no-any-return]
