"""OpenAI's Files and Batch API in process, on the scripted engine, through the official SDK.

Uploads and their listing, content and deletion; batches on each endpoint with output and
error files in OpenAI's line shape (bodies that validate as the SDK's types); input lines
validated with their line numbers; cancel; the key that owns files and batches.
"""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from openai.types import Batch, Completion
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from b3os_infer.config import BatchSettings
from b3os_infer.engine.scripted.script import Reply
from support.batch_app import BatchApp, batch_app, until

pytestmark = pytest.mark.anyio

HELLO = Reply("Hello there.", repeat=True)
ENDED = ("completed", "failed", "expired", "cancelled")


def line(custom_id: str, body: dict[str, object], url: str = "/v1/chat/completions") -> str:
    return json.dumps({"custom_id": custom_id, "method": "POST", "url": url, "body": body})


def chat(model: str, text: str = "hi") -> dict[str, object]:
    return {"model": model, "messages": [{"role": "user", "content": text}], "max_tokens": 16}


def jsonl(*lines: str) -> bytes:
    return ("\n".join(lines) + "\n").encode()


async def upload(app: BatchApp, content: bytes) -> str:
    return (await app.openai.files.create(file=("input.jsonl", content), purpose="batch")).id


async def finished(app: BatchApp, batch_id: str) -> Batch:
    async def done() -> bool:
        return (await app.openai.batches.retrieve(batch_id)).status in ENDED
    await until(done, f"{batch_id} ended")
    return await app.openai.batches.retrieve(batch_id)


async def lines_of(app: BatchApp, file_id: str | None) -> dict[str, dict[str, Any]]:
    assert file_id is not None
    text = (await app.openai.files.content(file_id)).text
    return {found["custom_id"]: found for found in map(json.loads, text.splitlines())}


async def test_files_upload_list_read_and_delete(tmp_path):
    async with batch_app(tmp_path, [HELLO]) as app:
        content = jsonl(line("a", chat(app.model)))
        made = await app.openai.files.create(file=("mine.jsonl", content), purpose="batch")
        assert made.id.startswith("file-") and made.object == "file"
        assert (made.bytes, made.filename, made.purpose) == (len(content), "mine.jsonl",
                                                             "batch")
        assert (await app.openai.files.retrieve(made.id)) == made
        assert (await app.openai.files.content(made.id)).content == content
        second = await upload(app, content)
        listed = [f.id async for f in app.openai.files.list()]
        assert listed == [second, made.id]
        page = await app.openai.files.list(limit=1, order="asc")
        assert [f.id for f in page.data] == [made.id] and page.has_more
        deleted = await app.openai.files.delete(made.id)
        assert deleted.deleted and deleted.id == made.id
        with pytest.raises(openai.NotFoundError) as info:
            await app.openai.files.retrieve(made.id)
        assert info.value.body["code"] == "file_not_found"


async def test_an_upload_over_the_limit_or_of_another_purpose_is_refused(tmp_path):
    settings = BatchSettings(max_file_bytes=100)
    async with batch_app(tmp_path, [HELLO], settings=settings) as app:
        with pytest.raises(openai.APIStatusError) as info:
            await app.openai.files.create(file=("big.jsonl", b"x" * 101), purpose="batch")
        assert info.value.status_code == 413 and info.value.body["param"] == "file"
        with pytest.raises(openai.BadRequestError) as refused:
            await app.openai.files.create(file=("a.jsonl", b"{}"), purpose="fine-tune")
        assert refused.value.body["code"] == "unsupported_parameter"
        assert refused.value.body["param"] == "purpose"
        bare = await app.http.post("/files", content=b"{}", headers={
            "authorization": f"Bearer {app.mine.key}", "content-type": "application/json"})
        assert bare.status_code == 400 and bare.json()["error"]["type"] == \
            "invalid_request_error"


async def test_a_chat_batch_writes_output_and_error_files_in_openais_shape(tmp_path):
    async with batch_app(tmp_path, [HELLO]) as app:
        file_id = await upload(app, jsonl(line("ok", chat(app.model)),
                                          line("missing", chat("no/such-model"))))
        batch = await app.openai.batches.create(input_file_id=file_id,
                                                endpoint="/v1/chat/completions",
                                                completion_window="24h",
                                                metadata={"job": "nightly"})
        assert batch.id.startswith("batch_") and batch.status == "in_progress"
        assert batch.request_counts.total == 2 and batch.metadata == {"job": "nightly"}
        batch = await finished(app, batch.id)
        assert batch.status == "completed" and batch.completed_at is not None
        assert (batch.request_counts.completed, batch.request_counts.failed) == (1, 1)
        assert batch.usage is not None and batch.usage.output_tokens > 0
        output = await lines_of(app, batch.output_file_id)
        ok = output["ok"]
        assert ok["id"].startswith("batch_req_") and ok["error"] is None
        assert ok["response"]["status_code"] == 200
        assert ok["response"]["request_id"].startswith("req_")
        completion = ChatCompletion.model_validate(ok["response"]["body"])
        assert completion.choices[0].message.content == "Hello there."
        errors = await lines_of(app, batch.error_file_id)
        missing = errors["missing"]["response"]
        assert missing["status_code"] == 404
        assert missing["body"]["error"]["code"] == "model_not_available"
        output_file = await app.openai.files.retrieve(batch.output_file_id)
        assert output_file.purpose == "batch_output"


