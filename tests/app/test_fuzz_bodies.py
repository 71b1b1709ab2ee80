"""Over 10,000 generated and mutated bodies across the POST routes: never a 5xx.

The bodies (``support/fuzz_bodies.py``) are drawn by hypothesis with a fixed derandomized
seed, so every run sends the same ones. Each answer is checked: a status under 500, an
error in the envelope of the route's API with the type its status calls for, a stream
without a server error event; and for a sample of the refused bodies that are plain JSON, the
official SDK (sending the same object) raises the exception class of that status.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

import anthropic
import httpx
import openai
import pytest
from hypothesis import HealthCheck, Phase, given, settings

from b3os_infer.config import default_embedding
from b3os_infer.edge.admission.limits import LimitsConfig
from b3os_infer.engine.scripted.script import Reply
from support.fuzz_bodies import Case, Mutation, bodies, mutations

pytestmark = pytest.mark.anyio

MUTATIONS = 520           # each applied to the 19 seeds; with the sweep, over 10,000 bodies
CONCURRENCY = 32
SDK_SAMPLE = 300
# no per-minute limit in the way: every body reaches the route
UNLIMITED = LimitsConfig(default={"requests_per_minute": 10 ** 9,
                                  "input_tokens_per_minute": 10 ** 12,
                                  "output_tokens_per_minute": 10 ** 12})
SERVER_ERRORS = ('"api_error"', '"server_error"', '"internal_error"')
ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                   403: "permission_error", 404: "not_found_error", 405: "invalid_request_error",
                   413: "request_too_large", 429: "rate_limit_error", 529: "overloaded_error"}
OPENAI_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                403: "permission_error", 404: "not_found_error", 405: "invalid_request_error",
                413: "invalid_request_error", 429: "rate_limit_error"}


def _draw(count: int) -> list[Mutation]:
    drawn: list[Mutation] = []

    @settings(max_examples=count, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    @given(mutations)
    def collect(mutation: Mutation) -> None:
        drawn.append(mutation)

    collect()
    return drawn


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    return bodies(_draw(MUTATIONS))


def _error_problem(case: Case, status: int, body: Any) -> str | None:
    """What is wrong with an error answer, or None when it is in the route's shape."""
    if case.api == "anthropic":
        error = body.get("error") if isinstance(body, dict) else None
        if body.get("type") != "error" or not isinstance(error, dict):
            return "not an Anthropic error envelope"
        expected = ANTHROPIC_TYPES.get(status)
    else:
        error = body.get("error") if isinstance(body, dict) else None
        if "type" in body or not isinstance(error, dict) or "code" not in error:
            return "not an OpenAI error envelope"
        expected = OPENAI_TYPES.get(status)
    if not isinstance(error.get("message"), str) or not error["message"]:
        return "no message"
    if error.get("type") != expected:
        return f"type {error.get('type')!r} for {status}"
    return None


def _problem(case: Case, response: httpx.Response) -> str | None:
    if response.status_code >= 500:
        return f"{response.status_code}"
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        # a client's mistake found once the stream began may end it as an error event;
        # a failure of the server's own may not
        failed = any(kind in response.text for kind in SERVER_ERRORS)
        return "a server error in a stream" if failed else None
    try:
        body = response.json()
    except ValueError:
        return "a body that is not JSON"
    if response.status_code >= 400:
        return _error_problem(case, response.status_code, body)
    return None


async def _send_all(http: httpx.AsyncClient, key: str, cases: list[Case]
                    ) -> list[httpx.Response]:
    headers = {"x-api-key": key, "authorization": f"Bearer {key}",
               "content-type": "application/json", "anthropic-version": "2023-06-01"}
    answers: list[httpx.Response] = []
    for start in range(0, len(cases), CONCURRENCY):
        batch = cases[start:start + CONCURRENCY]
        answers += await asyncio.gather(*(http.post(c.route, content=c.body, headers=headers)
                                          for c in batch))
    return answers


STATUS_ERRORS = {
    "anthropic": {400: anthropic.BadRequestError, 401: anthropic.AuthenticationError,
                  403: anthropic.PermissionDeniedError, 404: anthropic.NotFoundError,
                  413: anthropic.APIStatusError, 429: anthropic.RateLimitError},
    "openai": {400: openai.BadRequestError, 401: openai.AuthenticationError,
               403: openai.PermissionDeniedError, 404: openai.NotFoundError,
               413: openai.APIStatusError, 429: openai.RateLimitError},
}


async def _sdk_error(app: Any, case: Case) -> Exception | None:
    client = app.anthropic if case.api == "anthropic" else app.openai
    try:
        await client.post(case.route, body=case.sent, cast_to=object)
    except (anthropic.APIStatusError, openai.APIStatusError) as exc:
        return exc
    return None


async def test_fuzzed_bodies_on_every_route_get_no_5xx_and_errors_in_the_routes_shape(
        scripted_app, cases):
    app = await scripted_app(Reply("Hello.", repeat=True), embeddings=[default_embedding()])
    app.edge.limits = UNLIMITED
    assert len(cases) >= 10_000
    answers = await _send_all(app.http, app.key, cases)
    problems = [(c.route, c.mutation, r.status_code, problem, r.text[:200])
                for c, r in zip(cases, answers, strict=True)
                if (problem := _problem(c, r)) is not None]
    assert problems == []
    statuses = Counter(r.status_code for r in answers)
    assert statuses[400] > 5_000 and statuses[200] > 500     # both refusals and answers

    refused = [(c, r) for c, r in zip(cases, answers, strict=True)
               if c.sent is not None and r.status_code >= 400]
    sample = refused[::max(1, len(refused) // SDK_SAMPLE)]
    assert len(sample) >= SDK_SAMPLE * 0.9
    for case, response in sample:
        error = await _sdk_error(app, case)
        expected = STATUS_ERRORS[case.api][response.status_code]
        assert type(error) is expected, (case.route, case.mutation, response.text[:200])
        assert error.status_code == response.status_code
        assert json.loads(error.response.text) == response.json() | (
            {"request_id": error.response.headers["request-id"]}
            if case.api == "anthropic" else {})
