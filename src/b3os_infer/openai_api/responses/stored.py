"""Stored responses: keeping one (``store``, the default), continuing from one
(``previous_response_id``), and the routes on one: ``GET`` and ``DELETE
/responses/{id}``, ``POST /responses/{id}/cancel``, ``GET /responses/{id}/input_items``.

The store is the edge's, scoped to the request's key (``http/stored_responses.py``): a
response another key made is not found, with OpenAI's 404.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

from pydantic import JsonValue
from starlette.requests import Request
from starlette.responses import Response

from ...errors import InvalidRequest, NotFound, UnsupportedParameter
from ...http.endpoint import endpoint
from ...http.stored_responses import ResponseStore, StoredResponse, response_store
from ...pagination import cursor_window, page_limit
from ..wire.response_items import ResponseInputItemParam
from ..wire.response_listing import ResponseDeleted, ResponseItemList
from ..wire.response_objects import Response as ResponseBody
from .items import context_of, listed_items

log = logging.getLogger(__name__)

MAX_ITEMS_PAGE = 100
_TRUE = ("true", "1")


def not_found(response_id: str) -> NotFound:
    return NotFound(f"Response with id '{response_id}' not found.",
                    code="response_not_found", param="response_id")


@dataclass
class Keeping:
    """What a new response continues from, and where it is kept when it ends."""

    store: ResponseStore | None
    items: list[dict[str, JsonValue]] = field(default_factory=list)  # as listed
    prior: list[ResponseInputItemParam] = field(default_factory=list)
    keep: bool = True

    async def kept(self, response: ResponseBody) -> None:
        """Store the finished response; a store that fails is logged, not answered."""
        if not self.keep or self.store is None:
            return
        stored = StoredResponse(id=response.id, model=response.model,
                                body=json.loads(response.to_json()), items=self.items)
        try:
            await self.store.put(stored)
        except Exception:  # noqa: BLE001 - the client has its answer; the log has this
            log.exception("could not store response %s", response.id)


async def keeping(request: Request, previous_id: str | None, keep: bool,
                  given: str | list[ResponseInputItemParam]) -> Keeping:
    """The stored context of ``previous_id`` (400 ``previous_response_not_found`` when this
    key has no such response), and this input as it will be listed."""
    store = response_store(request.scope)
    keeping = Keeping(store, keep=keep)
    if previous_id is not None:
        found = await store.get(previous_id) if store is not None else None
        if found is None:
            raise InvalidRequest(f"Previous response with id '{previous_id}' not found.",
                                 code="previous_response_not_found",
                                 param="previous_response_id")
        keeping.prior = context_of(found)
    keeping.items = listed_items(keeping.prior) + listed_items(given)
    return keeping


async def _stored(request: Request) -> StoredResponse:
    response_id = request.path_params["response_id"]
    store = response_store(request.scope)
    found = await store.get(response_id) if store is not None else None
    if found is None:
        raise not_found(response_id)
    return found


def _json(body: bytes) -> Response:
    return Response(body, media_type="application/json")


@endpoint
async def retrieve_response(request: Request) -> Response:
    if request.query_params.get("stream", "").lower() in _TRUE:
        raise UnsupportedParameter(
            "stream: a stored response is replayed as events only for background "
            "responses, which this server does not make; retrieve it without `stream`",
            param="stream")
    found = await _stored(request)
    return _json(json.dumps(found.body).encode())


@endpoint
async def delete_response(request: Request) -> Response:
    response_id = request.path_params["response_id"]
    store = response_store(request.scope)
    if store is None or not await store.delete(response_id):
        raise not_found(response_id)
    return _json(ResponseDeleted(id=response_id).to_json())


@endpoint
async def cancel_response(request: Request) -> Response:
    """Only background responses can be cancelled, and this server makes none."""
    await _stored(request)
    raise InvalidRequest("Cannot cancel a synchronous response.",
                         code="not_background_response", param="response_id")


@endpoint
async def list_input_items(request: Request) -> Response:
    found = await _stored(request)
    query = request.query_params
    limit = page_limit(query, maximum=MAX_ITEMS_PAGE)
    order = query.get("order", "desc")
    if order not in ("asc", "desc"):
        raise InvalidRequest(f"order: Input should be 'asc' or 'desc', not {order!r}",
                             param="order")
    items: list[dict[str, JsonValue]] = list(found.items)
    if order == "desc":
        items.reverse()
    lower, upper = cursor_window([str(item.get("id")) for item in items],
                                 query.get("after"), None)
    page = items[lower:min(upper, lower + limit)]
    listing = ResponseItemList(data=page, has_more=lower + len(page) < upper,
                               first_id=str(page[0]["id"]) if page else None,
                               last_id=str(page[-1]["id"]) if page else None)
    return _json(listing.to_json())