@pytest.mark.parametrize(("url", "body", "kind"), [
    ("/v1/completions", {"model": "b3os/scripted", "prompt": "Say hi", "max_tokens": 8},
     Completion),
    ("/v1/responses", {"model": "b3os/scripted", "input": "hi", "max_output_tokens": 16},
     Response),
])
async def test_completions_and_responses_run_in_batches(tmp_path, url, body, kind):
    async with batch_app(tmp_path, [HELLO]) as app:
        file_id = await upload(app, jsonl(line("one", body, url)))
        batch = await app.openai.batches.create(input_file_id=file_id, endpoint=url,  # type: ignore[arg-type]
                                                completion_window="24h")
        batch = await finished(app, batch.id)
        assert batch.status == "completed" and batch.error_file_id is None
        answer = (await lines_of(app, batch.output_file_id))["one"]["response"]["body"]
        kind.model_validate(answer)


async def test_bad_input_lines_fail_the_batch_with_their_line_numbers(tmp_path):
    async with batch_app(tmp_path, [HELLO]) as app:
        model = app.model
        file_id = await upload(app, jsonl(
            line("a", chat(model)),
            "not json",
            line("a", chat(model)),
            line("c", chat(model), url="/v1/completions"),
            line("d", {**chat(model), "stream": True}),
            line("e", {"model": model, "messages": [{"role": "user", "content": 5}]})))
        batch = await app.openai.batches.create(input_file_id=file_id,
                                                endpoint="/v1/chat/completions",
                                                completion_window="24h")
        assert batch.status == "failed" and batch.failed_at is not None
        assert batch.errors is not None
        found = [(e.line, e.code, e.param) for e in batch.errors.data or []]
        assert found == [(2, "invalid_json", None), (3, "duplicate_custom_id", "custom_id"),
                         (4, "invalid_request", "url"), (5, "invalid_request", "body.stream"),
                         (6, "invalid_request", "body.messages[0].content")]
        assert (await app.openai.batches.retrieve(batch.id)).status == "failed"


async def test_a_batch_create_is_checked_like_any_request(tmp_path):
    async with batch_app(tmp_path, [HELLO]) as app:
        file_id = await upload(app, jsonl(line("a", chat(app.model))))
        with pytest.raises(openai.BadRequestError) as endpoint:
            await app.openai.batches.create(input_file_id=file_id, endpoint="/v1/embeddings",
                                            completion_window="24h")
        assert endpoint.value.body["param"] == "endpoint"
        with pytest.raises(openai.BadRequestError) as window:
            await app.openai.batches.create(input_file_id=file_id,  # type: ignore[arg-type]
                                            endpoint="/v1/chat/completions",
                                            completion_window="1h")
        assert window.value.body["param"] == "completion_window"
        with pytest.raises(openai.NotFoundError):
            await app.openai.batches.create(input_file_id="file-nope",
                                            endpoint="/v1/chat/completions",
                                            completion_window="24h")


async def test_cancel_part_way_puts_what_did_not_run_in_the_error_file(tmp_path):
    slow = Reply("one two three four five six", delay_s=0.05, repeat=True)
    async with batch_app(tmp_path, [slow], settings=BatchSettings(concurrency=1)) as app:
        file_id = await upload(app, jsonl(*(line(f"r{i}", chat(app.model)) for i in range(5))))
        batch = await app.openai.batches.create(input_file_id=file_id,
                                                endpoint="/v1/chat/completions",
                                                completion_window="24h")

        async def one_done() -> bool:
            return (await app.openai.batches.retrieve(batch.id)).request_counts.completed >= 1
        await until(one_done, "the first request done")
        cancelling = await app.openai.batches.cancel(batch.id)
        assert cancelling.status in ("cancelling", "cancelled")
        assert cancelling.cancelling_at is not None
        batch = await finished(app, batch.id)
        assert batch.status == "cancelled" and batch.cancelled_at is not None
        done, failed = batch.request_counts.completed, batch.request_counts.failed
        assert done >= 1 and failed >= 1 and done + failed == 5
        errors = await lines_of(app, batch.error_file_id)
        assert {e["error"]["code"] for e in errors.values()} == {"batch_cancelled"}
        assert all(e["response"] is None for e in errors.values())
        with pytest.raises(openai.BadRequestError):
            await app.openai.batches.cancel(batch.id)


async def test_files_and_batches_are_owned_by_their_key(tmp_path):
    async with batch_app(tmp_path, [HELLO]) as app:
        file_id = await upload(app, jsonl(line("a", chat(app.model))))
        batch = await app.openai.batches.create(input_file_id=file_id,
                                                endpoint="/v1/chat/completions",
                                                completion_window="24h")
        theirs = app.other.openai
        for call in (theirs.files.retrieve, theirs.files.content, theirs.files.delete):
            with pytest.raises(openai.NotFoundError):
                await call(file_id)
        with pytest.raises(openai.NotFoundError):
            await theirs.batches.create(input_file_id=file_id, endpoint="/v1/chat/completions",
                                        completion_window="24h")
        for batch_call in (theirs.batches.retrieve, theirs.batches.cancel):
            with pytest.raises(openai.NotFoundError) as info:
                await batch_call(batch.id)
            assert info.value.body["code"] == "batch_not_found"
        assert (await theirs.batches.list()).data == [] and (await theirs.files.list()).data == []
        listed = [b.id async for b in app.openai.batches.list()]
        assert listed == [batch.id]
