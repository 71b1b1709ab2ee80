"""Reading JSON bodies and the request id."""

from __future__ import annotations

import json
import math
import re
from contextvars import ContextVar
from typing import Any

from starlette.requests import Request

from ..errors import InvalidRequest


async def json_body(request: Request) -> dict[str, Any]:
    return parse_object(await request.body())


# a UTF-16 surrogate escape (\ud800-\udfff); JSON allows one alone, but it is no text
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _no_constant(name: str) -> Any:
    raise InvalidRequest(f"the request body is not valid JSON: {name} is no JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise InvalidRequest(f"the request body is not valid JSON: the number {text[:40]} "
                             "is too large for a double")
    return value


def parse_object(raw: bytes) -> dict[str, Any]:
    """A request body as a JSON object; anything else is the client's mistake (400).

    Strict where Python's ``json`` is lenient: ``NaN`` and ``Infinity`` are not JSON, and
    neither is a number that overflows a double (``1e999``); nesting too deep to parse and
    integers too long to convert (over 4,300 digits) are refused the same way."""
    if not raw:
        raise InvalidRequest("the request body is empty; send a JSON object")
    try:
        # strict UTF-8 first: json.loads would let encoded surrogates through (surrogatepass)
        data = json.loads(raw.decode("utf-8"), parse_constant=_no_constant,
                          parse_float=_finite)
    except RecursionError:
        raise InvalidRequest("the request body is not valid JSON: it is nested too deeply"
                             ) from None
    except UnicodeDecodeError as exc:
        raise InvalidRequest(f"the request body is not valid UTF-8 at byte {exc.start}"
                             ) from None
    except ValueError as exc:   # JSONDecodeError, too many digits
        raise InvalidRequest(f"the request body is not valid JSON: {str(exc)[:200]}"
                             ) from None
    if not isinstance(data, dict):
        raise InvalidRequest("the request body must be a JSON object")
    if _SURROGATE_ESCAPE.search(raw):   # rare: then check exactly whether one is unpaired
        try:
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidRequest("the request body holds a lone UTF-16 surrogate escape "
                                 "(such as \\udcff): it encodes no character") from None
    return data


# the id of the request this task serves (set by the outermost middleware); tasks that a
# request starts inherit it
CURRENT_REQUEST_ID: ContextVar[str | None] = ContextVar("b3os_request_id", default=None)


def request_id(request: Request) -> str | None:
    rid = request.scope.get("state", {}).get("request_id")
    return rid if isinstance(rid, str) else None
