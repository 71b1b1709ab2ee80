"""A node's standard face (``[node] standard_api = true``): the paths, credential and
health probe that standard routers (vllm-router, SGLang's gateway, llm-d) expect of a vLLM
server, in front of the node's own routes.

- ``/v1/chat/completions``, ``/v1/completions``, ``/v1/responses…``, ``/v1/models…``,
  ``/v1/embeddings`` and ``/v1/messages…`` are the node's routes under ``/v1/infer``;
  ``/tokenize`` is vLLM's, served for routers that tokenize before they pick a worker.
- The node secret is also taken as ``Authorization: Bearer <secret>``, as vLLM takes its
  ``--api-key``; anything else is refused as before (401 ``not_from_edge``).
- ``GET /health`` answers as ``/healthz`` does (200 while every model is healthy, else
  503), and ``GET /metrics`` as always: both to anyone, as vLLM's do, since routers probe
  and scrape them without credentials.
- Fields that vLLM's and SGLang's routers add to every request with their neutral values
  (``ignore_eos: false``, ``skip_special_tokens: true``, …) are dropped; the same fields
  with any other value are refused by the field policy, as from any client.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ...http.formats import BASE
from ..scrape import METRICS_PATH
from .protocol import SECRET_HEADER, secret_matches

# standard prefix -> the node's own; a prefix matches itself and what follows a "/"
_PATHS = {
    "/v1/chat/completions": BASE + "/chat/completions",
    "/v1/completions": BASE + "/completions",
    "/v1/responses": BASE + "/responses",
    "/v1/models": BASE + "/models",
    "/v1/embeddings": BASE + "/embeddings",
    "/v1/messages": BASE + "/v1/messages",
    "/tokenize": BASE + "/tokenize",     # vLLM's, for routers (openai_api/tokenize.py)
}
HEALTH_PATH = "/health"
# what routers add to each request when the client did not say; none changes the answer
ROUTER_DEFAULTS: dict[str, Any] = {
    "no_stop_trim": False, "ignore_eos": False, "continue_final_message": False,
    "skip_special_tokens": True, "separate_reasoning": True, "stream_reasoning": True,
    "return_hidden_states": False, "include_reasoning": True,
}


def own_path(path: str) -> str | None:
    """The node's path for a standard one, or None when it is not one."""
    for standard, own in _PATHS.items():
        if path == standard or path.startswith(standard + "/"):
            return own + path[len(standard):]
    if path == HEALTH_PATH:
        return "/healthz"
    return METRICS_PATH if path == METRICS_PATH else None


def without_router_defaults(body: bytes) -> bytes:
    """The body less the fields a router added with their neutral values; a body that is
    not a JSON object is left for the route to refuse."""
    try:
        data = json.loads(body)
    except ValueError:
        return body
    if not isinstance(data, dict):
        return body
    kept = {k: v for k, v in data.items()
            if not (k in ROUTER_DEFAULTS and v == ROUTER_DEFAULTS[k] and type(v) is bool)}
    return body if len(kept) == len(data) else json.dumps(kept).encode()


class StandardApi:
    def __init__(self, app: ASGIApp, secret: str) -> None:
        self.app = app
        self.secret = secret

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        own = own_path(scope["path"]) if scope["type"] == "http" else None
        if own is None:
            await self.app(scope, receive, send)
            return
        scope = {**scope, "path": own, "raw_path": own.encode(),
                 "headers": self._headers(scope, own in ("/healthz", METRICS_PATH))}
        if scope["method"] == "POST":
            receive = await _rewritten(receive)
            scope["headers"] = [(k, v) for k, v in scope["headers"] if k != b"content-length"]
        await self.app(scope, receive, send)

    def _headers(self, scope: Scope, probe: bool) -> list[tuple[bytes, bytes]]:
        """The secret as the node's own header when the bearer token is the secret (or
        for the health probe and the scrape, which need none)."""
        headers = Headers(scope=scope)
        raw: list[tuple[bytes, bytes]] = list(scope["headers"])
        if headers.get(SECRET_HEADER) is not None:
            return raw
        token = headers.get("authorization", "").removeprefix("Bearer ").strip()
        if probe or secret_matches(token, self.secret):
            raw.append((SECRET_HEADER.encode(), self.secret.encode()))
        return raw


async def _rewritten(receive: Receive) -> Receive:
    """The request body, read whole and rewritten once; later messages (a disconnect)
    come from the client as before."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return _replay([message], receive)
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body = without_router_defaults(b"".join(chunks))
    return _replay([{"type": "http.request", "body": body, "more_body": False}], receive)


def _replay(first: list[Message], receive: Receive) -> Receive:
    async def replaying() -> Message:
        return first.pop(0) if first else await receive()
    return replaying
