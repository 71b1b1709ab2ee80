"""Every error leaves in the envelope of the API its path belongs to.

Above both wire packages, so that neither they nor the HTTP plumbing under them need to
know the other's envelope: the edge's middleware and the app's exception handler use it.
"""

from __future__ import annotations

from starlette.responses import Response

from .anthropic.errors import error_response as anthropic_error
from .errors import InferError
from .http.formats import api_for_path
from .observe.context import note_error
from .openai_api.errors import error_response as openai_error


def error_response(path: str, error: InferError, request_id: str | None) -> Response:
    note_error(error.code)
    if api_for_path(path) == "anthropic":
        return anthropic_error(error, request_id)
    return openai_error(error)
