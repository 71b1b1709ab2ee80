"""Messages API fields of 2026 through the official SDK: cache diagnosis from our prefix
cache, `model_context_window_exceeded`, and count_tokens taking a whole create body."""

from __future__ import annotations

import pytest

from b3os_infer.engine.scripted.script import Reply, Script

pytestmark = pytest.mark.anyio

SYSTEM = "You are a careful assistant. " * 20
TOOLS = [{"name": "Read", "description": "Read a file",
          "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]
CACHED = Script(replies=(Reply("Fine.", repeat=True),), prefix_cache=True)


def _turn(messages, previous=None, **changes):
    return dict(max_tokens=50, system=SYSTEM, tools=TOOLS, messages=messages,
                diagnostics={"previous_message_id": previous}, **changes)


async def _create(app, stream: bool, **kwargs):
    if not stream:
        return await app.anthropic.messages.create(model=app.model, **kwargs)
    async with app.anthropic.messages.stream(model=app.model, **kwargs) as events:
        return await events.get_final_message()


@pytest.mark.parametrize("stream", [False, True])
async def test_a_conversation_served_from_the_cache_has_no_diagnosis(scripted_app, stream):
    app = await scripted_app(CACHED)
    first_turn = [{"role": "user", "content": "hello"}]
    first = await _create(app, stream, **_turn(first_turn))
    assert first.diagnostics is None
    second_turn = [*first_turn, {"role": "assistant", "content": first.content},
                   {"role": "user", "content": "and then?"}]
    second = await _create(app, stream, **_turn(second_turn, first.id))
    assert second.usage.cache_read_input_tokens > 0
    assert second.diagnostics is None


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("change", "reason"), [
    ({"system": "Another system prompt."}, "system_changed"),
    ({"tools": []}, "tools_changed"),
])
async def test_a_changed_prompt_part_is_named_with_the_tokens_it_cost(scripted_app, stream,
                                                                       change, reason):
    app = await scripted_app(CACHED)
    first = await _create(app, False, **_turn([{"role": "user", "content": "hello"}]))
    prompt = first.usage.input_tokens + first.usage.cache_read_input_tokens
    turn = _turn([{"role": "user", "content": "hello"}], first.id) | change
    second = await _create(app, stream, **turn)
    miss = second.diagnostics.cache_miss_reason
    assert miss.type == reason
    assert miss.cache_missed_input_tokens == prompt - second.usage.cache_read_input_tokens > 0


async def test_an_edited_earlier_message_is_messages_changed(scripted_app):
    app = await scripted_app(CACHED)
    first = await _create(app, False, **_turn([{"role": "user", "content": "hello"}]))
    edited = [{"role": "user", "content": "HELLO"}, {"role": "assistant", "content": "Fine."},
              {"role": "user", "content": "next"}]
    second = await _create(app, False, **_turn(edited, first.id))
    assert second.diagnostics.cache_miss_reason.type == "messages_changed"


async def test_an_unknown_previous_message_is_not_found(scripted_app):
    app = await scripted_app(CACHED)
    reply = await _create(app, False, **_turn([{"role": "user", "content": "hi"}],
                                             "msg_unknown"))
    assert reply.diagnostics.cache_miss_reason.type == "previous_message_not_found"


async def test_without_diagnostics_the_message_carries_none(scripted_app):
    app = await scripted_app(CACHED)
    reply = await app.anthropic.messages.create(
        model=app.model, max_tokens=20, messages=[{"role": "user", "content": "hi"}])
    assert reply.diagnostics is None


@pytest.mark.parametrize("stream", [False, True])
async def test_a_reply_cut_by_the_full_window_stops_with_model_context_window_exceeded(
        scripted_app, stream):
    long = Reply(" ".join(["word"] * 400), repeat=True)
    app = await scripted_app(Script(replies=(long,), context_window=300))
    # the prompt (one token a byte here) leaves fewer than 100 tokens of the 300-token window
    ask = [{"role": "user", "content": "Write at length. " * 12}]
    reply = await _create(app, stream, max_tokens=100, messages=ask)
    assert reply.stop_reason == "model_context_window_exceeded"
    assert reply.usage.input_tokens + reply.usage.output_tokens == 300
    capped = await _create(app, stream, max_tokens=20, messages=ask)
    assert capped.stop_reason == "max_tokens" and capped.usage.output_tokens == 20
    chat = await app.openai.chat.completions.create(model=app.model, max_tokens=100,
                                                    messages=ask)
    assert chat.choices[0].finish_reason == "length"


async def test_count_tokens_takes_a_whole_create_body_and_counts_the_same(scripted_app):
    app = await scripted_app(CACHED)
    prompt = dict(system=SYSTEM, tools=TOOLS, messages=[{"role": "user", "content": "hi"}])
    plain = await app.anthropic.messages.count_tokens(model=app.model, **prompt)
    create_only = {"max_tokens": 1024, "stream": True, "stop_sequences": ["x"],
                   "temperature": 0.5, "top_p": 0.9, "top_k": 5,
                   "metadata": {"user_id": "u"}, "service_tier": "auto",
                   "inference_geo": "us", "diagnostics": {"previous_message_id": None},
                   "fallback_credit_token": "t"}
    whole = await app.anthropic.messages.count_tokens(model=app.model, **prompt,
                                                      extra_body=create_only)
    assert whole.input_tokens == plain.input_tokens
