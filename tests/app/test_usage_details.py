"""Usage details both APIs report since 2026: thinking (reasoning) tokens counted apart,
no cache writes, no stop details; and the Models API's capabilities object."""

from __future__ import annotations

import pytest

from b3os_infer.engine.scripted.script import Reply

pytestmark = pytest.mark.anyio

USER = [{"role": "user", "content": "What is the weather in Paris?"}]
# four tokens of reasoning (the close marker among them), then two of answer
THOUGHT = Reply(tokens=("<think>", "It is", " June.", "</think>", "Sunny", "."), repeat=True)
THINKING = {"type": "enabled", "budget_tokens": 1024}


async def test_anthropic_usage_counts_the_thinking_tokens_apart_streamed_and_not(
        scripted_app):
    app = await scripted_app(THOUGHT)
    kwargs = dict(model=app.model, max_tokens=1100, messages=USER, thinking=THINKING)
    whole = await app.anthropic.messages.create(**kwargs)
    assert [b.type for b in whole.content] == ["thinking", "text"]
    assert whole.usage.output_tokens == 6
    assert whole.usage.output_tokens_details.thinking_tokens == 4
    assert whole.usage.cache_creation.ephemeral_5m_input_tokens == 0
    assert whole.usage.cache_creation.ephemeral_1h_input_tokens == 0
    assert whole.stop_details is None
    async with app.anthropic.messages.stream(**kwargs) as stream:
        streamed = await stream.get_final_message()
    assert streamed.usage.output_tokens_details.thinking_tokens == 4
    assert streamed.usage.output_tokens == 6


async def test_a_reply_without_reasoning_has_no_thinking_tokens(scripted_app):
    app = await scripted_app(Reply("Sunny today.", repeat=True))
    whole = await app.anthropic.messages.create(model=app.model, max_tokens=50, messages=USER)
    assert whole.usage.output_tokens_details.thinking_tokens == 0


async def test_openai_usage_counts_the_reasoning_tokens_apart(scripted_app):
    app = await scripted_app(THOUGHT)
    completion = await app.openai.chat.completions.create(
        model=app.model, messages=USER, reasoning_effort="low", max_completion_tokens=600)
    assert completion.choices[0].message.content == "Sunny."
    assert completion.usage.completion_tokens == 6
    assert completion.usage.completion_tokens_details.reasoning_tokens == 4


async def test_the_anthropic_model_info_states_the_models_capabilities(scripted_app):
    app = await scripted_app(Reply("unused", repeat=True))
    info = await app.anthropic.models.retrieve(app.model)
    caps = info.capabilities
    assert info.lifecycle == "active"
    assert caps.thinking.supported and caps.thinking.types.enabled.supported
    assert caps.effort.supported and caps.effort.max.supported
    # the scripted engine applies no grammars and reads no images
    assert not caps.structured_outputs.supported and not caps.image_input.supported
    assert not caps.batch.supported and not caps.server_tools.supported
    assert not caps.citations.supported
    # both context edits are made on the node; compaction is not
    edits = caps.context_management
    assert edits.supported and edits.clear_tool_uses_20250919.supported
    assert edits.clear_thinking_20251015.supported and not edits.compact_20260112.supported


async def test_responses_usage_counts_the_reasoning_tokens_apart(scripted_app):
    app = await scripted_app(THOUGHT)
    response = await app.openai.responses.create(
        model=app.model, input="What is the weather in Paris?", reasoning={"effort": "low"},
        max_output_tokens=600)
    assert response.output_text == "Sunny."
    assert response.usage.output_tokens == 6
    assert response.usage.output_tokens_details.reasoning_tokens == 4
