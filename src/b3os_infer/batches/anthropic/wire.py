"""Message Batches on the wire: the create body (with its field policy) and the objects we
send, shaped after the Anthropic SDK's ``types/messages/batch_*`` and ``message_batch*``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, JsonValue

from ...wire_models import SentModel, Supported, WireModel

CUSTOM_ID = r"^[a-zA-Z0-9_-]{1,64}$"


class BatchRequestParam(WireModel):
    custom_id: Annotated[str, Supported("1-64 letters, digits, `-` and `_`; unique in the "
                                        "batch"), Field(pattern=CUSTOM_ID)]
    params: Annotated[dict[str, JsonValue], Supported(
        "a `POST /v1/messages` body, validated exactly as that route validates it; "
        "`stream: true` is refused")]


class BatchCreateParams(WireModel):
    requests: Annotated[list[BatchRequestParam], Supported(
        "one or more requests, up to `[batches] max_requests` (100,000)"),
        Field(min_length=1)]


class MessageBatchRequestCounts(SentModel):
    processing: int
    succeeded: int
    errored: int
    canceled: int
    expired: int


class MessageBatch(SentModel):
    id: str
    type: Literal["message_batch"] = "message_batch"
    processing_status: Literal["in_progress", "canceling", "ended"]
    request_counts: MessageBatchRequestCounts
    created_at: str
    expires_at: str
    ended_at: str | None = None
    cancel_initiated_at: str | None = None
    archived_at: str | None = None
    results_url: str | None = None


class DeletedMessageBatch(SentModel):
    id: str
    type: Literal["message_batch_deleted"] = "message_batch_deleted"


class MessageBatchPage(SentModel):
    data: list[MessageBatch]
    has_more: bool
    first_id: str | None
    last_id: str | None


class SucceededResult(SentModel):
    type: Literal["succeeded"] = "succeeded"
    message: JsonValue


class ErroredResult(SentModel):
    type: Literal["errored"] = "errored"
    error: JsonValue


class CanceledResult(SentModel):
    type: Literal["canceled"] = "canceled"


class ExpiredResult(SentModel):
    type: Literal["expired"] = "expired"


class MessageBatchIndividualResponse(SentModel):
    """One line of the results file."""

    custom_id: str
    result: SucceededResult | ErroredResult | CanceledResult | ExpiredResult
