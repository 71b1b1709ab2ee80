"""What the commands that talk to a running server share: where it is, how its model
listing is asked for, and how its errors and absence are said."""

from __future__ import annotations

from collections.abc import Mapping

import httpx

DEFAULT_URL = "http://127.0.0.1:8000"


def server_url(env: Mapping[str, str], given: str | None = None) -> str:
    """``given``, else ``B3OS_URL``, else the local default; without a trailing slash."""
    return (given or env.get("B3OS_URL") or DEFAULT_URL).rstrip("/")


def get_models(client: httpx.Client, url: str, key: str) -> httpx.Response:
    """The server's OpenAI-shaped model listing, asked for with ``key``."""
    return client.get(f"{url}/v1/infer/models", headers={"Authorization": f"Bearer {key}"})


def unreachable(url: str, exc: Exception) -> str:
    return (f"no server answers at {url} ({exc}): start one with `b3os-infer serve`, "
            "or set B3OS_URL")


def error_message(response: httpx.Response) -> str:
    """The error's message in either API's shape, else the start of the body."""
    try:
        return str(response.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return response.text[:200]
