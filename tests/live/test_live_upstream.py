"""One node, three engines: the embedded llama.cpp, llama-cpp-python's own OpenAI server,
and llama.cpp's ``llama-server`` (built by ``make llama-server``).

Each upstream model is the same GGUF served by a real engine over HTTP (no mock); the node
templates, counts and parses for all, so both APIs must behave the same on each. Each
engine gets one thread: two llama.cpp processes on two cores would slow each other badly
(the tests take turns, so only one of them works at a time).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import anthropic
import httpx
import jsonschema
import openai
import pytest

from b3os_infer.node.models import default_model_path
from support.binaries import llama_server
from support.servers import LiveServer, cli, free_port, start_server, stop, wait_healthy, wait_ready

EMBEDDED = "b3os/smollm2-135m-instruct"
UPSTREAM = "b3os/smollm2-upstream"
LLAMA_SERVER = "b3os/smollm2-llama-server"
UPSTREAMS = [UPSTREAM, LLAMA_SERVER]
BOTH = [EMBEDDED, *UPSTREAMS]
HI = [{"role": "user", "content": "Name one river in Oregon."}]
WEATHER = {"name": "get_weather", "description": "Get the current weather in a city",
           "input_schema": {"type": "object", "properties": {
               "city": {"type": "string"},
               "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
               "required": ["city", "unit"]}}
GREEDY = {"top_k": 1}



def _engine(command: list[str], log: Path) -> subprocess.Popen[str]:
    # its output goes to a file: llama.cpp's loader alone would fill a pipe and block it
    with log.open("w") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, text=True)


def _llama_cpp_python(port: int) -> list[str]:
    return [sys.executable, "-m", "llama_cpp.server", "--model", str(default_model_path()),
            "--model_alias", "smollm2-upstream", "--n_threads", "1", "--n_threads_batch", "1",
            "--n_ctx", "4096", "--host", "127.0.0.1", "--port", str(port)]


def _llama_server(port: int) -> list[str]:
    return [str(llama_server()), "--model", str(default_model_path()),
            "--alias", "smollm2-llama-server", "--threads", "1", "--threads-batch", "1",
            "--ctx-size", "4096", "--parallel", "1", "--host", "127.0.0.1",
            "--port", str(port)]


def _config(engine_url: str, llama_server_url: str) -> str:
    return f"""
[engine]
threads = 1
parallel = 1

[[models]]
id = "{EMBEDDED}"
display_name = "SmolLM2 embedded"
context_window = 4096

[[models]]
id = "{UPSTREAM}"
display_name = "SmolLM2 over HTTP"
engine = "upstream"
flavour = "llama-cpp-python"
url = "{engine_url}"
served_name = "smollm2-upstream"
tokenizer = "{default_model_path()}"
context_window = 4096

