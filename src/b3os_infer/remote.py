"""What the commands that talk to a running server share: where it is by default, and the
message of an error it answered with."""

from __future__ import annotations

import httpx

DEFAULT_URL = "http://127.0.0.1:8000"


def error_message(response: httpx.Response) -> str:
    """The error's message in either API's shape, else the start of the body."""
    try:
        return str(response.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return response.text[:200]
