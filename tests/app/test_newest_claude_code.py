"""What the newest Claude Code (2.1.3xx) sends, through the official SDK: `thinking.display`
`updates`, deferred tools and tool search, tools added and removed mid-conversation,
`caller` on `tool_use`, and a `max_tokens` above the model's limit, lowered to it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import pytest

from b3os_infer.anthropic.decode import SYSTEM_ROLE_MESSAGE
from b3os_infer.engine.scripted.script import Reply, Script, When

pytestmark = pytest.mark.anyio

# the betas of Claude Code 2.1.332's first request (reference/claude-code.md), and the one
# it sends with `display: "updates"` (issue 27)
BETAS = ["claude-code-20250219", "interleaved-thinking-2025-05-14",
         "context-management-2025-06-27", "mid-conversation-tool-changes-2026-07-01",
         "thinking-token-count-2026-05-13", "advanced-tool-use-2025-11-20",
         "effort-2025-11-24", "thinking-display-updates-2026-08-18"]
USER = [{"role": "user", "content": "Which tools can you use?"}]
LISTED = {"name": "Read", "description": "Read a file from the local filesystem",
          "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}
LAZY = {"name": "CronList", "description": "List the scheduled jobs of this session",
        "input_schema": {"type": "object", "properties": {}}, "defer_loading": True}
SEARCH = {"name": "ToolSearch", "description": "Load deferred tools by name or keyword",
          "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}}}
LAZY_SEEN = When(prompt_contains=LAZY["description"])
CALL_LAZY = '<tool_call>\n{"name": "CronList", "arguments": {}}\n</tool_call>'


def _search_turns(result: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A conversation where the model called ToolSearch (a direct call, as Claude Code
    records it) and the client answered with ``result``."""
    return [*USER,
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_search", "name": "ToolSearch",
                 "input": {"query": "cron"}, "caller": {"type": "direct"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_search", "content": result},
                {"type": "text", "text": "Now list the jobs."}]}]


async def _create(app, stream: bool, **kwargs: Any):
    kwargs = {"model": app.model, "max_tokens": 200, "betas": BETAS, **kwargs}
    if not stream:
        return await app.anthropic.beta.messages.create(**kwargs)
    async with app.anthropic.beta.messages.stream(**kwargs) as events:
        return await events.get_final_message()


# ---- thinking.display "updates" ------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_display_updates_sends_a_signed_thinking_block_without_its_text(scripted_app,
                                                                              stream):
    app = await scripted_app(Reply("<think>Paris in June is warm.</think>Sunny.", repeat=True))
    thinking = {"type": "adaptive", "display": "updates"}
    reply = await _create(app, stream, messages=USER, thinking=thinking)
    kinds = [block.type for block in reply.content]
    assert kinds == ["thinking", "text"]
    assert reply.content[0].thinking == "" and reply.content[0].signature
    assert reply.content[1].text == "Sunny."
    # the block goes back as it came, as Claude Code sends it on the next turn
    again = [*USER, {"role": "assistant", "content": [b.model_dump(exclude_none=True)
                                                      for b in reply.content]},
             {"role": "user", "content": "And tomorrow?"}]
    follow = await _create(app, stream, messages=again, thinking=thinking)
    assert follow.stop_reason == "end_turn"


# ---- deferred tools and tool search --------------------------------------------------


async def test_a_deferred_tool_is_not_in_the_prompt_until_a_tool_reference_loads_it(
        scripted_app):
    app = await scripted_app([Reply("seen", when=LAZY_SEEN, repeat=True),
                              Reply("unseen", repeat=True)])
    tools = [LISTED, SEARCH, LAZY]
    before = await _create(app, False, messages=USER, tools=tools)
    assert before.content[0].text == "unseen"
    loaded = _search_turns([{"type": "tool_reference", "tool_name": "CronList"}])
    after = await _create(app, False, messages=loaded, tools=tools)
    assert after.content[0].text == "seen"
    # count_tokens sees the same prompts: the loaded definition adds to the count
    counted = [await app.anthropic.beta.messages.count_tokens(
        model=app.model, messages=messages, tools=tools, betas=BETAS)
        for messages in (_search_turns([{"type": "text", "text": "nothing found"}]), loaded)]
    assert counted[1].input_tokens > counted[0].input_tokens
    assert counted[1].input_tokens == after.usage.input_tokens


