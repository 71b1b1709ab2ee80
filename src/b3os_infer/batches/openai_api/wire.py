"""OpenAI's Files and Batch objects on the wire, shaped after the SDK's ``file_object.py``,
``batch.py`` and ``batch_create_params.py``; the create body carries its field policy."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, JsonValue

from ...wire_models import Ignored, Rule, SentModel, Supported, WireModel

# the endpoints a batch may name, and the route of ours each runs on
ENDPOINTS = {"/v1/chat/completions": "/chat/completions", "/v1/completions": "/completions",
             "/v1/responses": "/responses"}


class ExpiresAfterParam(WireModel):
    anchor: Literal["created_at"]
    seconds: Annotated[int, Field(ge=3600, le=2_592_000)]


class BatchCreateParams(WireModel):
    input_file_id: Annotated[str, Supported("a file uploaded with purpose `batch`")]
    endpoint: Annotated[str, Supported("`/v1/chat/completions`, `/v1/completions` or "
                                       "`/v1/responses`")]
    completion_window: Annotated[Literal["24h"], Supported(
        "`24h`; the batch expires `[batches] expires_after_seconds` after it was created")]
    metadata: Annotated[dict[str, str] | None, Supported("echoed on the batch; up to 16 "
                                                         "pairs"),
                        Field(max_length=16)] = None
    output_expires_after: Annotated[ExpiresAfterParam | None, Ignored(
        "output files are kept until deleted")] = None


class FileObject(SentModel):
    id: str
    object: Literal["file"] = "file"
    bytes: int
    created_at: int
    filename: str
    purpose: str
    status: Literal["uploaded", "processed", "error"] = "processed"
    expires_at: int | None = None
    status_details: str | None = None


class FileDeleted(SentModel):
    id: str
    object: Literal["file"] = "file"
    deleted: bool


class FileList(SentModel):
    object: Literal["list"] = "list"
    data: list[FileObject]
    first_id: str | None
    last_id: str | None
    has_more: bool


class BatchError(SentModel):
    code: str | None = None
    line: int | None = None
    message: str | None = None
    param: str | None = None


class Errors(SentModel):
    object: Literal["list"] = "list"
    data: list[BatchError]


class BatchRequestCounts(SentModel):
    total: int
    completed: int
    failed: int


class InputTokensDetails(SentModel):
    cached_tokens: int


class OutputTokensDetails(SentModel):
    reasoning_tokens: int = 0


class BatchUsage(SentModel):
    input_tokens: int
    input_tokens_details: InputTokensDetails
    output_tokens: int
    output_tokens_details: OutputTokensDetails
    total_tokens: int


BatchStatus = Literal["validating", "failed", "in_progress", "finalizing", "completed",
                      "expired", "cancelling", "cancelled"]


class Batch(SentModel):
    id: str
    object: Literal["batch"] = "batch"
    endpoint: str
    model: str | None = None
    errors: Errors | None = None
    input_file_id: str
    completion_window: str = "24h"
    status: BatchStatus
    output_file_id: str | None = None
    error_file_id: str | None = None
    created_at: int
    in_progress_at: int | None = None
    expires_at: int | None = None
    finalizing_at: int | None = None
    completed_at: int | None = None
    failed_at: int | None = None
    expired_at: int | None = None
    cancelling_at: int | None = None
    cancelled_at: int | None = None
    request_counts: BatchRequestCounts
    usage: BatchUsage | None = None
    metadata: dict[str, str] | None = None


class BatchList(SentModel):
    object: Literal["list"] = "list"
    data: list[Batch]
    first_id: str | None
    last_id: str | None
    has_more: bool


class ResponseEnvelope(SentModel):
    status_code: int
    request_id: str | None
    body: JsonValue


class LineError(SentModel):
    code: str
    message: str


class OutputLine(SentModel):
    """One line of a batch's output or error file."""

    id: str
    custom_id: str
    response: ResponseEnvelope | None
    error: LineError | None


# multipart fields of POST /files (read in files.py)
UPLOAD_FIELDS = (
    Rule("file", "supported", "JSONL, UTF-8, up to `[batches] max_file_bytes` (32 MiB)"),
    Rule("purpose", "supported", "`batch`; other purposes are refused"),
    Rule("expires_after[anchor]", "ignored", "files are kept until deleted"),
    Rule("expires_after[seconds]", "ignored", "files are kept until deleted"),
)

# the keys of each line of an input file (read in lines.py)
LINE_FIELDS = (
    Rule("custom_id", "supported", "unique in the file"),
    Rule("method", "supported", "`POST`"),
    Rule("url", "supported", "the batch's `endpoint`"),
    Rule("body", "supported", "the endpoint's request, validated by its route; "
                              "`stream: true` is refused"),
)
