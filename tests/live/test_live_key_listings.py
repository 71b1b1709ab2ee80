"""The model listings of the live server show only the models a key may use."""

from __future__ import annotations

import httpx

from support.servers import cli

MODEL = "b3os/smollm2-135m-instruct"


def test_listings_show_only_the_models_a_key_may_use(live):
    other = cli(live.home, "keys", "create", "--name", "other-model", "--model", "b3os/other")
    key = other.stdout.strip().splitlines()[-1]
    headers = {"x-api-key": key}
    openai_list = httpx.get(live.base_url + "/models", headers=headers).json()
    anthropic_list = httpx.get(live.base_url + "/v1/models", headers=headers).json()
    assert openai_list["data"] == [] and anthropic_list["data"] == []
    mine = cli(live.home, "keys", "create", "--name", "this-model", "--model", MODEL)
    own = httpx.get(live.base_url + "/models",
                    headers={"x-api-key": mine.stdout.strip().splitlines()[-1]}).json()
    assert [m["id"] for m in own["data"]] == [MODEL]
