"""What a batch route needs from its request: the batch service, and the key that owns
what it touches (another key is told the batch or file does not exist)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from starlette.requests import Request

from ..edge.access.keys import KeyRecord
from ..errors import AuthenticationFailed, NotFound
from .async_store import BatchStore
from .store import BatchRow

if TYPE_CHECKING:
    from .service import BatchService


def service_of(request: Request) -> BatchService:
    """The app's batch service, its runner started (resumed) if it was not yet."""
    service: BatchService = request.app.state.batches
    service.start()
    return service


def owner(request: Request) -> str:
    """The id of the key that authenticated this request (the edge put it in the scope)."""
    key = request.scope.get("state", {}).get("api_key")
    if not isinstance(key, KeyRecord):
        raise AuthenticationFailed("batches need an API key", code="missing_api_key")
    return key.id


async def owned_batch(request: Request, api: str, not_found: Callable[[str], NotFound]
                      ) -> tuple[BatchStore, BatchRow]:
    """The batch the path names, if this key made it with this API; else ``not_found``
    of its id, in the API's words."""
    store = service_of(request).store
    batch_id = request.path_params["batch_id"]
    batch = await store.batch(owner(request), batch_id)
    if batch is None or batch.api != api:
        raise not_found(batch_id)
    return store, batch
