"""Message Batches in process, on the scripted engine, through the official Anthropic SDK.

Every route and state: create, retrieve, list pages, results as the SDK's types, errored
requests with the interactive route's error body, validation at exact paths, a batch
owned by its key, cancel part-way, delete only once ended, expiry, and the ledger.
"""

from __future__ import annotations

import time

import anthropic
import pytest
from anthropic.types.messages import MessageBatch, MessageBatchIndividualResponse
from sqlalchemy import update

from b3os_infer.batches.tables import batches
from b3os_infer.config import BatchSettings
from b3os_infer.engine.scripted.script import Reply, When
from support.batch_app import BatchApp, batch_app, until

pytestmark = pytest.mark.anyio

HELLO = Reply("Hello there.", repeat=True)


def params(model: str, text: str = "hi", **extra: object) -> dict[str, object]:
    return {"model": model, "max_tokens": 16, "messages": [{"role": "user", "content": text}],
            **extra}


async def ended(app: BatchApp, batch_id: str) -> MessageBatch:
    async def done() -> bool:
        batch = await app.anthropic.messages.batches.retrieve(batch_id)
        return batch.processing_status == "ended"
    await until(done, f"{batch_id} ended")
    return await app.anthropic.messages.batches.retrieve(batch_id)


async def results(app: BatchApp, batch_id: str) -> dict[str, MessageBatchIndividualResponse]:
    lines = await app.anthropic.messages.batches.results(batch_id)
    return {line.custom_id: line async for line in lines}


async def test_a_batch_runs_every_request_and_its_results_are_the_sdks_types(tmp_path):
    async with batch_app(tmp_path, [HELLO]) as app:
        created = await app.anthropic.messages.batches.create(requests=[
            {"custom_id": f"r{i}", "params": params(app.model)} for i in range(3)])
        assert created.id.startswith("msgbatch_") and created.type == "message_batch"
        assert created.processing_status == "in_progress" and created.results_url is None
        assert created.request_counts.processing == 3
        assert (created.expires_at - created.created_at).total_seconds() == 24 * 3600
        batch = await ended(app, created.id)
        assert batch.request_counts.model_dump() == {"processing": 0, "succeeded": 3,
                                                     "errored": 0, "canceled": 0, "expired": 0}
        assert batch.ended_at is not None and batch.ended_at >= batch.created_at
        assert batch.results_url == (f"http://test/v1/infer/v1/messages/batches/{batch.id}"
                                     "/results")
        found = await results(app, batch.id)
        assert sorted(found) == ["r0", "r1", "r2"]
        for line in found.values():
            assert line.result.type == "succeeded"
            assert line.result.message.content[0].text == "Hello there."
            assert line.result.message.stop_reason == "end_turn"
        raw = await app.http.get(f"/v1/messages/batches/{batch.id}/results",
                                 headers={"x-api-key": app.mine.key})
        for text in raw.text.splitlines():   # every line validates as the SDK's type
            MessageBatchIndividualResponse.model_validate_json(text)


async def test_a_batch_answers_as_the_same_requests_sent_one_by_one(tmp_path):
    replies = [Reply("Paris is in France.", when=When(last_user_contains="Paris"),
                     repeat=True),
               Reply("Rome is in Italy.", when=When(last_user_contains="Rome"), repeat=True)]
    async with batch_app(tmp_path, replies) as app:
        asked = {"p": params(app.model, "Where is Paris?"), "r": params(app.model, "Rome?")}
        one_by_one = {c: await app.anthropic.messages.create(**p)  # type: ignore[arg-type]
                      for c, p in asked.items()}
        batch = await app.anthropic.messages.batches.create(requests=[
            {"custom_id": c, "params": p} for c, p in asked.items()])
        await ended(app, batch.id)
        found = await results(app, batch.id)
        for custom_id, single in one_by_one.items():
            message = found[custom_id].result.message
            assert message.content == single.content and message.usage == single.usage


async def test_a_failing_request_is_errored_with_the_interactive_routes_error_body(tmp_path):
    async with batch_app(tmp_path, [HELLO]) as app:
        with pytest.raises(anthropic.NotFoundError) as interactive:
            await app.anthropic.messages.create(**params("no/such-model"))  # type: ignore[arg-type]
        batch = await app.anthropic.messages.batches.create(requests=[
            {"custom_id": "bad", "params": params("no/such-model")},
            {"custom_id": "good", "params": params(app.model)}])
        batch = await ended(app, batch.id)
        assert (batch.request_counts.errored, batch.request_counts.succeeded) == (1, 1)
        result = (await results(app, batch.id))["bad"].result
        assert result.type == "errored"
        body = result.error.model_dump()
        expected = dict(interactive.value.body)
        assert body.pop("request_id").startswith("req_")
        expected.pop("request_id")
        assert body == expected


