"""The admin API (``edge/admin/api.py``) in process: keys created, listed and revoked over HTTP,
the ledger summed per time bucket, and the admin scope enforced."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import httpx
import pytest

from b3os_infer.engine.scripted.script import Reply

pytestmark = pytest.mark.anyio


async def _admin(scripted_app):
    app = await scripted_app(Reply(text="Hello there", repeat=True))
    assert app.edge is not None
    _, key = app.edge.keys.create("ops", ("admin",))
    return app, {"authorization": f"Bearer {key}"}


async def test_a_created_key_shows_its_secret_once_and_then_authenticates(
        scripted_app) -> None:
    app, admin = await _admin(scripted_app)
    created = await app.http.post("/admin/keys", headers=admin, json={
        "name": "ci", "scopes": ["models:read"], "models": [app.model], "expires": "30d"})
    assert created.status_code == 201
    body = created.json()
    assert body["object"] == "api_key" and body["name"] == "ci" and body["status"] == "active"
    assert body["scopes"] == ["models:read"] and body["models"] == [app.model]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", body["expires_at"])
    assert body["secret"].startswith(f"b3os_{body['id']}_")
    listing = (await app.http.get("/admin/keys", headers=admin)).json()
    # ordered by creation time, to the second: keys made in one second come in any order
    assert sorted(k["name"] for k in listing["data"]) == ["app-tests", "ci", "ops"]
    assert all("secret" not in k and "key_hash" not in k for k in listing["data"])
    models = await app.http.get("/models", headers={"x-api-key": body["secret"]})
    assert models.status_code == 200 and [m["id"] for m in models.json()["data"]] == [app.model]


async def test_a_revoked_key_is_refused_and_listed_as_revoked(
        scripted_app) -> None:
    app, admin = await _admin(scripted_app)
    secret = (await app.http.post("/admin/keys", headers=admin,
                                  json={"name": "gone"})).json()["secret"]
    key_id = secret.split("_")[1]
    revoked = await app.http.delete(f"/admin/keys/{key_id}", headers=admin)
    assert revoked.status_code == 200
    assert revoked.json()["status"] == "revoked" and revoked.json()["revoked_at"]
    refused = await app.http.get("/models", headers={"x-api-key": secret})
    assert refused.status_code == 401
    statuses = {k["id"]: k["status"] for k in
                (await app.http.get("/admin/keys", headers=admin)).json()["data"]}
    assert statuses[key_id] == "revoked"


async def test_revoking_an_unknown_key_is_a_404_naming_it(
        scripted_app) -> None:
    app, admin = await _admin(scripted_app)
    answer = await app.http.delete("/admin/keys/nosuchkey", headers=admin)
    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == "key_not_found"
    assert answer.json()["error"]["param"] == "key_id"


@pytest.mark.parametrize(("body", "param"), [
    ({"name": "x", "scopes": ["root"]}, "scopes[0]"),
    ({"name": "x", "expires": "soon"}, "expires"),
    ({"name": ""}, "name"),
    ({"name": "x", "scopes": []}, "scopes"),
    ({"name": "x", "colour": "red"}, "colour"),
    ({"scopes": ["infer"]}, "name"),
])
async def test_a_bad_key_request_is_a_400_naming_the_field(
        scripted_app, body: dict[str, object], param: str) -> None:
    app, admin = await _admin(scripted_app)
    answer = await app.http.post("/admin/keys", headers=admin, json=body)
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == param
    assert len((await app.http.get("/admin/keys", headers=admin)).json()["data"]) == 2


async def test_admin_routes_need_the_admin_scope(scripted_app) -> None:
    app, _ = await _admin(scripted_app)
    plain = {"authorization": f"Bearer {app.key}"}   # infer + models:read
    for method, path in (("GET", "/admin/keys"), ("POST", "/admin/keys"),
                         ("DELETE", "/admin/keys/x"), ("GET", "/admin/usage")):
        without = await app.http.request(method, path)
        assert without.status_code == 401, path
        lacking = await app.http.request(method, path, headers=plain)
        assert lacking.status_code == 403, path
        assert lacking.json()["error"]["code"] == "missing_scope"


async def test_unknown_admin_routes_and_methods_answer_in_the_openai_envelope(
        scripted_app) -> None:
    app, admin = await _admin(scripted_app)
    missing = await app.http.get("/admin/nothing", headers=admin)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "route_not_found"
    wrong = await app.http.put("/admin/keys", headers=admin)
    assert wrong.status_code == 405 and wrong.json()["error"]["code"] == "method_not_allowed"


async def test_usage_sums_the_ledger_per_bucket_key_and_model(
        scripted_app) -> None:
    app, admin = await _admin(scripted_app)
    for _ in range(2):
        await app.anthropic.messages.create(model=app.model, max_tokens=16,
                                            messages=[{"role": "user", "content": "hi"}])
    await app.openai.chat.completions.create(model=app.model,
                                             messages=[{"role": "user", "content": "hi"}])
    await app.http.get("/models", headers={"x-api-key": "b3os_unknown_key"})
    rows = app.edge.ledger.rows() if app.edge else []
    series = (await app.http.get("/admin/usage?bucket=minute", headers=admin)).json()
    assert series["object"] == "usage.series" and series["bucket"] == "minute"
    key_id = app.key.split("_")[1]
    assert series["keys"] == {key_id: "app-tests"}
    ours = [p for p in series["data"] if p["key_id"] == key_id and p["model"] == app.model]
    assert sum(p["requests"] for p in ours) == 3
    assert sum(p["output_tokens"] for p in ours) == sum(
        r.output_tokens for r in rows if r.key_id == key_id) == 6
    assert sum(p["input_tokens"] for p in ours) == sum(
        r.input_tokens for r in rows if r.key_id == key_id) > 0
    refused = [p for p in series["data"] if p["key_id"] is None]
    assert refused == [{**refused[0], "requests": 1, "errors": 1, "model": ""}]
    for point in series["data"]:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:00Z", point["start"])


async def test_usage_buckets_start_on_the_hour_and_day_and_since_filters(
        scripted_app) -> None:
    app, admin = await _admin(scripted_app)
    await app.openai.chat.completions.create(model=app.model,
                                             messages=[{"role": "user", "content": "hi"}])
    hour = (await app.http.get("/admin/usage?bucket=hour", headers=admin)).json()
    assert {p["start"][13:] for p in hour["data"]} == {":00:00Z"}
    day = (await app.http.get("/admin/usage?bucket=day", headers=admin)).json()
    assert {p["start"][10:] for p in day["data"]} == {"T00:00:00Z"}
    later = datetime.now(UTC).replace(year=datetime.now(UTC).year + 1).isoformat()
    future = await app.http.get("/admin/usage", headers=admin, params={"since": later})
    assert future.json()["data"] == [] and future.json()["bucket"] == "hour"


@pytest.mark.parametrize(("query", "param"), [("bucket=week", "bucket"),
                                              ("since=yesterday", "since")])
async def test_a_bad_usage_query_is_a_400_naming_it(
        scripted_app, query: str, param: str) -> None:
    app, admin = await _admin(scripted_app)
    answer = await app.http.get(f"/admin/usage?{query}", headers=admin)
    assert answer.status_code == 400 and answer.json()["error"]["param"] == param


async def test_admin_calls_take_no_rate_limit_and_write_no_usage_row(
        scripted_app) -> None:
    app, admin = await _admin(scripted_app)
    assert app.edge is not None
    before = len(app.edge.ledger.rows())
    answer = await app.http.get("/admin/keys", headers=admin)
    assert isinstance(answer, httpx.Response) and answer.status_code == 200
    assert not any(h.startswith("x-ratelimit") for h in answer.headers)
    assert len(app.edge.ledger.rows()) == before
