"""OpenAI's Batch API under /v1/infer/batches (and its Files, ``files.py``)."""

from __future__ import annotations

import time
from dataclasses import replace

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ... import ids
from ...errors import InvalidRequest, NotFound
from ...http.endpoint import endpoint
from ...http.requests import json_body
from ...wire_models import SentModel, decode
from ..access import owned_batch, owner, service_of
from ..async_store import BatchStore
from ..pages import after_page
from ..store import BatchRow
from ..times import unix
from .files import not_found
from .files import routes as file_routes
from .lines import read_lines
from .wire import (
    ENDPOINTS,
    Batch,
    BatchCreateParams,
    BatchError,
    BatchList,
    BatchRequestCounts,
    BatchStatus,
    BatchUsage,
    Errors,
    InputTokensDetails,
    OutputTokensDetails,
)

_ENDED: dict[str | None, BatchStatus] = {"completed": "completed", "canceled": "cancelled",
                                         "expired": "expired"}
_ACTIVE: dict[str, BatchStatus] = {"in_progress": "in_progress", "canceling": "cancelling",
                                   "failed": "failed"}


def _json(body: SentModel) -> Response:
    return Response(body.to_json(), media_type="application/json")


def _status(batch: BatchRow) -> BatchStatus:
    if batch.state == "ended":
        return _ENDED.get(batch.outcome, "completed")
    return _ACTIVE[batch.state]


async def _usage(store: BatchStore, batch: BatchRow) -> BatchUsage:
    given, made, cached = await store.usage(batch.id)
    return BatchUsage(input_tokens=given, input_tokens_details=InputTokensDetails(
        cached_tokens=cached), output_tokens=made,
        output_tokens_details=OutputTokensDetails(), total_tokens=given + made)


async def batch_object(store: BatchStore, batch: BatchRow) -> Batch:
    counts = await store.counts(batch.id)
    status = _status(batch)
    ended = batch.ended_at if batch.state == "ended" else None
    errors = batch.extra.get("errors")
    return Batch(
        id=batch.id, endpoint=batch.extra.get("endpoint", batch.endpoint),
        model=batch.extra.get("model"), input_file_id=batch.input_file_id or "",
        status=status, output_file_id=batch.output_file_id,
        error_file_id=batch.error_file_id, created_at=int(batch.created_at),
        in_progress_at=None if status == "failed" else unix(batch.created_at),
        expires_at=unix(batch.expires_at), finalizing_at=unix(ended),
        completed_at=unix(ended) if status == "completed" else None,
        failed_at=unix(batch.created_at) if status == "failed" else None,
        expired_at=unix(ended) if status == "expired" else None,
        cancelling_at=unix(batch.cancel_initiated_at),
        cancelled_at=unix(ended) if status == "cancelled" else None,
        errors=Errors(data=[BatchError(**e) for e in errors]) if errors else None,
        request_counts=BatchRequestCounts(
            total=batch.total, completed=counts.get("succeeded", 0),
            failed=sum(counts.get(s, 0) for s in ("errored", "canceled", "expired"))),
        usage=await _usage(store, batch) if ended else None,
        metadata=batch.extra.get("metadata"))


def _not_found(batch_id: str) -> NotFound:
    return NotFound(f"No batch found with id '{batch_id}'", code="batch_not_found",
                    param="batch_id")


async def _owned(request: Request) -> tuple[BatchStore, BatchRow]:
    return await owned_batch(request, "openai", _not_found)


@endpoint
async def create_batch(request: Request) -> Response:
    service = service_of(request)
    params = decode(BatchCreateParams, await json_body(request))
    if params.endpoint not in ENDPOINTS:
        raise InvalidRequest(f"endpoint: {params.endpoint} is not served in batches here; "
                             f"endpoints: {', '.join(ENDPOINTS)}", param="endpoint")
    key_id = owner(request)
    upload = await service.store.file(key_id, params.input_file_id)
    content = await service.store.file_content(key_id, params.input_file_id)
    if upload is None or content is None:
        raise not_found(params.input_file_id)
    if upload.purpose != "batch":
        raise InvalidRequest(f"input_file_id: {upload.id} was not uploaded with purpose "
                             "batch", param="input_file_id")
    rows, errors = read_lines(content.decode("utf-8", "replace"), params.endpoint)
    if not rows and not errors:
        errors = [BatchError(code="empty_file", message="the input file has no requests")]
    if len(rows) > service.settings.max_requests:
        errors = [BatchError(code="too_many_requests", message=f"a batch holds at most "
                             f"{service.settings.max_requests} requests")]
    now = time.time()
    batch = BatchRow(
        id="batch_" + ids.base62(24), api="openai", key_id=key_id,
        endpoint=ENDPOINTS[params.endpoint], state="failed" if errors else "in_progress",
        created_at=now, expires_at=now + service.settings.expires_after_seconds,
        total=0 if errors else len(rows), input_file_id=upload.id,
        extra={"endpoint": params.endpoint, "metadata": params.metadata,
               "model": rows[0].model if rows else None,
               "errors": [e.model_dump() for e in errors]})
    await service.store.add_batch(batch, [] if errors else
                                  [replace(r, batch_id=batch.id) for r in rows])
    service.submitted()
    return _json(await batch_object(service.store, batch))


@endpoint
async def list_batches(request: Request) -> Response:
    store = service_of(request).store
    found = await store.batches(owner(request), "openai")
    page, has_more = after_page(found, request.query_params)
    data = [await batch_object(store, b) for b in page]
    return _json(BatchList(data=data, has_more=has_more, first_id=data[0].id if data else None,
                           last_id=data[-1].id if data else None))


@endpoint
async def get_batch(request: Request) -> Response:
    store, batch = await _owned(request)
    return _json(await batch_object(store, batch))


@endpoint
async def cancel_batch(request: Request) -> Response:
    store, batch = await _owned(request)
    if batch.state in ("ended", "failed"):
        raise InvalidRequest(f"Cannot cancel a batch with status {_status(batch)}",
                             code="batch_not_cancellable")
    return _json(await batch_object(store, await service_of(request).cancel(batch)))


def routes(prefix: str) -> list[Route]:
    base = prefix + "/batches"
    return file_routes(prefix) + [
        Route(base, create_batch, methods=["POST"]),
        Route(base, list_batches, methods=["GET"]),
        Route(base + "/{batch_id}", get_batch, methods=["GET"]),
        Route(base + "/{batch_id}/cancel", cancel_batch, methods=["POST"]),
    ]
