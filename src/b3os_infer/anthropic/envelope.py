"""Our errors in Anthropic's envelope: the one place that maps them."""

from __future__ import annotations

import math

from starlette.responses import Response

from ..errors import InferError, in_terms_of
from ..http.sse import named_frame
from .wire.responses import B3osError, ErrorObject, ErrorResponse

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


# the node's neutral params (the root ``errors.py``) as this API names them
PARAM_NAMES = {"turns": "messages", "output_cap": "max_tokens",
               "output_schema": "output_config.format"}


def error_type(status: int) -> str:
    return _TYPES.get(status, "invalid_request_error" if status < 500 else "api_error")


def error_body(error: InferError, request_id: str | None) -> ErrorResponse:
    error = in_terms_of(error, PARAM_NAMES)
    return ErrorResponse(error=ErrorObject(type=error_type(error.status), message=error.message),
                         b3os=B3osError(code=error.code, param=error.param),
                         request_id=request_id)


def error_frame(error: InferError, request_id: str | None) -> bytes:
    """An error after the 200 of a stream: the ``error`` event, which the SDKs raise."""
    body = error_body(error, request_id)
    return named_frame("error", body.to_json())


def error_response(error: InferError, request_id: str | None) -> Response:
    headers = {"x-should-retry": "true" if error.retryable else "false"}
    if error.retry_after is not None:
        headers["retry-after"] = str(max(1, math.ceil(error.retry_after)))
    body = error_body(error, request_id)
    return Response(body.to_json(), status_code=error.status,
                    headers=headers, media_type="application/json")
