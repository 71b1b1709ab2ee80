"""Our errors in Anthropic's envelope: the one place that maps them."""

from __future__ import annotations

import math

from starlette.responses import JSONResponse

from ..errors import InferError

_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def error_type(status: int) -> str:
    return _TYPES.get(status, "invalid_request_error" if status < 500 else "api_error")


def error_body(error: InferError, request_id: str | None) -> dict[str, object]:
    return {
        "type": "error",
        "error": {"type": error_type(error.status), "message": error.message},
        "b3os": {"code": error.code, "param": error.param},
        "request_id": request_id,
    }


def error_response(error: InferError, request_id: str | None) -> JSONResponse:
    headers = {"x-should-retry": "true" if error.retryable else "false"}
    if error.retry_after is not None:
        headers["retry-after"] = str(max(1, math.ceil(error.retry_after)))
    return JSONResponse(error_body(error, request_id), status_code=error.status,
                        headers=headers)