[[models]]
id = "{LLAMA_SERVER}"
display_name = "SmolLM2 on llama-server"
engine = "upstream"
flavour = "llama-server"
url = "{llama_server_url}"
served_name = "smollm2-llama-server"
tokenizer = "{default_model_path()}"
context_window = 4096
"""


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    home = tmp_path_factory.mktemp("upstream")
    engine_port, llama_port = free_port(), free_port()
    engine_url, llama_url = (f"http://127.0.0.1:{p}" for p in (engine_port, llama_port))
    engine_log, llama_log = home / "engine.log", home / "llama-server.log"
    processes = [_engine(_llama_cpp_python(engine_port), engine_log)]
    try:
        wait_ready(engine_url + "/v1/models", processes[0], engine_log.read_text)
        processes.append(_engine(_llama_server(llama_port), llama_log))
        wait_ready(llama_url + "/health", processes[1], llama_log.read_text)
        (home / "node.toml").write_text(_config(engine_url, llama_url))
        key = cli(home, "keys", "create", "--name", "t").stdout.strip().splitlines()[-1]
        port = free_port()
        server = start_server(home, port, "--config", str(home / "node.toml"))
        processes.append(server)
        root = f"http://127.0.0.1:{port}"
        wait_healthy(root, server)
        yield LiveServer(root=root, key=key, home=home)
        server.terminate()
        log = server.communicate(timeout=30)[0]
        assert "counted" not in log, log   # the engine saw exactly the node's prompt tokens
    finally:
        for process in processes:
            if process.poll() is None:
                stop(process)


@pytest.fixture
def claude(node):
    with anthropic.Anthropic(api_key=node.key, base_url=node.base_url, max_retries=0) as c:
        yield c


@pytest.fixture
def gpt(node):
    with openai.OpenAI(api_key=node.key, base_url=node.base_url, max_retries=0) as c:
        yield c


def test_both_models_are_listed(claude, gpt):
    assert {m.id for m in gpt.models.list().data} == set(BOTH)
    assert {m.id for m in claude.models.list().data} == set(BOTH)


@pytest.mark.parametrize("model", BOTH)
def test_anthropic_stream_and_count_tokens(claude, model):
    counted = claude.messages.count_tokens(model=model, messages=HI, system="Be brief.")
    with claude.messages.stream(model=model, max_tokens=6, messages=HI,
                                system="Be brief.") as stream:
        texts = list(stream.text_stream)
        message = stream.get_final_message()
    assert "".join(texts) == message.content[0].text and message.content[0].text.strip()
    assert message.stop_reason in ("max_tokens", "end_turn")
    usage = message.usage
    assert counted.input_tokens == usage.input_tokens + (usage.cache_read_input_tokens or 0)
    assert 0 < usage.output_tokens <= 6


@pytest.mark.parametrize("model", BOTH)
def test_openai_stream_with_usage(gpt, claude, model):
    chunks = list(gpt.chat.completions.create(
        model=model, max_tokens=6, messages=HI, stream=True,
        stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.strip()
    assert chunks[-1].usage.prompt_tokens == claude.messages.count_tokens(
        model=model, messages=HI).input_tokens
    assert 0 < chunks[-1].usage.completion_tokens <= 6


@pytest.mark.parametrize("model", BOTH)
def test_forced_tool_call_is_valid_streamed_and_not(claude, model):
    kwargs = dict(model=model, max_tokens=60, messages=[
        {"role": "user", "content": "What is the weather in Paris?"}], tools=[WEATHER],
        tool_choice={"type": "any", "disable_parallel_tool_use": True}, extra_body=GREEDY)
    counted = claude.messages.count_tokens(**{k: v for k, v in kwargs.items()
                                              if k not in ("max_tokens", "extra_body")})
    message = claude.messages.create(**kwargs)
    assert message.stop_reason == "tool_use"
    (call,) = [b for b in message.content if b.type == "tool_use"]
    jsonschema.validate(call.input, WEATHER["input_schema"])
    assert counted.input_tokens == message.usage.input_tokens + \
        (message.usage.cache_read_input_tokens or 0)
    with claude.messages.stream(**kwargs) as stream:
        streamed = stream.get_final_message()
    assert [(b.name, b.input) for b in streamed.content if b.type == "tool_use"] == \
        [(call.name, call.input)]


@pytest.mark.parametrize("model", BOTH)
def test_openai_tool_call_streamed_equals_non_streamed(gpt, model):
    tool = {"type": "function", "function": {"name": WEATHER["name"],
                                             "description": WEATHER["description"],
                                             "parameters": WEATHER["input_schema"]}}
    kwargs = dict(model=model, max_tokens=60, temperature=0, tools=[tool],
                  messages=[{"role": "user", "content": "What is the weather in Paris?"}],
                  tool_choice="required", parallel_tool_calls=False)
    whole = gpt.chat.completions.create(**kwargs)
    assert whole.choices[0].finish_reason == "tool_calls"
    (call,) = whole.choices[0].message.tool_calls
    jsonschema.validate(json.loads(call.function.arguments), WEATHER["input_schema"])
    with gpt.chat.completions.stream(**kwargs) as stream:
        final = stream.get_final_completion()
    (streamed,) = final.choices[0].message.tool_calls
    assert streamed.function.name == call.function.name
    assert json.loads(streamed.function.arguments) == json.loads(call.function.arguments)


@pytest.mark.parametrize("model", BOTH)
def test_structured_output_is_valid_json(claude, model):
    schema = {"type": "object", "properties": {"river": {"type": "string", "maxLength": 20}},
              "required": ["river"], "additionalProperties": False}
    message = claude.messages.create(
        model=model, max_tokens=30, messages=HI, extra_body=GREEDY,
        output_config={"format": {"type": "json_schema", "schema": schema}})
    jsonschema.validate(json.loads(message.content[0].text), schema)


@pytest.mark.parametrize("model", UPSTREAMS)
def test_a_closed_stream_cancels_the_upstream_request(node, claude, model):
    # both engines run one request at a time here: had the abandoned request kept going
    # (2,000 tokens at one thread), the next one would wait for all of it
    with claude.messages.stream(model=model, max_tokens=2000, messages=[
            {"role": "user", "content": "Write a very long story about a river."}],
            extra_body={"temperature": 1.0}) as stream:
        for _ in stream.text_stream:
            break
    started = time.monotonic()
    reply = claude.messages.create(model=model, max_tokens=3, messages=HI)
    assert reply.usage.output_tokens > 0
    assert time.monotonic() - started < 20
    assert httpx.get(node.root + "/healthz").json()["models"][model]["active"] == 0


RIVERS = "You answer questions about the rivers of North America, briefly. " * 12


@pytest.mark.parametrize("model", [LLAMA_SERVER])
def test_a_repeated_prefix_is_reported_as_cached_on_both_apis(claude, gpt, model):
    # the cached tokens llama-server's usage reports (llama-cpp-python's server reports none;
    # the embedded engine's prefix cache has its own tests)
    claude.messages.create(model=model, max_tokens=2, system=RIVERS, messages=HI)
    ohio = [{"role": "user", "content": "Name one river in Ohio."}]
    counted = claude.messages.count_tokens(model=model, system=RIVERS,
                                           messages=ohio).input_tokens
    usage = claude.messages.create(model=model, max_tokens=2, system=RIVERS,
                                   messages=ohio).usage
    assert usage.cache_read_input_tokens > counted // 2   # the system prompt at least
    assert usage.input_tokens + usage.cache_read_input_tokens == counted
    chat = gpt.chat.completions.create(model=model, max_tokens=2, messages=[
        {"role": "system", "content": RIVERS},
        {"role": "user", "content": "Name one river in Utah."}])
    assert chat.usage.prompt_tokens_details.cached_tokens > counted // 2
    assert chat.usage.prompt_tokens_details.cached_tokens < chat.usage.prompt_tokens


def test_a_node_whose_engine_does_not_serve_its_served_name_says_so_and_answers_503(
        node, tmp_path):
    llama_url = tomllib.loads((node.home / "node.toml").read_text())["models"][2]["url"]
    (tmp_path / "node.toml").write_text(f"""
