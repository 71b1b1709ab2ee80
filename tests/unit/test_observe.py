"""The observation of one request: its phases from engine events, its finish, the notes
outside a request, bounded route labels, KV usage, and the ``[metrics]`` config table."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from starlette.routing import Route

from b3os_infer.config import ConfigError, load_config
from b3os_infer.core import Finished, TextDelta, Usage
from b3os_infer.engine.base import (
    Admitted,
    GenerationDone,
    GenerationRequest,
    KvUsage,
    TokenEvent,
    kv_usage,
)
from b3os_infer.observe import context
from b3os_infer.observe.context import Generation, Observation, observed_reply
from b3os_infer.observe.http import RouteLabels, server_timing

MS = 1_000_000


def _generation(**moments: int | None) -> Generation:
    return Generation("m", 16, **{"started": 0, **moments})  # type: ignore[arg-type]


def test_phases_run_from_admission_to_the_first_token_to_the_end():
    observation = Observation("req", began=0, admission=(0, 2 * MS))
    observation.generations.append(_generation(started=2 * MS, admitted=5 * MS,
                                               first_token=9 * MS, ended=20 * MS))
    assert (observation.queue_ns(), observation.prefill_ns(), observation.decode_ns()) == \
        (5 * MS, 4 * MS, 11 * MS)
    assert server_timing(observation) == "queue;dur=5.000, prefill;dur=4.000, decode;dur=11.000"


def test_phases_not_over_yet_are_left_out():
    observation = Observation("req", began=0)
    assert server_timing(observation) is None
    observation.generations.append(_generation(admitted=3 * MS))
    assert server_timing(observation) == "queue;dur=3.000"
    observation.generations.append(_generation(admitted=4 * MS, first_token=6 * MS,
                                               ended=7 * MS))
    # one choice of two still running: no decode time yet
    assert observation.decode_ns() is None


def test_engine_events_give_a_generations_moments_and_counts():
    generation = _generation()
    generation.see(Admitted(prompt_tokens=10, cached_tokens=4), 1)
    generation.see(TokenEvent(5, "a"), 2)
    generation.see(TokenEvent(-1, "tail"), 3)     # NOT_A_TOKEN: text, no token
    generation.see(TokenEvent(6, "b"), 4)
    assert (generation.admitted, generation.first_token, generation.last_token) == (1, 2, 4)
    assert generation.generated_tokens == 2
    generation.see(GenerationDone("length", 10, 4, 2), 5)
    assert (generation.finish, generation.prompt_tokens, generation.cached_tokens) == \
        ("length", 10, 4)


def test_finish_reason_is_none_abort_or_the_replys_own():
    observation = Observation("req")
    assert observation.finish_reason() == "none"
    observation.generations.append(_generation())
    assert observation.finish_reason() == "abort"
    observation.finishes.append("tool_calls")
    assert observation.finish_reason() == "tool_calls"


async def _engine():
    yield Admitted(3, 0)
    yield TokenEvent(1, "x")
    yield GenerationDone("eog", 3, 0, 1)


@observed_reply("chat")
async def _reply():
    yield TextDelta("x")
    yield Finished("end", None, Usage(input_tokens=2, output_tokens=1, cached_tokens=1,
                                      reasoning_tokens=1))


def test_notes_outside_a_request_change_nothing_and_pass_the_stream_itself():
    events = _engine()
    assert context.watch_generation("m", GenerationRequest([1], 4), events) is events
    context.note_error("x")
    context.note_model("m")
    context.note_response_id("msg_1")
    assert context.current() is None


def test_notes_inside_a_request_reach_its_observation():
    async def run() -> Observation:
        observation = Observation("req")
        token = context.begin(observation)
        try:
            watched = context.watch_generation("m", GenerationRequest([1, 2, 3], 8), _engine())
            assert [type(e).__name__ async for e in watched] == \
                ["Admitted", "TokenEvent", "GenerationDone"]
            assert [type(e).__name__ async for e in _reply()] == ["TextDelta", "Finished"]
            context.note_response_id("msg_1")
        finally:
            context.end(token)
        return observation

    observation = asyncio.run(run())
    generation, = observation.generations
    assert (observation.model, observation.operation, observation.response_id) == \
        ("m", "chat", "msg_1")
    assert (generation.max_tokens, generation.generated_tokens, generation.finish) == \
        (8, 1, "eog")
    assert generation.ended is not None
    assert observation.finishes == ["end"]
    assert observation.usage == Usage(input_tokens=2, output_tokens=1, cached_tokens=1,
                                      reasoning_tokens=1)


async def _endpoint(scope, receive, send):
    return None


def test_route_labels_are_route_templates_or_other():
    labels = RouteLabels([Route("/v1/infer/models/{model_id:path}", _endpoint),
                          Route("/v1/infer/v1/messages", _endpoint, methods=["POST"])])
    scope = {"type": "http", "method": "GET", "path": "/v1/infer/models/a/b"}
    assert labels(scope) == "/v1/infer/models/{model_id}"
    assert labels({**scope, "path": "/v1/infer/v1/messages"}) == "/v1/infer/v1/messages"
    assert labels({**scope, "path": "/anything/else"}) == "other"
    assert labels({**scope, "route": Route("/healthz", _endpoint)}) == "/healthz"


def test_kv_usage_is_optional_on_an_engine():
    class Plain:
        pass

    class Counting:
        def kv_usage(self) -> KvUsage:
            return KvUsage(used=30, capacity=120)

    assert kv_usage(Plain()) is None
    assert kv_usage(Counting()) == KvUsage(30, 120)
    assert KvUsage(30, 120).fraction == 0.25
    assert KvUsage(5, 0).fraction == 0.0


def test_the_metrics_table_of_the_config_file(tmp_path: Path):
    path = tmp_path / "b3os.toml"
    path.write_text('[metrics]\ntoken = "t0ken"\nkey_labels = true\n')
    config = load_config(path)
    assert (config.metrics.token, config.metrics.key_labels) == ("t0ken", True)
    path.write_text('[metrics]\nkey_labels = "yes"\n')
    with pytest.raises(ConfigError, match="key_labels should be true or false"):
        load_config(path)
    path.write_text('[metrics]\nport = 9100\n')
    with pytest.raises(ConfigError, match="unknown key 'port'"):
        load_config(path)


def test_watching_state_again_replaces_the_reader_instead_of_adding_one():
    from prometheus_client.parser import text_string_to_metric_families

    from b3os_infer.observe.metrics import Metrics

    metrics = Metrics()
    metrics.watch_queues(lambda: {"a": {"running": 1, "waiting": 0}})
    metrics.watch_queues(lambda: {"a": {"running": 2, "waiting": 5}})   # an app built again
    families = {f.name: f for f in text_string_to_metric_families(
        metrics.exposition().decode())}
    assert [s.value for s in families["b3os_edge_queue_running"].samples] == [2]
    assert [s.value for s in families["b3os_edge_queue_waiting"].samples] == [5]