@pytest.mark.parametrize("stream", [False, True])
async def test_a_deferred_tool_can_be_called_only_once_loaded(scripted_app, stream):
    app = await scripted_app(Reply(CALL_LAZY, repeat=True))
    tools = [LISTED, SEARCH, LAZY]
    forced = {"type": "tool", "name": "CronList"}
    with pytest.raises(anthropic.BadRequestError) as unloaded:
        await _create(app, stream, messages=USER, tools=tools, tool_choice=forced)
    assert unloaded.value.body["b3os"]["param"] == "tool_choice.name"
    loaded = _search_turns([{"type": "tool_reference", "tool_name": "CronList"}])
    called = await _create(app, stream, messages=loaded, tools=tools, tool_choice=forced)
    assert called.stop_reason == "tool_use"
    assert [(b.type, b.name) for b in called.content] == [("tool_use", "CronList")]


async def test_a_tool_reference_to_a_tool_not_declared_names_the_block(scripted_app):
    app = await scripted_app(Reply("unused", repeat=True))
    with pytest.raises(anthropic.BadRequestError) as info:
        await _create(app, False, tools=[LISTED, SEARCH], messages=_search_turns(
            [{"type": "tool_reference", "tool_name": "Nowhere"}]))
    assert info.value.body["b3os"]["param"] == "messages[2].content[0].content[0].tool_name"


# ---- tools added and removed mid-conversation ----------------------------------------

CACHED_SCRIPT = Script(replies=(Reply(CALL_LAZY, when=LAZY_SEEN, repeat=True),
                                Reply("Fine.", repeat=True)), prefix_cache=True)


def _added(tool_change: dict[str, Any] | None) -> list[dict[str, Any]]:
    text = {"type": "text", "text": "Now list the jobs."}
    return [*USER, {"role": "assistant", "content": "Fine."},
            {"role": "user", "content": [text, tool_change] if tool_change else [text]}]


@pytest.mark.parametrize("stream", [False, True])
async def test_a_tool_addition_offers_the_tool_after_the_cached_prefix(scripted_app, stream):
    app = await scripted_app(CACHED_SCRIPT)
    tools = [LISTED, LAZY]
    first = await _create(app, stream, messages=USER, tools=tools,
                          diagnostics={"previous_message_id": None})
    assert first.content[0].text == "Fine."
    addition = {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "CronList"}}
    second = await _create(app, stream, messages=_added(addition), tools=tools,
                           diagnostics={"previous_message_id": first.id})
    assert [(b.type, b.name) for b in second.content] == [("tool_use", "CronList")]
    # the tool list at the top is as it was: the first prompt's prefix is reused
    assert second.diagnostics is None and second.usage.cache_read_input_tokens > 0
    # where listing the tool at the top instead would have changed the tools
    listed = [LISTED, {k: v for k, v in LAZY.items() if k != "defer_loading"}]
    rewritten = await _create(app, stream, messages=_added(None), tools=listed,
                              diagnostics={"previous_message_id": first.id})
    assert rewritten.diagnostics.cache_miss_reason.type == "tools_changed"


