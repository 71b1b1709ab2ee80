"""OpenAI's Files API under /v1/infer/files: uploads for batches, and batches' outputs."""

from __future__ import annotations

import time

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ... import ids
from ...errors import InvalidRequest, NotFound, RequestTooLarge, UnsupportedParameter
from ...http.endpoint import endpoint
from ...wire_models import SentModel
from ..access import owner, service_of
from ..multipart import parse_form
from ..pages import after_page
from ..store import FileRow
from .wire import UPLOAD_FIELDS, FileDeleted, FileList, FileObject

KNOWN_FIELDS = {rule.name for rule in UPLOAD_FIELDS}


def _json(body: SentModel) -> Response:
    return Response(body.to_json(), media_type="application/json")


def file_object(row: FileRow) -> FileObject:
    return FileObject(id=row.id, bytes=row.bytes, created_at=int(row.created_at),
                      filename=row.filename, purpose=row.purpose,
                      expires_at=int(row.expires_at) if row.expires_at else None)


def not_found(file_id: str) -> NotFound:
    return NotFound(f"No such File object: {file_id}", code="file_not_found", param="file_id")


async def _owned(request: Request) -> FileRow:
    file_id = request.path_params["file_id"]
    row = await service_of(request).store.file(owner(request), file_id)
    if row is None:
        raise not_found(file_id)
    return row


@endpoint
async def upload(request: Request) -> Response:
    service = service_of(request)
    limit = service.settings.max_file_bytes
    body = await request.body()
    form = parse_form(request.headers.get("content-type", ""), body)
    unknown = sorted(set(form) - KNOWN_FIELDS)
    if unknown:
        raise UnsupportedParameter(f"{unknown[0]}: unknown field of a file upload",
                                   param=unknown[0])
    purpose = form.get("purpose")
    if purpose is None or "file" not in form:
        raise InvalidRequest("a file upload needs the fields `file` and `purpose`",
                             param="file" if purpose else "purpose")
    if purpose.data.decode("utf-8", "replace") != "batch":
        raise UnsupportedParameter("purpose: only `batch` files are kept here",
                                   param="purpose")
    upload = form["file"]
    if len(upload.data) > limit:
        raise RequestTooLarge(f"file: the file exceeds the limit of {limit} bytes",
                              param="file")
    try:
        upload.data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidRequest("file: a batch file is JSONL, UTF-8 text", param="file") from None
    row = FileRow(id="file-" + ids.base62(24), key_id=owner(request), purpose="batch",
                  filename=upload.filename or "upload.jsonl", bytes=len(upload.data),
                  created_at=time.time())
    await service.store.add_file(row, upload.data)
    return _json(file_object(row))


@endpoint
async def list_files(request: Request) -> Response:
    rows = await service_of(request).store.files(owner(request),
                                                 request.query_params.get("purpose"))
    order = request.query_params.get("order", "desc")
    if order not in ("asc", "desc"):
        raise InvalidRequest("order: should be asc or desc", param="order")
    if order == "desc":
        rows.reverse()
    page, has_more = after_page(rows, request.query_params)
    data = [file_object(r) for r in page]
    return _json(FileList(data=data, has_more=has_more, first_id=data[0].id if data else None,
                          last_id=data[-1].id if data else None))


@endpoint
async def get_file(request: Request) -> Response:
    return _json(file_object(await _owned(request)))


@endpoint
async def delete_file(request: Request) -> Response:
    row = await _owned(request)
    await service_of(request).store.delete_file(row.key_id, row.id)
    return _json(FileDeleted(id=row.id, deleted=True))


@endpoint
async def file_content(request: Request) -> Response:
    row = await _owned(request)
    content = await service_of(request).store.file_content(row.key_id, row.id)
    if content is None:
        raise not_found(row.id)
    return Response(content, media_type="application/jsonl")


def routes(prefix: str) -> list[Route]:
    base = prefix + "/files"
    return [
        Route(base, upload, methods=["POST"]),
        Route(base, list_files, methods=["GET"]),
        Route(base + "/{file_id}", get_file, methods=["GET"]),
        Route(base + "/{file_id}", delete_file, methods=["DELETE"]),
        Route(base + "/{file_id}/content", file_content, methods=["GET"]),
    ]
