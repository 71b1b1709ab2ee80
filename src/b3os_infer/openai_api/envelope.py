"""Our errors in OpenAI's envelope: the one place that maps them."""

from __future__ import annotations

import math

from starlette.responses import JSONResponse

from ..errors import InferError, in_terms_of
from ..http.sse import data_frame, named_frame
from .wire.response_objects import ResponseErrorEvent

_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "server_error",
    503: "overloaded_error",
}

# the node's neutral params (the root ``errors.py``) as each OpenAI route names them
CHAT_PARAMS = {"turns": "messages", "output_cap": "max_completion_tokens",
               "output_schema": "response_format"}
COMPLETIONS_PARAMS = {"turns": "prompt", "output_cap": "max_tokens"}
RESPONSES_PARAMS = {"turns": "input", "output_cap": "max_output_tokens",
                    "output_schema": "text.format"}

# OpenAI has no 529; its SDKs treat 503 as the overloaded answer.
_STATUS = {529: 503}


def error_body(error: InferError) -> dict[str, object]:
    status = _STATUS.get(error.status, error.status)
    kind = _TYPES.get(status, "invalid_request_error" if status < 500 else "server_error")
    return {"error": {"message": error.message, "type": kind, "param": error.param,
                      "code": error.code}}


def error_response(error: InferError) -> JSONResponse:
    headers = {"x-should-retry": "true" if error.retryable else "false"}
    if error.retry_after is not None:
        headers["retry-after"] = str(max(1, math.ceil(error.retry_after)))
    return JSONResponse(error_body(error), status_code=_STATUS.get(error.status, error.status),
                        headers=headers)


def error_frame(error: InferError) -> bytes:
    """An error after the 200 of a Chat Completions or Completions stream: a ``data:``
    object with ``error``, which the SDKs raise as ``APIError``."""
    return data_frame(error_body(error))


def responses_error_frame(error: InferError, sequence_number: int) -> bytes:
    """An error after the 200 of a Responses stream: its ``error`` event."""
    error = in_terms_of(error, RESPONSES_PARAMS)
    event = ResponseErrorEvent(code=error.code, message=error.message, param=error.param,
                               sequence_number=sequence_number)
    return named_frame(event.type, event.to_json())
