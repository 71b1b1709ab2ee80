"""Batches through the official SDKs against the live server on the embedded SmolLM2.

Anthropic: ``messages.batches.create/retrieve/list/results/cancel/delete``, the results
equal to the same requests sent one by one (greedy). OpenAI: ``files.create``,
``batches.create/retrieve/list/cancel`` and ``files.content``.
"""

from __future__ import annotations

import io
import json
import time

import anthropic
import openai

MODEL = "b3os/smollm2-135m-instruct"
QUESTIONS = ["Name one river in Oregon.", "What colour is the sky?"]


def _messages(question: str) -> dict[str, object]:
    return {"model": MODEL, "max_tokens": 12, "temperature": 0,
            "messages": [{"role": "user", "content": question}]}


def _until(check, what: str, seconds: float = 180):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not (value := check()):
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.2)
    return value


def test_an_anthropic_batch_matches_the_requests_sent_one_by_one(
        anthropic_client: anthropic.Anthropic) -> None:
    batches = anthropic_client.messages.batches
    # this SDK no longer lists temperature as an argument: it goes in the body as sent
    singles = [anthropic_client.messages.create(  # type: ignore[call-overload]
        **{k: v for k, v in _messages(q).items() if k != "temperature"},
        extra_body={"temperature": 0}) for q in QUESTIONS]
    batch = batches.create(requests=[{"custom_id": f"q{i}", "params": _messages(q)}
                                     for i, q in enumerate(QUESTIONS)])  # type: ignore[list-item]
    assert batch.processing_status == "in_progress"
    ended = _until(lambda: (b := batches.retrieve(batch.id)).processing_status == "ended"
                   and b, "the batch ended")
    assert ended.request_counts.succeeded == len(QUESTIONS)
    assert batch.id in [b.id for b in batches.list(limit=20).data]
    results = {r.custom_id: r.result for r in batches.results(batch.id)}
    for i, single in enumerate(singles):
        result = results[f"q{i}"]
        assert result.type == "succeeded"
        assert result.message.content == single.content
        assert result.message.usage.output_tokens == single.usage.output_tokens
    assert batches.delete(batch.id).type == "message_batch_deleted"


def test_an_anthropic_batch_canceled_at_once_ends_with_every_request_accounted_for(
        anthropic_client: anthropic.Anthropic) -> None:
    batches = anthropic_client.messages.batches
    batch = batches.create(requests=[{"custom_id": f"c{i}", "params": {
        **_messages(QUESTIONS[0]), "max_tokens": 64}} for i in range(6)])  # type: ignore[list-item]
    canceling = batches.cancel(batch.id)
    assert canceling.processing_status in ("canceling", "ended")
    ended = _until(lambda: (b := batches.retrieve(batch.id)).processing_status == "ended"
                   and b, "the canceled batch ended")
    counts = ended.request_counts
    assert counts.canceled >= 1 and counts.succeeded + counts.canceled == 6
    kinds = {r.result.type for r in batches.results(batch.id)}
    assert "canceled" in kinds and kinds <= {"succeeded", "canceled"}


def test_an_openai_batch_through_files_and_batches(openai_client: openai.OpenAI) -> None:
    body = {"model": MODEL, "max_tokens": 12, "temperature": 0,
            "messages": [{"role": "user", "content": QUESTIONS[1]}]}
    single = openai_client.chat.completions.create(**body)  # type: ignore[call-overload]
    line = {"custom_id": "sky", "method": "POST", "url": "/v1/chat/completions", "body": body}
    upload = openai_client.files.create(
        file=("sky.jsonl", io.BytesIO((json.dumps(line) + "\n").encode())), purpose="batch")
    batch = openai_client.batches.create(input_file_id=upload.id,
                                         endpoint="/v1/chat/completions",
                                         completion_window="24h")
    done = _until(lambda: (b := openai_client.batches.retrieve(batch.id)).status
                  in ("completed", "failed") and b, "the batch completed")
    assert done.status == "completed" and done.request_counts.completed == 1
    assert batch.id in [b.id for b in openai_client.batches.list(limit=20).data]
    assert done.output_file_id is not None
    output = json.loads(openai_client.files.content(done.output_file_id).text)
    assert output["custom_id"] == "sky" and output["response"]["status_code"] == 200
    answer = output["response"]["body"]["choices"][0]["message"]["content"]
    assert answer == single.choices[0].message.content
    lines = [{**line, "custom_id": f"long{i}", "body": {**body, "max_tokens": 64}}
             for i in range(6)]
    many = openai_client.files.create(file=("many.jsonl", io.BytesIO(
        "".join(json.dumps(x) + "\n" for x in lines).encode())), purpose="batch")
    second = openai_client.batches.create(input_file_id=many.id,
                                          endpoint="/v1/chat/completions",
                                          completion_window="24h")
    assert openai_client.batches.cancel(second.id).status in ("cancelling", "cancelled")
    cancelled = _until(lambda: (b := openai_client.batches.retrieve(second.id)).status
                       == "cancelled" and b, "the second batch cancelled")
    assert cancelled.request_counts.failed >= 1
