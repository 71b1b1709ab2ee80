"""A stream whose client goes away part-way is recorded with what it used by then: its
ledger row says 499 with the prompt, the cached prefix and the tokens generated so far,
and only the output reserved but never generated goes back to the key's bucket."""

from __future__ import annotations

import asyncio
import json

import pytest

from b3os_infer.edge.admission.limits import LimitsConfig
from b3os_infer.edge.storage.usage import UsageRow
from b3os_infer.engine.scripted.script import Reply, Script

pytestmark = pytest.mark.anyio

TOKENS = 200
CACHED = 5
SEEN = 6          # text tokens the client reads before it goes away
SCRIPT = Script(replies=(Reply(tokens=tuple(f" ~{i}~" for i in range(TOKENS)), delay_s=0.01,
                               cached_tokens=CACHED, repeat=True),))
# 10 output tokens a second of refill: what the cut request spent stays visible
LIMITS = LimitsConfig(default={"output_tokens_per_minute": 600})
USER = [{"role": "user", "content": "a long one"}]

ROUTES = {
    "messages": ("/v1/infer/v1/messages", {"max_tokens": 400, "messages": USER}),
    "chat": ("/v1/infer/chat/completions", {"max_tokens": 400, "messages": USER}),
    "responses": ("/v1/infer/responses", {"max_output_tokens": 400, "input": "a long one"}),
    "completions": ("/v1/infer/completions", {"max_tokens": 400, "prompt": "a long one"}),
}


async def _cut_stream(app, key: str, path: str, body: dict[str, object]) -> int:
    """Streams the request through the ASGI interface itself (the SDKs' test transports
    buffer the whole response) and disconnects once ``SEEN`` tokens have arrived; returns
    how many had arrived by then."""
    data = json.dumps({**body, "stream": True}).encode()
    headers = [(b"content-type", b"application/json"),
               (b"authorization", f"Bearer {key}".encode()),
               (b"anthropic-version", b"2023-06-01"),
               (b"content-length", str(len(data)).encode())]
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": path, "raw_path": path.encode(),
             "query_string": b"", "root_path": "", "headers": headers,
             "client": ("127.0.0.1", 50000), "server": ("test", 80)}
    gone = asyncio.Event()
    pending = [{"type": "http.request", "body": data, "more_body": False}]
    seen = [0]

    async def receive() -> dict[str, object]:
        if pending:
            return pending.pop()
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, object]) -> None:
        if message["type"] == "http.response.body":
            chunk = message.get("body", b"")
            assert isinstance(chunk, bytes)
            # a token's text is " ~i~"; a stream's done event repeats them, so count deltas
            if b"~" in chunk and b"done" not in chunk and b"stop" not in chunk:
                seen[0] += chunk.count(b"~") // 2
            if seen[0] >= SEEN:
                gone.set()

    await asyncio.wait_for(app(scope, receive, send), 10)
    return seen[0]


async def _row(app) -> UsageRow:
    for _ in range(100):     # the ledger is written off the event loop
        rows = app.edge.ledger.rows()
        if rows:
            return rows[-1]
        await asyncio.sleep(0.05)
    raise AssertionError("no ledger row")


@pytest.mark.parametrize("route", sorted(ROUTES))
async def test_a_cut_stream_records_the_tokens_it_had_used(scripted_app, route):
    app = await scripted_app(SCRIPT, limits=LIMITS)
    path, body = ROUTES[route]
    seen = await _cut_stream(app.app, app.key, path, {"model": app.model, **body})
    row = await _row(app)
    assert row.status == 499
    assert seen >= SEEN
    assert seen <= row.output_tokens < TOKENS       # generated before the cut, not all
    assert row.cached_tokens == CACHED
    assert row.input_tokens > 0
    limits = app.edge.limits.for_model(app.model)
    key_id = app.key.split("_")[1]
    snap = await app.edge.limiter.peek(key_id, app.model, limits)
    # the 400 reserved went back but for the tokens generated (less the refill meanwhile;
    # before, a cut request gave back all it had reserved)
    spent = limits.output_tokens_per_minute - snap.buckets["output_tokens"].remaining
    assert 0 < spent <= row.output_tokens
