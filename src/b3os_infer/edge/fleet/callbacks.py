"""Where nodes admit and settle the requests an edge forwarded to them.

The edge registers each forwarded request's ``EdgeAccounting`` under a random ticket and
sends the node ``<advertise url>/_b3os/accounting/<ticket>``; the node posts to
``.../admit`` and ``.../settle`` with the shared secret, and reaches the key's stored
responses at ``.../response.get|put|delete`` (``edge/storage/response_store.py``).
"""

from __future__ import annotations

import secrets
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ...core import Usage
from ...errors import InferError
from ...http.cancellation import until_disconnect
from ..admission.metering import EdgeAccounting
from ..storage.response_store import ACTIONS, KeyResponses, answer
from .protocol import CALLBACK_PREFIX, SECRET_HEADER, error_to_wire, secret_matches


class Tickets:
    def __init__(self) -> None:
        self._open: dict[str, EdgeAccounting] = {}

    def add(self, accounting: EdgeAccounting) -> str:
        ticket = secrets.token_urlsafe(18)
        self._open[ticket] = accounting
        return ticket

    def get(self, ticket: str) -> EdgeAccounting | None:
        return self._open.get(ticket)

    def remove(self, ticket: str) -> None:
        self._open.pop(ticket, None)


def _refusal(status: int, message: str) -> JSONResponse:
    return JSONResponse({"status": status, "code": "bad_callback", "message": message},
                        status_code=status)


async def _act(target: EdgeAccounting, action: str, data: dict[str, Any]) -> None:
    if action == "admit":
        await target.admit(str(data["model"]), int(data["input_tokens"]),
                           int(data["max_tokens"]))
    else:
        usage = Usage(**data["usage"]) if data.get("usage") else None
        await target.settle(str(data["model"]), usage)


def callback_route(tickets: Tickets, secret: str) -> Route:
    async def accounting(request: Request) -> Response:
        if not secret_matches(request.headers.get(SECRET_HEADER), secret):
            return _refusal(401, "wrong node secret")
        target = tickets.get(request.path_params["ticket"])
        if target is None:
            return _refusal(404, "no such forwarded request (it has ended)")
        data = await request.json()
        action = request.path_params["action"]
        if action in ACTIONS:
            store = KeyResponses(target.edge.responses, target.key.id)
            return JSONResponse(await answer(store, action, data))
        try:
            # a node that gives up (its client went away) leaves the queue at once
            await until_disconnect(request, _act(target, action, data))
        except InferError as error:
            return JSONResponse(error_to_wire(error), status_code=error.status)
        return JSONResponse({"ok": True})

    return Route(CALLBACK_PREFIX + "{ticket}/{action:str}", accounting, methods=["POST"])