async def test_a_tool_defined_by_a_tool_addition_can_be_called(scripted_app):
    app = await scripted_app(Reply('<tool_call>\n{"name": "Clock", "arguments": {}}\n'
                                   '</tool_call>', repeat=True))
    clock = {"name": "Clock", "description": "The time now",
             "input_schema": {"type": "object", "properties": {}}}
    messages = [{"role": "user", "content": [
        {"type": "text", "text": "What time is it?"},
        {"type": "tool_addition", "tool": {"type": "tool_definition", "definition": clock}}]}]
    reply = await _create(app, False, messages=messages, tools=[LISTED])
    assert [(b.type, b.name) for b in reply.content] == [("tool_use", "Clock")]


async def test_a_removed_tool_can_no_longer_be_called(scripted_app):
    app = await scripted_app(Reply('<tool_call>\n{"name": "Read", "arguments": {"path": "a"}}'
                                   '\n</tool_call>', repeat=True))
    kept = await _create(app, False, messages=USER, tools=[LISTED])
    assert kept.stop_reason == "tool_use"
    removal = {"type": "tool_removal", "tool": {"type": "tool_reference", "name": "Read"}}
    removed = [{"role": "user", "content": [{"type": "text", "text": "Read a."}, removal]}]
    # the reply is no longer read for calls: the model's call stays text
    reply = await _create(app, False, messages=removed, tools=[LISTED])
    assert reply.stop_reason == "end_turn"
    assert [b.type for b in reply.content] == ["text"]
    with pytest.raises(anthropic.BadRequestError) as forced:
        await _create(app, False, messages=removed, tools=[LISTED, SEARCH],
                      tool_choice={"type": "tool", "name": "Read"})
    assert forced.value.body["b3os"]["param"] == "tool_choice.name"


async def test_with_tool_choice_none_a_tool_addition_is_left_out_with_the_tools(scripted_app):
    app = await scripted_app(Reply("unused", repeat=True))
    addition = {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "CronList"}}
    counts = [(await app.anthropic.beta.messages.count_tokens(
        model=app.model, messages=_added(change), tools=[LISTED, LAZY], betas=BETAS,
        tool_choice=choice)).input_tokens
        for choice in ({"type": "none"}, {"type": "auto"}) for change in (None, addition)]
    assert counts[0] == counts[1]        # none: no tools, added or listed
    assert counts[2] < counts[3]         # auto: the added tool's definition is counted


async def test_mcp_tool_changes_are_refused_by_path(scripted_app):
    app = await scripted_app(Reply("unused", repeat=True))
    change = {"type": "tool_addition",
              "tool": {"type": "mcp_toolset_reference", "server_name": "files"}}
    with pytest.raises(anthropic.BadRequestError) as info:
        await _create(app, False, tools=[LISTED], messages=[
            {"role": "user", "content": [{"type": "text", "text": "hi"}, change]}])
    assert info.value.body["b3os"] == {"code": "unsupported_parameter",
                                       "param": "messages[0].content[1].tool"}


# ---- the newest Claude Code's first request, as recorded ------------------------------

NEWEST = Path(__file__).resolve().parents[1] / "fixtures" / \
    "claude_code_newest_first_request.json"
# A window that holds the whole request (the scripted engine counts one token a byte); the
# model reasons (Claude Code asks for adaptive thinking, which lets the model decide) until
# the budget closes its section, then answers.
BIG = Script(replies=(Reply("<think>" + " ".join(["word"] * 9000), repeat=True),),
             context_window=131072)


def recorded() -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """Claude Code 2.1.332's first request with default flags (``python -m bench.capture
    --claude tests/js/newest/...``): the attempt with its ``system``-role message, the one it
    sent again without it, and its ``anthropic-beta`` values."""
    fixture = json.loads(NEWEST.read_text())
    kept = fixture["request"]
    return ({**kept, **fixture["refused_attempts"][0]}, kept,
            fixture["anthropic_beta"].split(","))


async def _post(app, body: dict[str, Any], betas: list[str]):
    """As Claude Code sends it: streamed (the SDK refuses 32,000 output tokens unstreamed)."""
    kwargs = {k: v for k, v in body.items() if k != "stream"}
    async with app.anthropic.beta.messages.stream(**kwargs, betas=betas) as events:
        return await events.get_final_message()


