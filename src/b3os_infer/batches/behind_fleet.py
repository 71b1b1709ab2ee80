"""Batches behind a fleet edge (an edge with remote nodes): not served, and said so.

Batches, their requests and files live in the database of the one process that runs them
(``b3os-infer serve``): its runner sends each request to its own node routes, in the
engine's spare capacity. A fleet edge has no engine of its own to gauge, and a node behind
it no database, so neither keeps batches. Rather than forward them to a node (which would
answer that the route does not exist), the edge answers every batch and file route itself:
404 in the API's shape, b3os code ``batches_not_available`` (docs/scale-out.md).
"""

from __future__ import annotations

from starlette.types import Receive, Scope, Send

from ..envelopes import error_response
from ..errors import NotFound
from ..http.formats import BASE

# Anthropic's Message Batches; OpenAI's Batch and Files APIs (routes of batches/*_routes.py)
PREFIXES = (BASE + "/v1/messages/batches", BASE + "/batches", BASE + "/files")


def batch_path(path: str) -> bool:
    return any(path == prefix or path.startswith(prefix + "/") for prefix in PREFIXES)


def not_in_fleet() -> NotFound:
    return NotFound("batches and files are not served behind a fleet edge: they are kept "
                    "and run by a single `b3os-infer serve` process; see docs/scale-out.md",
                    code="batches_not_available")


async def refuse_in_fleet(scope: Scope, receive: Receive, send: Send) -> None:
    """The edge's answer to a batch or file route (after authentication, as any route)."""
    rid = scope["state"]["request_id"]
    await error_response(scope["path"], not_in_fleet(), rid)(scope, receive, send)
