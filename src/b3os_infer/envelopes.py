"""Every error leaves in the envelope of the API its path belongs to.

Above both wire packages, so that neither they nor the HTTP plumbing under them need to
know the other's envelope: the edge's middleware and the app's exception handler use it.
"""

from __future__ import annotations

from starlette.responses import Response

from .anthropic.envelope import error_frame as anthropic_error_frame
from .anthropic.envelope import error_response as anthropic_error
from .errors import InferError, in_terms_of
from .http.formats import BASE, api_for_path
from .observe.context import note_error
from .openai_api.envelope import (
    CHAT_PARAMS,
    COMPLETIONS_PARAMS,
    RESPONSES_PARAMS,
    responses_error_frame,
)
from .openai_api.envelope import error_frame as openai_error_frame
from .openai_api.envelope import error_response as openai_error


def _openai_params(path: str) -> dict[str, str]:
    """How the OpenAI route of ``path`` names the node's neutral params."""
    if path.startswith(BASE + "/responses"):
        return RESPONSES_PARAMS
    if path.startswith(BASE + "/completions"):
        return COMPLETIONS_PARAMS
    return CHAT_PARAMS


def error_response(path: str, error: InferError, request_id: str | None) -> Response:
    note_error(error.code)
    if api_for_path(path) == "anthropic":
        return anthropic_error(error, request_id)
    return openai_error(in_terms_of(error, _openai_params(path)))


def error_event(path: str, error: InferError, request_id: str | None,
                events_sent: int) -> bytes:
    """An error after a stream's 200, as the stream of that path ends with one: Anthropic's
    ``error`` event, the Responses ``error`` event (numbered after the ``events_sent``
    before it), or Chat Completions' ``data:`` object with ``error``."""
    note_error(error.code)
    if api_for_path(path) == "anthropic":
        return anthropic_error_frame(error, request_id)
    if path.startswith(BASE + "/responses"):
        return responses_error_frame(error, events_sent)
    return openai_error_frame(in_terms_of(error, _openai_params(path)))
