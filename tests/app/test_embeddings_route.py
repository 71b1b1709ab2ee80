"""POST /v1/infer/embeddings on the embedded all-MiniLM-L6-v2, through the official SDK
and raw HTTP: vectors, their encodings and number types, token and Voyage inputs, the
errors a client can cause, the listing, and the ledger."""

from __future__ import annotations

import asyncio
import base64

import numpy as np
import openai
import pytest

from b3os_infer.config import BertModel, default_embedding
from b3os_infer.engine.scripted.script import Reply

pytestmark = pytest.mark.anyio

MODEL = default_embedding().id
PREFIXED = BertModel(id="b3os/minilm-prefixed", kind="embedding", engine="bert",
                       query_prefix="query: ", document_prefix="passage: ")
TEXTS = ["A man is eating food.", "A man is eating a piece of bread.",
         "A man is riding a horse."]


@pytest.fixture
async def app(scripted_app):
    return await scripted_app(Reply("unused", repeat=True),
                              embeddings=[default_embedding(), PREFIXED])


async def _raw(app, **body):
    response = await app.http.post("/embeddings", json={"model": MODEL, **body},
                                   headers={"authorization": f"Bearer {app.key}"})
    return response


async def _floats(app, **body) -> np.ndarray:
    response = await _raw(app, **body)
    assert response.status_code == 200, response.text
    return np.array([d["embedding"] for d in response.json()["data"]], dtype=np.float32)


async def test_the_sdk_gets_one_unit_vector_of_384_dimensions_per_input_in_order(app):
    result = await app.openai.embeddings.create(model=MODEL, input=TEXTS)
    assert result.model == MODEL and result.object == "list"
    assert [d.index for d in result.data] == [0, 1, 2]
    vectors = np.array([d.embedding for d in result.data])
    assert vectors.shape == (3, 384)
    assert np.linalg.norm(vectors, axis=1) == pytest.approx([1, 1, 1], abs=1e-5)
    # the SDK asks for base64 and decodes it; the float form must be the same vectors
    assert np.allclose(vectors, await _floats(app, input=TEXTS), atol=1e-6)
    # related sentences closer than unrelated ones
    assert vectors[0] @ vectors[1] > 0.7 > 0.3 > vectors[0] @ vectors[2]
    tokens = sum(len(app_tokens) + 2 for app_tokens in _tokens(app, TEXTS))
    assert result.usage.prompt_tokens == result.usage.total_tokens == tokens


def _tokens(app, texts):
    model = app.registry.get_embedding(MODEL)
    return [model.engine.tokenize(t) for t in texts]


async def test_a_batch_gives_the_same_vectors_as_one_request_per_input(app):
    together = await _floats(app, input=TEXTS)
    alone = await asyncio.gather(*(_floats(app, input=t) for t in TEXTS))
    assert np.allclose(together, np.vstack(alone), atol=1e-5)


async def test_token_ids_give_the_same_vector_as_their_text(app):
    ids = _tokens(app, TEXTS[:2])
    assert np.allclose(await _floats(app, input=ids), await _floats(app, input=TEXTS[:2]),
                       atol=1e-6)
    assert np.allclose(await _floats(app, input=ids[0]), await _floats(app, input=TEXTS[0]),
                       atol=1e-6)


async def test_integer_output_types_follow_the_float_vector(app):
    floats = (await _floats(app, input=TEXTS[0]))[0]
    int8 = (await _floats(app, input=TEXTS[0], output_dtype="int8"))[0]
    assert np.abs(int8).max() == 127 and (np.sign(int8) == np.sign(np.rint(
        floats / np.abs(floats).max() * 127))).all()
    ubinary = (await _floats(app, input=TEXTS[0], output_dtype="ubinary"))[0]
    assert ubinary.shape == (48,)
    assert (np.unpackbits(ubinary.astype(np.uint8)) == (floats > 0)).all()
    binary = (await _floats(app, input=TEXTS[0], output_dtype="binary"))[0]
    assert (binary == ubinary - 128).all()
    encoded = (await _raw(app, input=TEXTS[0], output_dtype="int8",
                          encoding_format="base64")).json()["data"][0]["embedding"]
    assert np.frombuffer(base64.b64decode(encoded), dtype=np.int8).tolist() == int8.tolist()


async def test_input_type_puts_the_models_prefix_before_the_text(app):
    query = await _floats(app, model=PREFIXED.id, input="rivers", input_type="query")
    plain = await _floats(app, model=PREFIXED.id, input="query: rivers")
    document = await _floats(app, model=PREFIXED.id, input="rivers", input_type="document")
    assert np.allclose(query, plain, atol=1e-6)
    assert not np.allclose(query, document, atol=1e-3)
    # the default model has no prefixes: the input type leaves the vector as it is
    assert np.allclose(await _floats(app, input="rivers", input_type="query"),
                       await _floats(app, input="rivers"), atol=1e-6)


async def test_a_long_input_is_cut_to_the_limit_unless_truncation_is_false(app):
    long = "word " * 400
    cut = await _raw(app, input=long)
    assert cut.status_code == 200
    assert cut.json()["usage"]["prompt_tokens"] == 256  # 254 tokens and [CLS], [SEP]
    refused = await _raw(app, input=["short", long], truncation=False)
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["param"] == "input[1]" and "truncation" in error["message"]


@pytest.mark.parametrize(("body", "param"), [
    ({"input": ["fine", ""]}, "input[1]"),
    ({"input": [[1, 2], [999999]]}, "input[1]"),
    ({"input": "x", "dimensions": 128}, "dimensions"),
    ({"input": "x", "output_dtype": "int4"}, "output_dtype"),
    ({"input": []}, "input"),
    ({"input": "x", "encoding_format": "hex"}, "encoding_format"),
    ({"input": "x", "pooling": "cls"}, "pooling"),
    ({"input": "x", "model": "b3os/scripted"}, "model"),
])
async def test_client_mistakes_are_400s_at_their_path(app, body, param):
    response = await _raw(app, **body)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == param


async def test_the_sdk_raises_bad_request_for_a_chat_model_and_chat_routes_refuse_this_one(app):
    with pytest.raises(openai.BadRequestError, match="chat model"):
        await app.openai.embeddings.create(model=app.model, input="x")
    with pytest.raises(openai.BadRequestError, match="embedding model"):
        await app.openai.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "hi"}])


async def test_an_unknown_model_is_a_404(app):
    with pytest.raises(openai.NotFoundError):
        await app.openai.embeddings.create(model="b3os/nothing", input="x")


async def test_the_openai_listing_shows_embedding_models_and_the_anthropic_one_does_not(app):
    listed = {m.id: m for m in (await app.openai.models.list()).data}
    assert listed[MODEL].model_extra["b3os"]["kind"] == "embedding"
    assert listed[MODEL].model_extra["b3os"]["dimensions"] == 384
    assert listed[app.model].model_extra["b3os"]["kind"] == "chat"
    one = await app.openai.models.retrieve(MODEL)
    assert one.model_extra["b3os"]["max_input_tokens"] == 254
    anthropic_ids = [m.id for m in (await app.anthropic.models.list()).data]
    assert MODEL not in anthropic_ids and app.model in anthropic_ids


async def test_each_request_has_a_ledger_row_with_its_input_tokens(app):
    result = await app.openai.embeddings.create(model=MODEL, input=TEXTS[:2])
    app.edge.ledger.close()  # writes what is pending
    rows = [(r.model, r.route, r.status, r.input_tokens, r.output_tokens)
            for r in app.edge.ledger.rows()]
    assert (MODEL, "POST /embeddings", 200, result.usage.prompt_tokens, 0) in rows
