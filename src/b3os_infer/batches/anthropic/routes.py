"""Anthropic's Message Batches under /v1/infer/v1/messages/batches."""

from __future__ import annotations

import json
import time
from dataclasses import replace

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ... import ids
from ...anthropic.decode import decode_messages_request
from ...errors import InferError, InvalidRequest, NotFound
from ...http.endpoint import endpoint
from ...http.requests import json_body
from ...pagination import page_window
from ...wire_models import SentModel, decode
from ..access import owned_batch, owner, service_of
from ..async_store import BatchStore
from ..item_errors import inside, unique_custom_ids
from ..store import BatchRow, ItemRow
from ..times import rfc3339
from .wire import (
    BatchCreateParams,
    BatchRequestParam,
    CanceledResult,
    DeletedMessageBatch,
    ErroredResult,
    ExpiredResult,
    MessageBatch,
    MessageBatchIndividualResponse,
    MessageBatchPage,
    MessageBatchRequestCounts,
    SucceededResult,
)

ENDPOINT = "/v1/messages"
_STATUS = {"in_progress": "in_progress", "canceling": "canceling", "ended": "ended"}


def _json(body: SentModel) -> Response:
    return Response(body.to_json(), media_type="application/json")


def _request_row(index: int, request: BatchRequestParam) -> ItemRow:
    where = f"requests[{index}].params"
    try:
        chat, stream = decode_messages_request(request.params)
    except InferError as error:
        raise inside(error, where) from None
    if stream:
        raise InvalidRequest(f"{where}.stream: a batch request cannot stream; leave "
                             "`stream` out", param=f"{where}.stream")
    return ItemRow(batch_id="", idx=index, custom_id=request.custom_id, model=chat.model,
                   body=json.dumps(request.params))


async def _counts(store: BatchStore, batch: BatchRow) -> MessageBatchRequestCounts:
    """As Anthropic counts: every request is processing until the whole batch ends."""
    if batch.state != "ended":
        return MessageBatchRequestCounts(processing=batch.total, succeeded=0, errored=0,
                                         canceled=0, expired=0)
    counts = await store.counts(batch.id)
    return MessageBatchRequestCounts(processing=0, **{s: counts.get(s, 0) for s in (
        "succeeded", "errored", "canceled", "expired")})


async def message_batch(store: BatchStore, batch: BatchRow, request: Request
                        ) -> MessageBatch:
    ended = batch.state == "ended"
    base = str(request.base_url).rstrip("/")
    path = request.url.path
    prefix = path[:path.index(ENDPOINT + "/batches") + len(ENDPOINT + "/batches")]
    return MessageBatch(
        id=batch.id, processing_status=_STATUS[batch.state],  # type: ignore[arg-type]
        request_counts=await _counts(store, batch), created_at=rfc3339(batch.created_at) or "",
        expires_at=rfc3339(batch.expires_at) or "", ended_at=rfc3339(batch.ended_at),
        cancel_initiated_at=rfc3339(batch.cancel_initiated_at),
        results_url=f"{base}{prefix}/{batch.id}/results" if ended else None)


def _not_found(batch_id: str) -> NotFound:
    return NotFound(f"message batch {batch_id} was not found", code="batch_not_found",
                    param="message_batch_id")


async def _owned(request: Request) -> tuple[BatchStore, BatchRow]:
    return await owned_batch(request, "anthropic", _not_found)


@endpoint
async def create_batch(request: Request) -> Response:
    service = service_of(request)
    params = decode(BatchCreateParams, await json_body(request))
    if len(params.requests) > service.settings.max_requests:
        raise InvalidRequest(f"requests: a batch holds at most {service.settings.max_requests} "
                             "requests", param="requests")
    rows = [_request_row(i, r) for i, r in enumerate(params.requests)]
    unique_custom_ids([r.custom_id for r in rows], "requests[{}].custom_id")
    now = time.time()
    batch = BatchRow(id="msgbatch_" + ids.base62(24), api="anthropic", key_id=owner(request),
                     endpoint=ENDPOINT, state="in_progress", created_at=now,
                     expires_at=now + service.settings.expires_after_seconds, total=len(rows))
    await service.store.add_batch(batch, [replace(r, batch_id=batch.id) for r in rows])
    service.submitted()
    return _json(await message_batch(service.store, batch, request))


@endpoint
async def list_batches(request: Request) -> Response:
    store = service_of(request).store
    found = await store.batches(owner(request), "anthropic")
    start, end, has_more = page_window([b.id for b in found], request.query_params)
    page = [await message_batch(store, b, request) for b in found[start:end]]
    return _json(MessageBatchPage(data=page, has_more=has_more,
                                  first_id=page[0].id if page else None,
                                  last_id=page[-1].id if page else None))


@endpoint
async def get_batch(request: Request) -> Response:
    store, batch = await _owned(request)
    return _json(await message_batch(store, batch, request))


@endpoint
async def cancel_batch(request: Request) -> Response:
    """A batch in progress starts canceling; one canceling or ended is answered as it is."""
    store, batch = await _owned(request)
    batch = await service_of(request).cancel(batch)
    return _json(await message_batch(store, batch, request))


@endpoint
async def delete_batch(request: Request) -> Response:
    store, batch = await _owned(request)
    if batch.state != "ended":
        raise InvalidRequest(f"message batch {batch.id} is still {batch.state}: only a batch "
                             "that has ended can be deleted; cancel it first",
                             code="batch_not_ended")
    await store.delete_batch(batch.id)
    return _json(DeletedMessageBatch(id=batch.id))


def _result(item: ItemRow) -> MessageBatchIndividualResponse:
    result: SucceededResult | ErroredResult | CanceledResult | ExpiredResult
    if item.state == "succeeded":
        result = SucceededResult(message=json.loads(item.answer or "null"))
    elif item.state == "errored":
        result = ErroredResult(error=json.loads(item.answer or "null"))
    elif item.state == "canceled":
        result = CanceledResult()
    else:
        result = ExpiredResult()
    return MessageBatchIndividualResponse(custom_id=item.custom_id, result=result)


@endpoint
async def batch_results(request: Request) -> Response:
    store, batch = await _owned(request)
    if batch.state != "ended":
        raise InvalidRequest(f"message batch {batch.id} is still {batch.state}; its results "
                             "are ready once its processing_status is ended",
                             code="batch_not_ended")
    lines = b"".join(_result(item).to_json() + b"\n" for item in await store.items(batch.id))
    return Response(lines, media_type="application/x-jsonl")


def routes(prefix: str) -> list[Route]:
    base = prefix + "/v1/messages/batches"
    return [
        Route(base, create_batch, methods=["POST"]),
        Route(base, list_batches, methods=["GET"]),
        Route(base + "/{batch_id}", get_batch, methods=["GET"]),
        Route(base + "/{batch_id}", delete_batch, methods=["DELETE"]),
        Route(base + "/{batch_id}/cancel", cancel_batch, methods=["POST"]),
        Route(base + "/{batch_id}/results", batch_results, methods=["GET"]),
    ]
