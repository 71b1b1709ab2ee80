"""Context editing (`context_management`, beta `context-management-2025-06-27`) through the
official SDK: old tool results cleared and thinking of earlier turns removed before the
prompt is rendered, what the reply's `applied_edits` and count_tokens report, and bad
shapes refused by their paths."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from b3os_infer.engine.scripted.script import Reply, Script
from b3os_infer.node.context_edits import CLEARED_RESULT

pytestmark = pytest.mark.anyio

BETAS = ["context-management-2025-06-27"]
READ = {"name": "Read", "description": "Read a file",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}
GREP = {"name": "Grep", "description": "Search files",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}
TOOLS = [READ, GREP]
ASK = {"role": "user", "content": "Read the files, then sum it up."}


def _result(i: int) -> str:
    return f"contents of file {i}: " + f"line {i} of a long file. " * 30


def _tool_session(names: list[str]) -> list[dict[str, Any]]:
    """The model called ``names`` one by one; each call answered with a long result."""
    messages: list[dict[str, Any]] = [ASK]
    for i, name in enumerate(names):
        messages.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"toolu_{i}", "name": name,
             "input": {"path": f"src/file_{i}.py"}}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": _result(i)}]})
    return messages


def _clear_tool_uses(**config: Any) -> dict[str, Any]:
    return {"edits": [{"type": "clear_tool_uses_20250919",
                       "trigger": {"type": "input_tokens", "value": 100}, **config}]}


async def _create(app, stream: bool, **kwargs: Any):
    kwargs = {"model": app.model, "max_tokens": 50, "betas": BETAS, "tools": TOOLS, **kwargs}
    if not stream:
        return await app.anthropic.beta.messages.create(**kwargs)
    async with app.anthropic.beta.messages.stream(**kwargs) as events:
        return await events.get_final_message()


async def _count(app, **kwargs: Any):
    return await app.anthropic.beta.messages.count_tokens(
        model=app.model, betas=BETAS, tools=TOOLS, **kwargs)


def _prompt(app) -> str:
    return app.engine.received[-1].text


# ---- clear_tool_uses_20250919 ----------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_tool_results_beyond_keep_are_replaced_and_the_reply_says_how_many_and_tokens(
        scripted_app, stream):
    app = await scripted_app(Reply("Done.", repeat=True))
    messages = _tool_session(["Read"] * 5)
    unedited = (await _count(app, messages=messages)).input_tokens
    edits = _clear_tool_uses(keep={"type": "tool_uses", "value": 2})
    reply = await _create(app, stream, messages=messages, context_management=edits)
    [applied] = reply.context_management.applied_edits
    assert applied.type == "clear_tool_uses_20250919"
    assert applied.cleared_tool_uses == 3
    assert applied.cleared_input_tokens == unedited - reply.usage.input_tokens > 0
    prompt = _prompt(app)
    assert prompt.count(CLEARED_RESULT) == 3
    assert all(_result(i) not in prompt for i in range(3))
    assert all(_result(i) in prompt for i in (3, 4))
    # the calls themselves stay, inputs and all
    assert all(f"src/file_{i}.py" in prompt for i in range(5))


async def test_a_session_past_the_window_goes_on_once_old_results_are_cleared(scripted_app):
    app = await scripted_app(Script(replies=(Reply("Done.", repeat=True),),
                                    context_window=2500))
    messages = _tool_session(["Read"] * 5)
    assert (await _count(app, messages=messages)).input_tokens > 2500
    with pytest.raises(anthropic.BadRequestError) as info:
        await _create(app, False, messages=messages)
    assert info.value.body["b3os"]["code"] == "context_length_exceeded"
    edits = _clear_tool_uses(trigger={"type": "input_tokens", "value": 2000},
                             keep={"type": "tool_uses", "value": 1})
    reply = await _create(app, False, messages=messages, context_management=edits)
    assert reply.content[0].text == "Done."
    assert reply.usage.input_tokens < 2500


async def test_stream_and_non_stream_report_the_same_edits(scripted_app):
    app = await scripted_app(Reply("Done.", repeat=True))
    kwargs = {"messages": _tool_session(["Read"] * 4),
              "context_management": _clear_tool_uses(keep={"type": "tool_uses", "value": 1})}
    whole = await _create(app, False, **kwargs)
    streamed = await _create(app, True, **kwargs)
    assert whole.context_management == streamed.context_management
    assert whole.context_management.applied_edits[0].cleared_tool_uses == 3
    assert whole.usage.input_tokens == streamed.usage.input_tokens


async def test_count_tokens_counts_the_edited_prompt_and_reports_the_original(scripted_app):
    app = await scripted_app(Reply("Done.", repeat=True))
    messages = _tool_session(["Read"] * 5)
    edits = _clear_tool_uses()   # keep: 3 by default
    plain = await _count(app, messages=messages)
    counted = await _count(app, messages=messages, context_management=edits)
    assert plain.context_management is None
    assert counted.context_management.original_input_tokens == plain.input_tokens
    assert counted.input_tokens < plain.input_tokens
    reply = await _create(app, False, messages=messages, context_management=edits)
    assert reply.usage.input_tokens == counted.input_tokens
    assert reply.context_management.applied_edits[0].cleared_tool_uses == 2


async def test_excluded_tools_keep_their_results(scripted_app):
    app = await scripted_app(Reply("Done.", repeat=True))
    messages = _tool_session(["Read", "Grep", "Read", "Grep", "Read"])
    edits = _clear_tool_uses(keep={"type": "tool_uses", "value": 1}, exclude_tools=["Grep"])
    reply = await _create(app, False, messages=messages, context_management=edits)
    assert reply.context_management.applied_edits[0].cleared_tool_uses == 2   # Reads 0, 2
    prompt = _prompt(app)
    assert _result(0) not in prompt and _result(2) not in prompt
    assert all(_result(i) in prompt for i in (1, 3, 4))


async def test_clear_at_least_not_met_clears_nothing(scripted_app):
    app = await scripted_app(Reply("Done.", repeat=True))
    messages = _tool_session(["Read"] * 5)
    unedited = (await _count(app, messages=messages)).input_tokens
    edits = _clear_tool_uses(keep={"type": "tool_uses", "value": 1},
                             clear_at_least={"type": "input_tokens", "value": 1_000_000})
    reply = await _create(app, False, messages=messages, context_management=edits)
    assert reply.context_management.applied_edits == []
    assert reply.usage.input_tokens == unedited
    assert CLEARED_RESULT not in _prompt(app)
    counted = await _count(app, messages=messages, context_management=edits)
    assert counted.input_tokens == counted.context_management.original_input_tokens == unedited


async def test_below_the_default_trigger_of_100000_tokens_nothing_is_cleared(scripted_app):
    app = await scripted_app(Reply("Done.", repeat=True))
    edits = {"edits": [{"type": "clear_tool_uses_20250919"}]}
    reply = await _create(app, False, messages=_tool_session(["Read"] * 5),
                          context_management=edits)
    assert reply.context_management.applied_edits == []
    assert CLEARED_RESULT not in _prompt(app)


@pytest.mark.parametrize(("trigger", "cleared"), [(4, 2), (5, 0)])
async def test_a_tool_uses_trigger_clears_only_past_that_many_uses(scripted_app, trigger,
                                                                   cleared):
    app = await scripted_app(Reply("Done.", repeat=True))
    edits = {"edits": [{"type": "clear_tool_uses_20250919",
                        "trigger": {"type": "tool_uses", "value": trigger}}]}
    reply = await _create(app, False, messages=_tool_session(["Read"] * 5),
                          context_management=edits)
    assert [e.cleared_tool_uses for e in reply.context_management.applied_edits] == \
        ([cleared] if cleared else [])
    assert _prompt(app).count(CLEARED_RESULT) == cleared


@pytest.mark.parametrize(("inputs", "cleared_paths"), [(True, {0, 1, 2}), (["Grep"], {1})])
async def test_clear_tool_inputs_empties_the_inputs_of_the_cleared_calls(scripted_app, inputs,
                                                                          cleared_paths):
    app = await scripted_app(Reply("Done.", repeat=True))
    messages = _tool_session(["Read", "Grep", "Read", "Grep", "Read"])
    edits = _clear_tool_uses(keep={"type": "tool_uses", "value": 2}, clear_tool_inputs=inputs)
    reply = await _create(app, False, messages=messages, context_management=edits)
    assert reply.context_management.applied_edits[0].cleared_tool_uses == 3
    prompt = _prompt(app)
    assert {i for i in range(5) if f"src/file_{i}.py" not in prompt} == cleared_paths


# ---- clear_thinking_20251015 -----------------------------------------------------------


def _thinking_session(app) -> list[dict[str, Any]]:
    """Three assistant turns with signed thinking; the first one's tool loop thinks twice."""
    signer = app.registry.get(app.model).signer

    def thought(text: str) -> dict[str, Any]:
        return {"type": "thinking", "thinking": text, "signature": signer.sign(text)}

    return [
        ASK,
        {"role": "assistant", "content": [
            thought("ponder A"), {"type": "tool_use", "id": "toolu_a", "name": "Read",
                                  "input": {"path": "a.py"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": _result(9)}]},
        {"role": "assistant", "content": [thought("ponder B"), {"type": "text",
                                                                "text": "It is long."}]},
        {"role": "user", "content": "And then?"},
        {"role": "assistant", "content": [thought("ponder C"), {"type": "text",
                                                                "text": "Nothing else."}]},
        {"role": "user", "content": "Sure?"},
        {"role": "assistant", "content": [thought("ponder D"), {"type": "text",
                                                                "text": "Yes."}]},
        {"role": "user", "content": "Thanks."},
    ]


THINKING = {"type": "enabled", "budget_tokens": 1024}


@pytest.mark.parametrize("stream", [False, True])
async def test_thinking_of_turns_beyond_keep_is_removed_and_reported(scripted_app, stream):
    app = await scripted_app(Reply("You are welcome.", repeat=True))
    messages = _thinking_session(app)
    unedited = (await _count(app, messages=messages, thinking=THINKING)).input_tokens
    edits = {"edits": [{"type": "clear_thinking_20251015",
                        "keep": {"type": "thinking_turns", "value": 1}}]}
    reply = await _create(app, stream, max_tokens=2048, messages=messages, thinking=THINKING,
                          context_management=edits)
    [applied] = reply.context_management.applied_edits
    assert applied.type == "clear_thinking_20251015"
    assert applied.cleared_thinking_turns == 2   # the tool loop's two blocks are one turn
    assert applied.cleared_input_tokens == unedited - reply.usage.input_tokens > 0
    prompt = _prompt(app)
    assert [t in prompt for t in ("ponder A", "ponder B", "ponder C", "ponder D")] == \
        [False, False, False, True]
    counted = await _count(app, messages=messages, thinking=THINKING,
                           context_management=edits)
    assert counted.input_tokens == reply.usage.input_tokens
    assert counted.context_management.original_input_tokens == unedited


@pytest.mark.parametrize("keep", ["all", {"type": "all"}])
async def test_thinking_kept_with_all_is_rendered_and_nothing_is_reported(scripted_app, keep):
    app = await scripted_app(Reply("You are welcome.", repeat=True))
    edits = {"edits": [{"type": "clear_thinking_20251015", "keep": keep}]}
    reply = await _create(app, False, max_tokens=2048, messages=_thinking_session(app),
                          thinking=THINKING, context_management=edits)
    assert reply.context_management.applied_edits == []
    assert all(f"ponder {x}" in _prompt(app) for x in "ABCD")


async def test_both_edits_in_one_request_are_reported_in_order(scripted_app):
    app = await scripted_app(Reply("You are welcome.", repeat=True))
    edits = {"edits": [
        {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 0}},
        {"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 0},
         "keep": {"type": "tool_uses", "value": 0}}]}
    reply = await _create(app, False, max_tokens=2048, messages=_thinking_session(app),
                          thinking=THINKING, context_management=edits)
    kinds = [(e.type, getattr(e, "cleared_thinking_turns", None) or e.cleared_tool_uses)
             for e in reply.context_management.applied_edits]
    assert kinds == [("clear_thinking_20251015", 3), ("clear_tool_uses_20250919", 1)]
    assert "ponder" not in _prompt(app) and CLEARED_RESULT in _prompt(app)


async def test_without_context_management_the_reply_carries_none(scripted_app):
    app = await scripted_app(Reply("Done.", repeat=True))
    reply = await _create(app, True, messages=_tool_session(["Read"] * 5))
    assert reply.context_management is None
    assert CLEARED_RESULT not in _prompt(app)


# ---- bad shapes ------------------------------------------------------------------------


@pytest.mark.parametrize(("edit", "param", "code"), [
    ({"type": "clear_thinking_20251015", "keep": {"type": "turns", "value": 1}},
     "context_management.edits[0].keep.type", "invalid_request"),
    ({"type": "clear_thinking_20251015", "keep": 2},
     "context_management.edits[0].keep", "invalid_request"),
    ({"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns"}},
     "context_management.edits[0].keep.value", "invalid_request"),
    ({"type": "clear_tool_uses_20250919", "keep": {"type": "tool_uses", "value": -1}},
     "context_management.edits[0].keep.value", "invalid_request"),
    ({"type": "clear_tool_uses_20250919", "trigger": {"type": "messages", "value": 3}},
     "context_management.edits[0].trigger.type", "invalid_request"),
    ({"type": "clear_tool_uses_20250919", "clear_at_least": 5000},
     "context_management.edits[0].clear_at_least", "invalid_request"),
    ({"type": "clear_tool_uses_20250919", "exclude_tools": "Read"},
     "context_management.edits[0].exclude_tools", "invalid_request"),
    ({"type": "clear_everything_20990101"}, "context_management.edits[0]",
     "unsupported_parameter"),
    ({"type": "compact_20260112"}, "context_management.edits[0]", "unsupported_parameter"),
    ({"type": "clear_thinking_20251015", "keep": "all", "when": "always"},
     "context_management.edits[0].when", "unsupported_parameter"),
])
@pytest.mark.parametrize("route", ["create", "count_tokens"])
async def test_a_bad_edit_is_a_400_naming_its_path(scripted_app, edit, param, code, route):
    app = await scripted_app(Reply("Done.", repeat=True))
    kwargs = {"messages": [ASK], "context_management": {"edits": [edit]}}
    with pytest.raises(anthropic.BadRequestError) as info:
        if route == "create":
            await _create(app, False, **kwargs)
        else:
            await _count(app, **kwargs)
    body = info.value.body
    assert body["error"]["type"] == "invalid_request_error"
    assert body["b3os"] == {"code": code, "param": param}
    assert body["error"]["message"].startswith(param + ":")


async def test_a_clearing_that_would_lengthen_the_prompt_is_not_made(scripted_app):
    app = await scripted_app(Reply("Done.", repeat=True))
    short = [ASK, {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_0", "name": "Read", "input": {"path": "a.py"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_0", "content": "ok"}]}]
    edits = {"edits": [{"type": "clear_tool_uses_20250919",
                        "trigger": {"type": "tool_uses", "value": 0},
                        "keep": {"type": "tool_uses", "value": 0}}]}
    reply = await _create(app, False, messages=short, context_management=edits)
    assert len("ok") < len(CLEARED_RESULT)
    assert reply.context_management.applied_edits == []
    assert CLEARED_RESULT not in _prompt(app)


