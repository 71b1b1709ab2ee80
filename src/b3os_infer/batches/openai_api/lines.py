"""The lines of an OpenAI batch input file, each validated as its endpoint validates it.

A line is a JSON object with ``custom_id`` (unique in the file), ``method`` ``POST``,
``url`` (the batch's endpoint) and ``body``: the request, checked by the route's own
decoder, without ``stream``. Every problem is reported with its line number, as the
batch's ``errors``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from ...errors import InferError
from ...openai_api.completions.decode import decode_completion_request
from ...openai_api.decode import decode_chat_request
from ...openai_api.responses.decode import decode_params
from ..store import ItemRow
from .wire import LINE_FIELDS, BatchError

MAX_ERRORS = 100


def _chat_streams(body: Mapping[str, Any]) -> bool:
    return decode_chat_request(body)[1].stream


def _completion_streams(body: Mapping[str, Any]) -> bool:
    return decode_completion_request(body).stream


def _response_streams(body: Mapping[str, Any]) -> bool:
    return bool(decode_params(body).stream)


# each endpoint's decoder, answering whether the request asks to stream
DECODERS: dict[str, Callable[[Mapping[str, Any]], bool]] = {
    "/v1/chat/completions": _chat_streams, "/v1/completions": _completion_streams,
    "/v1/responses": _response_streams,
}


class LineProblem(Exception):
    def __init__(self, code: str, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.error = (code, message, param)


def _line(raw: str, endpoint: str) -> tuple[str, dict[str, Any]]:
    try:
        line = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise LineProblem("invalid_json", f"the line is not valid JSON: {exc}") from None
    if not isinstance(line, dict):
        raise LineProblem("invalid_request", "a line must be a JSON object")
    custom_id, body = line.get("custom_id"), line.get("body")
    if not isinstance(custom_id, str) or not custom_id:
        raise LineProblem("missing_required_parameter", "custom_id: a non-empty string is "
                          "required", "custom_id")
    if line.get("method") != "POST":
        raise LineProblem("invalid_request", "method: should be POST", "method")
    if line.get("url") != endpoint:
        raise LineProblem("invalid_request", f"url: should be the batch's endpoint {endpoint}",
                          "url")
    if not isinstance(body, dict):
        raise LineProblem("invalid_request", "body: should be a JSON object", "body")
    unknown = sorted(set(line) - {rule.name for rule in LINE_FIELDS})
    if unknown:
        raise LineProblem("unsupported_parameter", f"{unknown[0]}: unknown field of a batch "
                          "line", unknown[0])
    return custom_id, body


def _body(body: dict[str, Any], endpoint: str) -> None:
    try:
        streams = DECODERS[endpoint](body)
    except InferError as error:
        param = f"body.{error.param}" if error.param else "body"
        raise LineProblem(error.code, f"body.{error.message}" if error.param
                          else f"body: {error.message}", param) from None
    if streams:
        raise LineProblem("invalid_request", "body.stream: a batch request cannot stream; "
                          "leave `stream` out", "body.stream")


def read_lines(content: str, endpoint: str) -> tuple[list[ItemRow], list[BatchError]]:
    """The requests of the file, or the errors that keep it from running."""
    rows: list[ItemRow] = []
    errors: list[BatchError] = []
    seen: set[str] = set()
    for number, raw in enumerate(content.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            custom_id, body = _line(raw, endpoint)
            if custom_id in seen:
                raise LineProblem("duplicate_custom_id", f"custom_id: {custom_id!r} is used "
                                  "by an earlier line", "custom_id")
            _body(body, endpoint)
        except LineProblem as problem:
            code, message, param = problem.error
            errors.append(BatchError(code=code, line=number, message=message, param=param))
            if len(errors) >= MAX_ERRORS:
                break
            continue
        seen.add(custom_id)
        rows.append(ItemRow(batch_id="", idx=len(rows), custom_id=custom_id,
                            model=str(body.get("model", "")), body=json.dumps(body)))
    return rows, errors
