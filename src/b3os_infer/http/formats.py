"""Which API a path belongs to, and so which error envelope it answers with."""

from __future__ import annotations

from typing import Literal

from starlette.responses import Response

from ..errors import InferError

ApiName = Literal["anthropic", "openai"]

BASE = "/v1/infer"
ANTHROPIC_PREFIX = BASE + "/v1/"


def api_for_path(path: str) -> ApiName:
    return "anthropic" if path.startswith(ANTHROPIC_PREFIX) or path == BASE + "/v1" \
        else "openai"


def error_response(path: str, error: InferError, request_id: str | None) -> Response:
    if api_for_path(path) == "anthropic":
        from ..anthropic.errors import error_response as anthropic_error

        return anthropic_error(error, request_id)
    from ..openai_api.errors import error_response as openai_error

    return openai_error(error)
