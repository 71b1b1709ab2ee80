"""The seam between a route that keeps responses and the edge's database.

The edge puts a ``ResponseStore`` in the ASGI scope state under ``STORE_KEY``, already
scoped to the key that made the request: a response one key stored is not found with
another. In one process it reads and writes the edge's database; on a node behind an
edge it asks that edge (``edge/storage/response_store.py``). Without an edge nothing is kept.

What is kept is opaque here: the response as its API writes it, and the items it was
made from (the wire package decides both shapes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from starlette.types import Scope

STORE_KEY = "b3os.stored_responses"


@dataclass(frozen=True)
class StoredResponse:
    id: str
    model: str
    body: dict[str, Any]          # the response object, as it was answered
    items: list[dict[str, Any]]   # the input it was made from, earlier turns included


class ResponseStore(Protocol):
    async def put(self, stored: StoredResponse) -> None: ...

    async def get(self, response_id: str) -> StoredResponse | None:
        """The response if this key stored it (and it was not deleted), else None."""
        ...

    async def delete(self, response_id: str) -> bool:
        """True if this key's response was there and is now gone."""
        ...


def response_store(scope: Scope) -> ResponseStore | None:
    store: ResponseStore | None = scope.get("state", {}).get(STORE_KEY)
    return store


def stored_to_wire(stored: StoredResponse) -> dict[str, Any]:
    return {"id": stored.id, "model": stored.model, "body": stored.body,
            "items": stored.items}


def stored_from_wire(data: dict[str, Any]) -> StoredResponse:
    return StoredResponse(id=str(data["id"]), model=str(data["model"]),
                          body=dict(data["body"]), items=list(data["items"]))
