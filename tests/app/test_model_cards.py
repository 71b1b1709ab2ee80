"""Model listings say what the model and its engine really do."""

from __future__ import annotations

import openai
import pytest

from b3os_infer.engine.scripted.script import Reply, Script
from b3os_infer.node.cards import max_output_tokens

pytestmark = pytest.mark.anyio


async def test_a_scripted_model_lists_its_id_as_name_no_structured_output_and_its_formats(
        scripted_app):
    native = await scripted_app(Script((Reply("x"),), context_window=4096))
    plain = await scripted_app(Script((Reply("x"),), template="plain"), model="b3os/plain")
    entry = (await native.http.get("/models", headers={"x-api-key": native.key})).json()
    info = await plain.anthropic.models.retrieve("b3os/plain")
    (card,) = entry["data"]
    assert card["b3os"]["display_name"] == "b3os/scripted"
    assert card["b3os"]["capabilities"] == {
        "tools": True, "thinking": True, "vision": False, "structured_output": False,
        "tool_calling": "native", "reasoning_format": "native"}
    assert card["b3os"]["max_output_tokens"] == 2048   # half of a 4096 window
    assert card["b3os"]["device"] is None   # a scripted engine runs on no device we know
    assert plain.engine.info.context_window == 8192 and info.max_tokens == 8192 // 2
    assert (await plain.openai.models.retrieve("b3os/plain")).model_extra["b3os"][
        "capabilities"]["tool_calling"] == "generic"


async def test_structured_output_is_refused_where_the_engine_applies_no_grammar(scripted_app):
    app = await scripted_app(Reply("{}", repeat=True))
    with pytest.raises(openai.BadRequestError) as refused:
        await app.openai.chat.completions.create(
            model=app.model, messages=[{"role": "user", "content": "json"}],
            response_format={"type": "json_schema", "json_schema": {
                "name": "x", "schema": {"type": "object"}}})
    assert refused.value.status_code == 400
    assert "engine applies no grammars" in refused.value.message


def test_the_output_limit_is_8192_or_half_the_window_unless_configured():
    assert max_output_tokens(32768) == 8192
    assert max_output_tokens(4096) == 2048
    assert max_output_tokens(32768, configured=20000) == 20000
    assert max_output_tokens(4096, configured=20000) == 4095