async def _count(app, body: dict[str, Any], betas: list[str], **changes: Any) -> int:
    fields = {k: body[k] for k in ("model", "messages", "system", "tools", "thinking")}
    counted = await app.anthropic.beta.messages.count_tokens(**fields | changes, betas=betas)
    return counted.input_tokens


async def test_recorded_newest_claude_code_first_request_is_refused_only_for_its_system_message(
        scripted_app):
    first, again, betas = recorded()
    app = await scripted_app(BIG, model=again["model"])
    with pytest.raises(anthropic.BadRequestError) as info:
        await _post(app, first, betas)
    # the wording Claude Code retries on at once, without the message
    assert info.value.body["error"]["message"] == SYSTEM_ROLE_MESSAGE
    assert info.value.body["b3os"]["param"] == "messages[1].role"
    reply = await _post(app, again, betas)
    limit = (await app.anthropic.models.retrieve(app.model)).max_tokens
    assert again["max_tokens"] == 32000 > limit
    assert reply.stop_reason == "max_tokens"
    assert reply.usage.output_tokens == limit          # 32,000 lowered to the model's limit
    thinking, text = reply.content                     # the reasoning, then the answer
    assert thinking.type == "thinking" and thinking.thinking == "" and thinking.signature
    assert text.type == "text" and text.text.strip()
    assert await _count(app, again, betas) == reply.usage.input_tokens
    # its one deferred tool (DeferredToolPlaceholder) is left out of the prompt
    listed = [{k: v for k, v in t.items() if k != "defer_loading"} for t in again["tools"]]
    assert await _count(app, again, betas, tools=listed) > reply.usage.input_tokens


async def test_recorded_request_with_display_updates_is_answered_as_omitted(scripted_app):
    # the issue saw 2.1.332 send `display: "updates"` with its beta; this recording has
    # "omitted": the same request, with "updates"
    _, again, betas = recorded()
    app = await scripted_app(BIG, model=again["model"])
    updates = {**again, "thinking": {"type": "adaptive", "display": "updates"}}
    reply = await _post(app, updates, [*betas, "thinking-display-updates-2026-08-18",
                                       "mid-conversation-tool-changes-2026-07-01"])
    thinking, text = reply.content
    assert thinking.type == "thinking" and thinking.thinking == "" and thinking.signature
    assert text.text.strip()


async def test_a_session_of_the_recorded_request_loads_a_tool_through_tool_search(
        scripted_app):
    """The recorded first turn, then ToolSearch called (``caller`` direct) and answered
    with a ``tool_reference`` (the real API's tool-search shape) to a declared deferred
    tool: the model then sees the tool's definition, and calls it."""
    _, again, betas = recorded()
    app = await scripted_app(Script(replies=(
        Reply('<think>The cron tools are loaded.</think>\n<tool_call>\n{"name": "CronList", '
              '"arguments": {}}\n</tool_call>',
              when=When(last_user_contains='{"name": "CronList"'), repeat=True),
        Reply("Done.", repeat=True)), context_window=131072), model=again["model"])
    history = [*again["messages"],
               {"role": "assistant", "content": [
                   {"type": "tool_use", "id": "toolu_ts", "name": "ToolSearch",
                    "input": {"query": "select:CronList"}, "caller": {"type": "direct"}}]},
               {"role": "user", "content": [
                   {"type": "tool_result", "tool_use_id": "toolu_ts",
                    "content": [{"type": "tool_reference", "tool_name": "CronList"}]}]}]
    session = {**again, "tools": [*again["tools"], LAZY], "messages": history}
    reply = await _post(app, session, betas)
    assert reply.stop_reason == "tool_use"
    thinking, call = reply.content
    assert thinking.type == "thinking" and thinking.thinking == ""
    assert (call.type, call.name) == ("tool_use", "CronList")
