"""Bodies that are the client's mistake get a 400 in the route's own shape, never a 500."""

from __future__ import annotations

import pytest

from b3os_infer.engine.scripted.script import Reply

pytestmark = pytest.mark.anyio

MODEL = "b3os/scripted"
CHAT = '{"model": "%s", "max_tokens": 8, "messages": [{"role": "user", "content": "%s"}]}'
COUNT = '{"model": "%s", "messages": [{"role": "user", "content": "%s"}]}'
LEGACY = '{"model": "%s", "max_tokens": 8, "prompt": "%s"}'
ROUTES = [("/v1/messages", CHAT, "anthropic"), ("/v1/messages/count_tokens", COUNT, "anthropic"),
          ("/chat/completions", CHAT, "openai"), ("/completions", LEGACY, "openai")]


def error_of(body: dict[str, object], api: str) -> dict[str, object]:
    if api == "anthropic":
        assert body["type"] == "error"
        error = body["error"]
        assert isinstance(error, dict) and error["type"] == "invalid_request_error"
        return error
    error = body["error"]
    assert isinstance(error, dict) and error["type"] == "invalid_request_error"
    return error


@pytest.mark.parametrize("route, template, api", ROUTES)
@pytest.mark.parametrize("where", ["model", "text"])
async def test_a_lone_surrogate_escape_is_a_400_in_the_routes_shape(scripted_app, route,
                                                                    template, api, where):
    app = await scripted_app(Reply("Hi.", repeat=True))
    model, text = (r"\udcff", "hello") if where == "model" else (MODEL, r"a \udcff b")
    response = await app.http.post(route, content=template % (model, text),
                                   headers={"x-api-key": app.key,
                                            "content-type": "application/json"})
    assert response.status_code == 400, response.text
    assert "surrogate" in str(error_of(response.json(), api)["message"])


@pytest.mark.parametrize("route, template, api", ROUTES)
async def test_a_surrogate_pair_is_one_character_and_is_served(scripted_app, route, template,
                                                               api):
    app = await scripted_app(Reply("Hi.", repeat=True))
    response = await app.http.post(route, content=template % (MODEL, r"smile \ud83d\ude00"),
                                   headers={"x-api-key": app.key,
                                            "content-type": "application/json"})
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("route, template, api", ROUTES)
async def test_a_truncated_body_with_a_long_model_name_is_a_400(scripted_app, route, template,
                                                                api):
    app = await scripted_app(Reply("Hi.", repeat=True))
    body = (template % ("m" * 5000, "hello"))[:4000]
    response = await app.http.post(route, content=body,
                                   headers={"x-api-key": app.key,
                                            "content-type": "application/json"})
    assert response.status_code == 400, response.text
    assert "not valid JSON" in str(error_of(response.json(), api)["message"])


# Found by the fuzz test (docs/reliability.md): each was a 500 before.
HOSTILE = [("deep nesting", b'{"model": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
            "nested too deeply"),
           ("a 5,000-digit integer", b'{"model": "m", "max_tokens": ' + b"9" * 5000 + b"}",
            "not valid JSON"),
           ("a surrogate in UTF-8 bytes", b'{"model": "b3os/s\xed\xa0\x80ripted"}',
            "not valid UTF-8"),
           ("NaN", b'{"model": "m", "temperature": NaN}', "NaN is no JSON number"),
           ("1e999", b'{"model": "m", "temperature": 1e999}', "too large for a double")]


@pytest.mark.parametrize("route, template, api", ROUTES)
@pytest.mark.parametrize("what, body, words", HOSTILE, ids=[h[0] for h in HOSTILE])
async def test_hostile_json_is_a_400_in_the_routes_shape(scripted_app, route, template, api,
                                                         what, body, words):
    app = await scripted_app(Reply("Hi.", repeat=True))
    response = await app.http.post(route, content=body,
                                   headers={"x-api-key": app.key,
                                            "content-type": "application/json"})
    assert response.status_code == 400, response.text
    assert words in str(error_of(response.json(), api)["message"])


@pytest.mark.parametrize("arguments", ["[" * 5000, "1" * 5000],
                         ids=["deep nesting", "5,000 digits"])
async def test_hostile_tool_call_arguments_are_a_400_naming_them(scripted_app, arguments):
    app = await scripted_app(Reply("Hi.", repeat=True))
    messages = [{"role": "user", "content": "weather?"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c1", "type": "function",
                     "function": {"name": "get_weather", "arguments": arguments}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "18 C"}]
    chat = await app.http.post("/chat/completions", json={"model": MODEL, "messages": messages},
                               headers={"authorization": f"Bearer {app.key}"})
    items = [{"type": "function_call", "call_id": "c1", "name": "get_weather",
              "arguments": arguments},
             {"type": "function_call_output", "call_id": "c1", "output": "18 C"}]
    responses = await app.http.post("/responses", json={"model": MODEL, "input": items},
                                    headers={"authorization": f"Bearer {app.key}"})
    assert (chat.status_code, responses.status_code) == (400, 400)
    param = error_of(chat.json(), "openai")["param"]
    assert param == "messages[1].tool_calls[0].function.arguments"
    assert "arguments" in str(error_of(responses.json(), "openai")["param"])
