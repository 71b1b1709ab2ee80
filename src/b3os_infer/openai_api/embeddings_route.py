"""``POST /embeddings``: texts or token lists to vectors, on an embedding model.

Counted, limited and written to the ledger like the other routes: admitted with the
input tokens the model computes (and no output), settled with them once the vectors are
ready, or with nothing if the client left first.
"""

from __future__ import annotations

import base64

import numpy as np
from starlette.requests import Request
from starlette.responses import Response

from ..core import Usage
from ..http.accounting import admit
from ..http.endpoint import endpoint
from ..http.requests import json_body
from ..node.embedding import EmbeddingInput, EmbeddingModel
from ..node.registry import ModelRegistry
from ..node.vectors import PACKED, convert
from ..wire_models import decode
from .decode import invalid
from .wire.embeddings import (
    CreateEmbeddingResponse,
    Embedding,
    EmbeddingCreateParams,
    EmbeddingUsage,
)

Item = str | list[int]


@endpoint
async def create_embeddings(request: Request) -> Response:
    params = decode(EmbeddingCreateParams, await json_body(request))
    registry: ModelRegistry = request.app.state.registry
    model = registry.get_embedding(params.model)
    _check_dimensions(model, params)
    inputs = [_input(model, item, params, where) for where, item in _items(params.input)]
    counted = model.counted(inputs)
    admission = await admit(request, params.model, counted, 0)
    try:
        vectors = await model.embed(inputs)   # raced against the disconnect (endpoint)
    except BaseException:
        await admission.settle(None)
        raise
    await admission.settle(Usage(input_tokens=counted))
    values = convert(vectors, params.output_dtype or "float")
    body = CreateEmbeddingResponse(
        object="list", model=params.model,
        data=[Embedding(object="embedding", index=index,
                        embedding=_encoded(row, params.encoding_format == "base64"))
              for index, row in enumerate(values)],
        usage=EmbeddingUsage(prompt_tokens=counted, total_tokens=counted))
    return Response(body.to_json(), media_type="application/json")


def _items(value: str | list[str] | list[int] | list[list[int]]) -> list[tuple[str, Item]]:
    """Each input with the path the client wrote it at; a list of ints is one input."""
    if isinstance(value, str):
        return [("input", value)]
    if all(isinstance(item, int) for item in value):
        return [("input", [item for item in value if isinstance(item, int)])]
    items: list[tuple[str, Item]] = []
    for index, item in enumerate(value):
        if isinstance(item, str | list):
            items.append((f"input[{index}]", item))
    return items


def _input(model: EmbeddingModel, item: Item, params: EmbeddingCreateParams,
           where: str) -> EmbeddingInput:
    cut = params.truncation is not False
    if isinstance(item, str):
        return model.text_input(item, params.input_type, truncate=cut, where=where)
    return model.token_input(item, params.input_type, truncate=cut, where=where)


def _check_dimensions(model: EmbeddingModel, params: EmbeddingCreateParams) -> None:
    """Only the model's own size is served: it was not trained to be cut shorter."""
    card = model.card
    if params.dimensions is not None and params.dimensions != card.dimensions:
        raise invalid("dimensions", f"{card.id} serves vectors of {card.dimensions} "
                      f"dimensions only, not {params.dimensions}")
    if params.output_dtype in PACKED and card.dimensions % 8:
        raise invalid("output_dtype", f"{params.output_dtype} packs 8 dimensions a byte; "
                      f"{card.dimensions} is not a multiple of 8")


def _encoded(row: np.ndarray, as_base64: bool) -> list[float] | list[int] | str:
    if as_base64:
        return base64.b64encode(row.astype(row.dtype.newbyteorder("<")).tobytes()).decode()
    values: list[float] | list[int] = row.tolist()
    return values