@pytest.mark.parametrize(("request_list", "param", "code"), [
    ([{"custom_id": "a", "params": {"max_tokens": 5, "messages": []}}],
     "requests[0].params.model", "invalid_request"),
    ([{"custom_id": "a", "params": {"model": "m", "max_tokens": 5, "messages": [
        {"role": "user", "content": [{"type": "text", "text": 5}]}]}}],
     "requests[0].params.messages[0].content[0].text", "invalid_request"),
    ([{"custom_id": "a", "params": {"model": "m", "max_tokens": 5, "stream": True,
                                    "messages": [{"role": "user", "content": "hi"}]}}],
     "requests[0].params.stream", "invalid_request"),
    ([{"custom_id": "a", "params": {"model": "m", "max_tokens": 5, "container": "c",
                                    "messages": [{"role": "user", "content": "hi"}]}}],
     "requests[0].params.container", "unsupported_parameter"),
    ([{"custom_id": "a b", "params": {}}], "requests[0].custom_id", "invalid_request"),
    ([{"custom_id": "a", "params": {"model": "m", "max_tokens": 5,
                                    "messages": [{"role": "user", "content": "hi"}]}}] * 2,
     "requests[1].custom_id", "invalid_request"),
    ([], "requests", "invalid_request"),
])
async def test_a_bad_request_in_a_batch_is_refused_at_its_path(tmp_path, request_list, param,
                                                               code):
    async with batch_app(tmp_path, [HELLO]) as app:
        with pytest.raises(anthropic.BadRequestError) as info:
            await app.anthropic.messages.batches.create(requests=request_list)
        assert info.value.body["b3os"] == {"code": code, "param": param}
        assert info.value.body["error"]["message"].startswith(param)
        assert (await app.anthropic.messages.batches.list()).data == []


async def test_an_unknown_field_of_the_create_body_is_refused(tmp_path):
    async with batch_app(tmp_path, [HELLO]) as app:
        with pytest.raises(anthropic.BadRequestError) as info:
            await app.anthropic.messages.batches.create(
                requests=[{"custom_id": "a", "params": params(app.model)}],
                extra_body={"priority": "high"})
        assert info.value.body["b3os"] == {"code": "unsupported_parameter", "param": "priority"}


async def test_a_batch_is_owned_by_its_key_and_another_key_gets_404(tmp_path):
    async with batch_app(tmp_path, [HELLO]) as app:
        batch = await app.anthropic.messages.batches.create(requests=[
            {"custom_id": "a", "params": params(app.model)}])
        await ended(app, batch.id)
        theirs = app.other.anthropic.messages.batches
        for call in (theirs.retrieve, theirs.cancel, theirs.delete, theirs.results):
            with pytest.raises(anthropic.NotFoundError) as info:
                await call(batch.id)
            assert info.value.body["error"]["type"] == "not_found_error"
            assert info.value.body["b3os"]["code"] == "batch_not_found"
        assert (await theirs.list()).data == []
        assert [b.id for b in (await app.anthropic.messages.batches.list()).data] == [batch.id]


async def test_the_infer_scope_alone_makes_a_batch_whose_lines_run_as_its_key(tmp_path):
    """A key with only ``infer`` (no ``models:read``) makes and reads a batch; the key is
    allowed one other model, so its line for this one fails as model_not_allowed."""
    async with batch_app(tmp_path, [HELLO], other_scopes=("infer",),
                         other_models=("b3os/elsewhere",)) as app:
        theirs = app.other.anthropic.messages.batches
        batch = await theirs.create(requests=[{"custom_id": "a", "params": params(app.model)}])
        async def done() -> bool:
            return (await theirs.retrieve(batch.id)).processing_status == "ended"
        await until(done, f"{batch.id} ended")
        lines = {line.custom_id: line async for line in await theirs.results(batch.id)}
        result = lines["a"].result
        assert result.type == "errored"
        assert result.error.model_dump()["b3os"]["code"] == "model_not_allowed"
        with pytest.raises(anthropic.PermissionDeniedError) as listing:
            await app.other.anthropic.models.list()
        assert listing.value.body["b3os"]["code"] == "missing_scope"


async def test_batches_list_newest_first_in_pages(tmp_path):
    async with batch_app(tmp_path, [HELLO]) as app:
        made = [(await app.anthropic.messages.batches.create(requests=[
            {"custom_id": "a", "params": params(app.model)}])).id for _ in range(3)]
        newest_first = made[::-1]
        page = await app.anthropic.messages.batches.list(limit=2)
        assert [b.id for b in page.data] == newest_first[:2] and page.has_more
        assert page.first_id == newest_first[0] and page.last_id == newest_first[1]
        rest = await app.anthropic.messages.batches.list(limit=2, after_id=page.last_id)
        assert [b.id for b in rest.data] == newest_first[2:] and not rest.has_more
        before = await app.anthropic.messages.batches.list(before_id=newest_first[2])
        assert [b.id for b in before.data] == newest_first[:2]
        assert [b.id async for b in app.anthropic.messages.batches.list(limit=1)] == \
            newest_first


