"""``POST /embeddings``: the request body and the response, shaped after the SDK's
``EmbeddingCreateParams`` and ``CreateEmbeddingResponse``, with Voyage's ``input_type``,
``truncation`` and ``output_dtype`` beside OpenAI's fields."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ...wire_models import Ignored, Supported, WireModel
from .common import PositiveInt
from .responses import WireResponse

MAX_INPUTS = 2048
TokenIds = Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1)]
EmbeddingInput = (str | Annotated[list[str], Field(min_length=1, max_length=MAX_INPUTS)]
                  | TokenIds | Annotated[list[TokenIds], Field(min_length=1,
                                                                max_length=MAX_INPUTS)])


class EmbeddingCreateParams(WireModel):
    model: Annotated[str, Supported("required: a model listed with `b3os.kind` `embedding`")]
    input: Annotated[EmbeddingInput, Supported(
        f"required: a string, a list of up to {MAX_INPUTS} strings, a list of token ids of "
        "the model's own vocabulary, or a list of such lists; no empty strings")]
    encoding_format: Annotated[Literal["float", "base64"] | None, Supported(
        "`float` (default): JSON numbers; `base64`: the vector's little-endian bytes "
        "(float32, or one byte per value for the integer `output_dtype`s)")] = None
    dimensions: Annotated[PositiveInt | None, Supported(
        "only the model's own size (`b3os.dimensions` in the listing): the served models "
        "were not trained to be cut shorter; any other is a 400")] = None
    user: Annotated[str | None, Ignored("no per-user behaviour here")] = None
    input_type: Annotated[Literal["query", "document"] | None, Supported(
        "Voyage's: puts the model's query or document prefix before each text (configured "
        "per model; all-MiniLM-L6-v2 has none, so both give the plain text's vector)")
    ] = None
    truncation: Annotated[bool | None, Supported(
        "Voyage's: `true` (default) cuts a longer input to the model's limit; `false` "
        "answers 400 instead")] = None
    output_dtype: Annotated[Literal["float", "int8", "uint8", "binary", "ubinary"] | None,
                            Supported("Voyage's: the number type of each vector "
                                      "(docs/embeddings.md says how each is computed)")
                            ] = None


class Embedding(WireResponse):
    object: Literal["embedding"] = "embedding"
    index: int
    embedding: list[float] | list[int] | str


class EmbeddingUsage(WireResponse):
    prompt_tokens: int
    total_tokens: int


class CreateEmbeddingResponse(WireResponse):
    object: Literal["list"] = "list"
    data: list[Embedding]
    model: str
    usage: EmbeddingUsage
