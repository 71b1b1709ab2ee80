"""Stored responses in the edge's database, each owned by the key that made it.

``ResponseTable`` reads and writes the ``stored_responses`` table (in a worker thread);
``KeyResponses`` is the store a request's routes see (``http/stored_responses.py``),
limited to its key. On a node behind an edge, ``RemoteResponses`` asks that edge, which
answers at ``<callback url>/response.get|put|delete`` for the key of the forwarded
request (``answer``), on the node's one client to its edges (``NodeGuard``).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from sqlalchemy import Engine, delete, select

from ...http.stored_responses import (
    ResponseStore,
    StoredResponse,
    stored_from_wire,
    stored_to_wire,
)
from ..access.keys import utc_now
from ..fleet.protocol import SETTLE_TIMEOUT, call_edge, error_from_wire
from .db import stored_responses

ACTIONS = ("response.get", "response.put", "response.delete")


class ResponseTable:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def put(self, key_id: str, stored: StoredResponse) -> None:
        values = {"id": stored.id, "key_id": key_id, "model": stored.model,
                  "created_at": utc_now(), "body": json.dumps(stored.body),
                  "items": json.dumps(stored.items)}
        with self.engine.begin() as db:
            db.execute(stored_responses.insert().values(**values))

    def get(self, key_id: str, response_id: str) -> StoredResponse | None:
        table = stored_responses.c
        query = select(table.id, table.model, table.body, table["items"]).where(
            table.id == response_id, table.key_id == key_id)
        with self.engine.connect() as db:
            row = db.execute(query).first()
        if row is None:
            return None
        return StoredResponse(id=row[0], model=row[1], body=json.loads(row[2]),
                              items=json.loads(row[3]))

    def delete(self, key_id: str, response_id: str) -> bool:
        table = stored_responses.c
        with self.engine.begin() as db:
            gone = db.execute(delete(stored_responses).where(
                table.id == response_id, table.key_id == key_id))
        return bool(gone.rowcount)


class KeyResponses:
    """The table as one key sees it."""

    def __init__(self, table: ResponseTable, key_id: str) -> None:
        self.table = table
        self.key_id = key_id

    async def put(self, stored: StoredResponse) -> None:
        await asyncio.to_thread(self.table.put, self.key_id, stored)

    async def get(self, response_id: str) -> StoredResponse | None:
        return await asyncio.to_thread(self.table.get, self.key_id, response_id)

    async def delete(self, response_id: str) -> bool:
        return await asyncio.to_thread(self.table.delete, self.key_id, response_id)


async def answer(store: ResponseStore, action: str, data: dict[str, Any]
                 ) -> dict[str, Any]:
    """The edge's side of ``RemoteResponses``: one action on the forwarded key's store."""
    if action == "response.put":
        await store.put(stored_from_wire(data["stored"]))
        return {"ok": True}
    if action == "response.delete":
        return {"deleted": await store.delete(str(data["id"]))}
    found = await store.get(str(data["id"]))
    return {"stored": stored_to_wire(found) if found else None}


class RemoteResponses:
    """The store of the edge that forwarded this request, over its callback URL."""

    def __init__(self, url: str, secret: str, client: httpx.AsyncClient) -> None:
        self.url = url
        self.secret = secret
        self.client = client

    async def put(self, stored: StoredResponse) -> None:
        await self._post("response.put", {"stored": stored_to_wire(stored)})

    async def get(self, response_id: str) -> StoredResponse | None:
        found = (await self._post("response.get", {"id": response_id}))["stored"]
        return stored_from_wire(found) if found else None

    async def delete(self, response_id: str) -> bool:
        return bool((await self._post("response.delete", {"id": response_id}))["deleted"])

    async def _post(self, action: str, payload: dict[str, Any]) -> dict[str, Any]:
        response = await call_edge(self.client, f"{self.url}/{action}", self.secret,
                                   payload, SETTLE_TIMEOUT)
        if response.status_code != 200:
            raise error_from_wire(response.json())
        data: dict[str, Any] = response.json()
        return data