[[models]]
id = "b3os/misnamed"
engine = "upstream"
flavour = "llama-server"
url = "{llama_url}"
served_name = "qwen3"
tokenizer = "{default_model_path()}"
context_window = 4096
""")
    key = cli(tmp_path, "keys", "create", "--name", "t").stdout.strip().splitlines()[-1]
    port = free_port()
    server = start_server(tmp_path, port, "--config", str(tmp_path / "node.toml"))
    root = f"http://127.0.0.1:{port}"
    try:
        health = _first_answer(root + "/healthz", server)
        assert health.status_code == 503
        problem = health.json()["models"]["b3os/misnamed"]["problem"]
        assert "serves smollm2-llama-server, not 'qwen3'" in problem
        with anthropic.Anthropic(api_key=key, base_url=root + "/v1/infer",
                                 max_retries=0) as client, \
                pytest.raises(anthropic.APIStatusError) as refused:
            client.messages.create(model="b3os/misnamed", max_tokens=8, messages=HI)
        assert refused.value.status_code == 503
        assert refused.value.body["b3os"]["code"] == "upstream_model_missing"
        with openai.OpenAI(api_key=key, base_url=root + "/v1/infer",
                           max_retries=0) as client, \
                pytest.raises(openai.APIStatusError) as refused_too:
            client.chat.completions.create(model="b3os/misnamed", max_tokens=8, messages=HI)
        assert refused_too.value.status_code == 503
        assert refused_too.value.body["code"] == "upstream_model_missing"
    finally:
        server.terminate()
        log = server.communicate(timeout=30)[0]
    assert "qwen3 cannot be served: the engine at" in log


def _first_answer(url: str, process: subprocess.Popen[str]) -> httpx.Response:
    """The first answer from ``url`` whatever its status (a 503 is an answer here)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, "the node exited"
        try:
            return httpx.get(url, timeout=1)
        except httpx.HTTPError:
            time.sleep(0.2)
    raise AssertionError(f"{url} never answered")
