"""What an OpenAI batch leaves when it ends: its output and error files, as JSONL.

Answers of status 200 go to the output file; error answers (with the route's own error
body), and the requests a cancel or the expiry kept from running, to the error file.
"""

from __future__ import annotations

import json

from ... import ids
from ..store import BatchDatabase, BatchRow, FileRow, ItemRow
from .wire import LineError, OutputLine, ResponseEnvelope

_NOT_RUN = {"canceled": ("batch_cancelled", "the batch was cancelled before this request ran"),
            "expired": ("batch_expired", "the batch expired before this request ran")}


def output_line(item: ItemRow) -> OutputLine:
    line_id = "batch_req_" + ids.base62(24)
    if item.state in _NOT_RUN:
        code, message = _NOT_RUN[item.state]
        return OutputLine(id=line_id, custom_id=item.custom_id, response=None,
                          error=LineError(code=code, message=message))
    body = json.loads(item.answer or "null")
    return OutputLine(id=line_id, custom_id=item.custom_id, error=None,
                      response=ResponseEnvelope(status_code=item.status_code or 500,
                                                request_id=item.request_id, body=body))


def _file(batch: BatchRow, kind: str, lines: list[bytes], now: float
          ) -> tuple[FileRow, bytes] | None:
    if not lines:
        return None
    content = b"".join(lines)
    row = FileRow(id="file-" + ids.base62(24), key_id=batch.key_id, purpose="batch_output",
                  filename=f"{batch.id}_{kind}.jsonl", bytes=len(content), created_at=now)
    return row, content


def finish_openai(store: BatchDatabase, batch: BatchRow, now: float
                  ) -> list[tuple[FileRow, bytes] | None]:
    """The output file, then the error file (None where there is nothing to put in one);
    on a database thread, with the batch's end (``BatchStore.end``)."""
    outputs: list[bytes] = []
    errors: list[bytes] = []
    for item in store.items(batch.id):
        line = output_line(item).to_json() + b"\n"
        (outputs if item.state == "succeeded" else errors).append(line)
    return [_file(batch, "output", outputs, now), _file(batch, "error", errors, now)]
