"""The output cap, one decision on every API (node/output_cap.py): a cap above what the
model can write is lowered to it, a request without one gets the model's default output
cap, and each API's policy row says which field asks and what its absence means."""

from __future__ import annotations

import pytest

from b3os_infer.anthropic import policy as anthropic_policy
from b3os_infer.anthropic.envelope import PARAM_NAMES
from b3os_infer.engine.scripted.script import Reply
from b3os_infer.errors import NEUTRAL_PARAMS
from b3os_infer.openai_api import policy as openai_policy
from b3os_infer.openai_api.envelope import CHAT_PARAMS, COMPLETIONS_PARAMS, RESPONSES_PARAMS
from b3os_infer.openai_api.responses import policy as responses_policy

pytestmark = pytest.mark.anyio

LONG = Reply(" ".join(["word"] * 6000), repeat=True)
USER = [{"role": "user", "content": "Write a lot"}]
LIMIT = 4096   # the scripted model's window is 8,192: half of it


async def _written(app, api: str, **cap) -> tuple[int, str]:
    """Output tokens and the stop reason of one reply to ``api`` with ``cap``."""
    if api == "messages":
        message = await app.anthropic.messages.create(model=app.model, messages=USER,
                                                      timeout=60, **cap)
        return message.usage.output_tokens, message.stop_reason
    if api == "chat":
        chat = await app.openai.chat.completions.create(model=app.model, messages=USER, **cap)
        return chat.usage.completion_tokens, chat.choices[0].finish_reason
    if api == "responses":
        response = await app.openai.responses.create(model=app.model, input="Write", **cap)
        return response.usage.output_tokens, response.incomplete_details.reason
    text = await app.openai.completions.create(model=app.model, prompt="Write", **cap)
    return text.usage.completion_tokens, text.choices[0].finish_reason


@pytest.mark.parametrize("api, field, stop", [
    ("messages", "max_tokens", "max_tokens"), ("chat", "max_completion_tokens", "length"),
    ("chat", "max_tokens", "length"), ("responses", "max_output_tokens", "max_output_tokens"),
    ("completions", "max_tokens", "length")])
async def test_a_cap_above_what_the_model_can_write_is_lowered_to_it_on_every_api(
        scripted_app, api, field, stop):
    app = await scripted_app(LONG)
    listed = await app.openai.models.retrieve(app.model)
    assert listed.model_extra["b3os"]["max_output_tokens"] == LIMIT
    assert await _written(app, api, **{field: 128000}) == (LIMIT, stop)


@pytest.mark.parametrize("api, stop", [("chat", "length"),
                                       ("responses", "max_output_tokens")])
async def test_a_request_without_a_cap_may_write_all_the_model_can(scripted_app, api, stop):
    # no more 1,024-token default: Codex sends no cap, and its turns were cut there
    app = await scripted_app(LONG)
    assert await _written(app, api) == (LIMIT, stop)


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_the_operators_default_output_tokens_caps_a_request_without_one(
        scripted_app, api):
    app = await scripted_app(LONG, default_output_tokens=300)
    assert (await _written(app, api))[0] == 300
    asked = {"chat": "max_completion_tokens", "responses": "max_output_tokens"}[api]
    assert (await _written(app, api, **{asked: 500}))[0] == 500   # a client's own cap wins


async def test_legacy_completions_keep_openais_default_of_16(scripted_app):
    app = await scripted_app(LONG, default_output_tokens=300)
    assert await _written(app, "completions") == (16, "length")


def test_each_apis_policy_row_names_its_field_and_only_completions_has_a_default():
    rows = {"messages": anthropic_policy.OUTPUT_CAP, "chat": openai_policy.CHAT_OUTPUT_CAP,
            "responses": responses_policy.OUTPUT_CAP,
            "completions": openai_policy.COMPLETIONS_OUTPUT_CAP}
    assert {api: (row.field, row.default) for api, row in rows.items()} == {
        "messages": ("max_tokens", None), "chat": ("max_completion_tokens", None),
        "responses": ("max_output_tokens", None), "completions": ("max_tokens", 16)}


def test_every_api_names_each_neutral_param_it_can_meet():
    for names in (PARAM_NAMES, CHAT_PARAMS, RESPONSES_PARAMS):
        assert set(names) == set(NEUTRAL_PARAMS)
    # a raw completion has no output schema to refuse
    assert set(COMPLETIONS_PARAMS) == set(NEUTRAL_PARAMS) - {"output_schema"}