async def test_cancel_part_way_cancels_what_has_not_run(tmp_path):
    slow = Reply("one two three four five six", delay_s=0.05, repeat=True)
    async with batch_app(tmp_path, [slow], settings=BatchSettings(concurrency=1)) as app:
        batch = await app.anthropic.messages.batches.create(requests=[
            {"custom_id": f"r{i}", "params": params(app.model)} for i in range(5)])
        await until(lambda: app.service.store.database.counts(batch.id).get("succeeded"),
                    "the first request done")
        canceling = await app.anthropic.messages.batches.cancel(batch.id)
        assert canceling.processing_status in ("canceling", "ended")
        assert canceling.cancel_initiated_at is not None
        batch = await ended(app, batch.id)
        counts = batch.request_counts
        assert counts.succeeded >= 1 and counts.canceled >= 1
        assert counts.succeeded + counts.canceled == 5 and counts.errored == 0
        kinds = {line.result.type for line in (await results(app, batch.id)).values()}
        assert kinds == {"succeeded", "canceled"}
        again = await app.anthropic.messages.batches.cancel(batch.id)
        assert again.processing_status == "ended"


async def test_only_an_ended_batch_can_be_deleted_and_then_it_is_gone(tmp_path):
    slow = Reply("one two three", delay_s=0.05, repeat=True)
    async with batch_app(tmp_path, [slow], settings=BatchSettings(concurrency=1)) as app:
        batch = await app.anthropic.messages.batches.create(requests=[
            {"custom_id": f"r{i}", "params": params(app.model)} for i in range(3)])
        with pytest.raises(anthropic.BadRequestError) as info:
            await app.anthropic.messages.batches.delete(batch.id)
        assert info.value.body["b3os"]["code"] == "batch_not_ended"
        await ended(app, batch.id)
        deleted = await app.anthropic.messages.batches.delete(batch.id)
        assert deleted.id == batch.id and deleted.type == "message_batch_deleted"
        with pytest.raises(anthropic.NotFoundError):
            await app.anthropic.messages.batches.retrieve(batch.id)


async def test_results_before_the_end_are_refused(tmp_path):
    slow = Reply("one two three", delay_s=0.05, repeat=True)
    async with batch_app(tmp_path, [slow], settings=BatchSettings(concurrency=1)) as app:
        batch = await app.anthropic.messages.batches.create(requests=[
            {"custom_id": f"r{i}", "params": params(app.model)} for i in range(3)])
        answer = await app.http.get(f"/v1/messages/batches/{batch.id}/results",
                                    headers={"x-api-key": app.mine.key})
        assert answer.status_code == 400
        assert answer.json()["b3os"]["code"] == "batch_not_ended"


async def test_requests_not_run_by_expires_at_are_expired(tmp_path):
    slow = Reply("one two three four", delay_s=0.05, repeat=True)
    async with batch_app(tmp_path, [slow], settings=BatchSettings(concurrency=1)) as app:
        batch = await app.anthropic.messages.batches.create(requests=[
            {"custom_id": f"r{i}", "params": params(app.model)} for i in range(4)])
        await until(lambda: app.service.store.database.counts(batch.id).get("succeeded"),
                    "the first request done")
        with app.service.store.database.engine.begin() as db:   # its 24 hours are up
            db.execute(update(batches).where(batches.c.id == batch.id)
                       .values(expires_at=time.time() - 1))
        app.service.runner.wake()
        batch = await ended(app, batch.id)
        counts = batch.request_counts
        assert counts.succeeded >= 1 and counts.expired >= 1
        assert counts.succeeded + counts.expired == 4
        kinds = {line.result.type for line in (await results(app, batch.id)).values()}
        assert kinds == {"succeeded", "expired"}


async def test_batch_requests_are_in_the_ledger_under_the_batch_class(tmp_path):
    async with batch_app(tmp_path, [HELLO]) as app:
        await app.anthropic.messages.create(**params(app.model))  # type: ignore[arg-type]
        batch = await app.anthropic.messages.batches.create(requests=[
            {"custom_id": f"r{i}", "params": params(app.model)} for i in range(2)])
        await ended(app, batch.id)
        found = await results(app, batch.id)
        rows = [r for r in app.edge.ledger.rows() if r.route == "batch POST /v1/messages"]
        assert len(rows) == 2 and all(r.status == 200 and r.model == app.model for r in rows)
        assert {r.request_id for r in rows} == {i.request_id for i in
                                                app.service.store.database.items(batch.id)}
        usages = [line.result.message.usage for line in found.values()]
        assert sum(r.input_tokens for r in rows) == sum(u.input_tokens for u in usages)
        assert sum(r.output_tokens for r in rows) == sum(u.output_tokens for u in usages)
        interactive = [r for r in app.edge.ledger.rows() if r.route == "POST /v1/messages"]
        assert len(interactive) == 1
