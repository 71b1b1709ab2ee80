"""One exception tree for everything a request can fail with.

Each error knows its HTTP status, a stable b3os `code` and the offending `param`
(a field path such as ``messages[0].content``). The wire packages map these to
their own envelopes in one place each (``anthropic/envelope.py``, ``openai_api/envelope.py``).

The node and the engines name what they refuse in neutral words (``NEUTRAL_PARAMS``, none
of them a field of any API): ``turns`` (the messages or prompt the model reads,
``turns[2].content[0]``), ``output_cap`` and ``output_schema``. Each API's errors module
names them as its own fields (``in_terms_of``); a param the wire decoders set is already
the client's.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping


class InferError(Exception):
    """Base of every error we answer a client with."""

    status: int = 500
    default_code: str = "internal_error"
    retryable: bool = False

    def __init__(self, message: str, *, code: str | None = None, param: str | None = None,
                 retry_after: float | None = None, detail: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.param = param
        self.retry_after = retry_after
        # what went wrong inside (an exception's text, an upstream's body): logged with the
        # request id, never sent to the client (``http.endpoint.report``)
        self.detail = detail


class InvalidRequest(InferError):
    status = 400
    default_code = "invalid_request"


class UnsupportedParameter(InvalidRequest):
    default_code = "unsupported_parameter"


class AuthenticationFailed(InferError):
    status = 401
    default_code = "invalid_api_key"


class PermissionDenied(InferError):
    status = 403
    default_code = "permission_denied"


class NotFound(InferError):
    status = 404
    default_code = "not_found"


class MethodNotAllowed(InferError):
    status = 405
    default_code = "method_not_allowed"


class Conflict(InferError):
    """The request asks for what the resource's present state does not allow."""

    status = 409
    default_code = "conflict"


class RequestTooLarge(InferError):
    status = 413
    default_code = "request_too_large"


class RateLimited(InferError):
    status = 429
    default_code = "rate_limited"
    retryable = True


class LimitExceeded(RateLimited):
    """A request bigger than a per-minute limit: waiting never admits it, so a client is
    told not to retry."""

    default_code = "request_exceeds_limit"
    retryable = False


class Overloaded(InferError):
    status = 529
    default_code = "overloaded"
    retryable = True


class ClientDisconnected(InferError):
    """The client went away before the answer was ready; nobody reads this one."""

    status = 499
    default_code = "client_disconnected"


class ShuttingDown(InferError):
    """The server stops: it admits nothing new, and ends what still runs at its bound."""

    status = 503
    default_code = "shutting_down"
    retryable = True


class EngineUnavailable(InferError):
    """The model's engine cannot serve it as configured (an upstream that does not list the
    configured name, say); the code names the reason."""

    status = 503
    default_code = "engine_unavailable"


class RequestTimeout(InferError):
    """The client stopped sending its request."""

    status = 408
    default_code = "request_timeout"


class HeadersTooLarge(InferError):
    status = 431
    default_code = "request_headers_too_large"


class InternalError(InferError):
    status = 500
    default_code = "internal_error"
    retryable = True


class MalformedToolCall(InferError):
    """The model wrote a whole tool call whose arguments are not a JSON object: nothing a
    client could run. Not retried for the client: a greedy or seeded request would write
    the same again."""

    status = 500
    default_code = "malformed_tool_call"


def model_not_available(name: str) -> NotFound:
    return NotFound(
        f"{name} is not served on this node; GET /v1/infer/models lists the models that are",
        code="model_not_available",
        param="model",
    )


NEUTRAL_PARAMS = ("turns", "output_cap", "output_schema")


def in_terms_of(error: InferError, names: Mapping[str, str]) -> InferError:
    """The error with a neutral ``param`` named as an API names that field (a copy; the
    error itself is left as it was raised)."""
    param = error.param
    if param is None:
        return error
    cut = min((i for i in (param.find("."), param.find("[")) if i >= 0), default=len(param))
    head = param[:cut]
    if head not in names:
        return error
    renamed = copy.copy(error)
    renamed.param = names[head] + param[cut:]
    return renamed
