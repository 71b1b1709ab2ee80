"""Bodies that are the client's mistake get a 400 in the route's own shape, never a 500."""

from __future__ import annotations

import pytest

from b3os_infer.engine.script import Reply

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
