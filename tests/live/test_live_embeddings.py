"""Embeddings from the server `make serve` starts: the default all-MiniLM-L6-v2 beside the
chat model, through the official OpenAI SDK, with the usage ledger and the health check."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np

from support.servers import cli

MODEL = "b3os/all-minilm-l6-v2"
DOCS = ["The Willamette River flows north through Portland, Oregon.",
        "Sourdough bread needs a starter, flour, water and salt.",
        "The Columbia River forms most of the border between Oregon and Washington."]


def test_the_default_server_serves_the_embedding_model_next_to_the_chat_model(live,
                                                                              openai_client):
    listed = {m.id: m.model_extra["b3os"]["kind"] for m in openai_client.models.list().data}
    assert listed[MODEL] == "embedding" and "chat" in listed.values()
    health = httpx.get(live.root + "/healthz").json()
    assert health["models"][MODEL]["healthy"] is True


def test_a_query_finds_its_documents_by_cosine(openai_client):
    docs = openai_client.embeddings.create(model=MODEL, input=DOCS)
    query = openai_client.embeddings.create(model=MODEL, input="Which rivers are in Oregon?",
                                            encoding_format="float")
    matrix = np.array([d.embedding for d in docs.data])
    scores = matrix @ np.array(query.data[0].embedding)
    assert scores.argmin() == 1  # the bread recipe is the least related
    assert docs.usage.prompt_tokens > 0


def test_concurrent_requests_each_get_their_own_vectors(openai_client):
    def one(text: str) -> list[float]:
        return openai_client.embeddings.create(model=MODEL, input=text,
                                               encoding_format="float").data[0].embedding

    with ThreadPoolExecutor(len(DOCS)) as pool:
        apart = list(pool.map(one, DOCS))
    together = openai_client.embeddings.create(model=MODEL, input=DOCS,
                                               encoding_format="float")
    assert np.allclose(apart, [d.embedding for d in together.data], atol=1e-5)


def ledger_totals(home: Path) -> tuple[int, int]:
    """Requests and input tokens the usage ledger holds for the embedding model."""
    requests = tokens = 0
    for line in cli(home, "usage").stdout.splitlines():
        fields = line.split()
        if MODEL in fields:
            at = fields.index(MODEL)
            requests += int(fields[at + 1])
            tokens += int(fields[at + 3])
    return requests, tokens


def test_an_embedding_request_adds_one_row_with_its_input_tokens_to_the_ledger(
        live, openai_client):
    before = ledger_totals(live.home)
    made = openai_client.embeddings.create(model=MODEL, input="ledger check")
    expected = (before[0] + 1, before[1] + made.usage.prompt_tokens)
    # the ledger is written off the event loop: wait for the row
    deadline = time.monotonic() + 10
    while (after := ledger_totals(live.home)) != expected and time.monotonic() < deadline:
        time.sleep(0.2)
    assert after == expected