async def test_a_clearing_ends_the_cached_prefix_at_the_first_cleared_result(scripted_app):
    app = await scripted_app(Script(replies=(Reply("Done.", repeat=True),), prefix_cache=True))
    messages = _tool_session(["Read"] * 5)
    first = await _create(app, False, messages=messages)
    whole = first.usage.input_tokens + first.usage.cache_read_input_tokens
    edits = _clear_tool_uses(keep={"type": "tool_uses", "value": 2})
    edited = await _create(app, False, messages=messages, context_management=edits)
    reused = edited.usage.cache_read_input_tokens
    prompt = _prompt(app)
    # one token a byte here: the reuse stops where the first cleared result begins
    assert 0 < reused <= prompt.index(CLEARED_RESULT) < whole
    assert edited.usage.input_tokens == len(app.engine.received[-1].request.prompt) - reused


async def test_the_cache_diagnosis_names_a_new_clearing_with_the_tokens_it_cost(scripted_app):
    app = await scripted_app(Script(replies=(Reply("Done.", repeat=True),), prefix_cache=True))
    edits = _clear_tool_uses(keep={"type": "tool_uses", "value": 2})
    first = await _create(app, False, messages=_tool_session(["Read"] * 4),
                          context_management=edits, diagnostics={"previous_message_id": None})
    assert first.context_management.applied_edits[0].cleared_tool_uses == 2
    # one more tool use: the edit now clears the third result too, inside the cached prefix
    later = _tool_session(["Read"] * 5)
    second = await _create(app, False, messages=later, context_management=edits,
                           diagnostics={"previous_message_id": first.id})
    assert second.context_management.applied_edits[0].cleared_tool_uses == 3
    miss = second.diagnostics.cache_miss_reason
    assert miss.type == "messages_changed"
    whole_first = first.usage.input_tokens + first.usage.cache_read_input_tokens
    assert miss.cache_missed_input_tokens == \
        whole_first - second.usage.cache_read_input_tokens > 0
