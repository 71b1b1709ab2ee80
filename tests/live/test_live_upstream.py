"""One node, four engines: the embedded llama.cpp, llama-cpp-python's own OpenAI server,
llama.cpp's ``llama-server`` (built by ``make llama-server``) and vLLM's CPU build (where
``bench/vllm_upstream.sh`` installed it; its cases skip and say why elsewhere).

The llama.cpp upstreams serve the same GGUF as the embedded model; vLLM serves the 0.5B
pack converted to safetensors, with the pack's GGUF as the node's tokenizer. Each is a real
engine over HTTP (no mock); the node templates, counts and parses for all, so both APIs must
behave the same on each. Each llama.cpp engine gets one thread: two llama.cpp processes on
two cores would slow each other badly (the tests take turns, so only one of them works at a
time).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import anthropic
import httpx
import jsonschema
import openai
import pytest

from b3os_infer.node.cards import default_model_path
from support import vllm
from support.binaries import llama_server
from support.servers import LiveServer, cli, free_port, start_server, stop, wait_healthy, wait_ready

EMBEDDED = "b3os/smollm2-135m-instruct"
UPSTREAM = "b3os/smollm2-upstream"
LLAMA_SERVER = "b3os/smollm2-llama-server"
VLLM = "b3os/qwen-vllm"
NO_VLLM = vllm.missing()
ON_VLLM = pytest.param(VLLM, marks=pytest.mark.skipif(NO_VLLM is not None,
                                                      reason=f"vLLM: {NO_VLLM}"))
UPSTREAMS = [UPSTREAM, LLAMA_SERVER, ON_VLLM]
BOTH = [EMBEDDED, *UPSTREAMS]
LISTED = {EMBEDDED, UPSTREAM, LLAMA_SERVER} | ({VLLM} if NO_VLLM is None else set())
HI = [{"role": "user", "content": "Name one river in Oregon."}]
WEATHER = {"name": "get_weather", "description": "Get the current weather in a city",
           "input_schema": {"type": "object", "properties": {
               "city": {"type": "string"},
               "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
               "required": ["city", "unit"]}}
GREEDY = {"top_k": 1}



def _llama_cpp_python(port: int) -> list[str]:
    return [sys.executable, "-m", "llama_cpp.server", "--model", str(default_model_path()),
            "--model_alias", "smollm2-upstream", "--n_threads", "1", "--n_threads_batch", "1",
            "--n_ctx", "4096", "--host", "127.0.0.1", "--port", str(port)]


def _llama_server(port: int) -> list[str]:
    return [str(llama_server()), "--model", str(default_model_path()),
            "--alias", "smollm2-llama-server", "--threads", "1", "--threads-batch", "1",
            "--ctx-size", "4096", "--parallel", "1", "--host", "127.0.0.1",
            "--port", str(port)]


def _config(engine_url: str, llama_server_url: str, vllm_url: str | None) -> str:
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
""" + (_vllm_model(vllm_url) if vllm_url else "")


def _vllm_model(url: str, model_id: str = VLLM, window: int = vllm.WINDOW) -> str:
    return f"""
[[models]]
id = "{model_id}"
display_name = "Qwen2.5-Coder 0.5B on vLLM"
engine = "upstream"
flavour = "vllm"
url = "{url}"
served_name = "{vllm.SERVED}"
tokenizer = "{vllm.pack_gguf()}"
context_window = {window}
"""


@dataclass
class _Engines:
    """The engine processes behind the node, and where each listens."""

    home: Path
    processes: list[subprocess.Popen[str]] = field(default_factory=list)
    urls: dict[str, str] = field(default_factory=dict)
    ready_paths: dict[str, str] = field(default_factory=dict)

    def start(self, name: str, command: Callable[[int], list[str]], ready_path: str,
              env: dict[str, str] | None = None) -> None:
        port = free_port()
        log = self.home / f"{name}.log"
        with log.open("w") as out:   # a file: llama.cpp's loader alone would fill a pipe
            self.processes.append(subprocess.Popen(command(port), stdout=out, env=env,
                                                   stderr=subprocess.STDOUT, text=True))
        self.urls[name] = f"http://127.0.0.1:{port}"
        self.ready_paths[name] = ready_path

    def wait(self, name: str, timeout: float = 120) -> None:
        process = self.processes[list(self.urls).index(name)]
        log = self.home / f"{name}.log"
        wait_ready(self.urls[name] + self.ready_paths[name], process, log.read_text, timeout)

    def stop_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                stop(process)


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Engines]:
    # vLLM first: it loads for a minute or two while the others start
    running = _Engines(tmp_path_factory.mktemp("engines"))
    try:
        if NO_VLLM is None:
            running.start("vllm", vllm.command, "/v1/models", vllm.environment())
        running.start("llama-cpp-python", _llama_cpp_python, "/v1/models")
        running.wait("llama-cpp-python")
        running.start("llama-server", _llama_server, "/health")
        running.wait("llama-server")
        if NO_VLLM is None:
            running.wait("vllm", timeout=900)
        yield running
    finally:
        running.stop_all()


@pytest.fixture(scope="module")
def node(engines: _Engines, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    home = tmp_path_factory.mktemp("upstream")
    urls = engines.urls
    (home / "node.toml").write_text(_config(urls["llama-cpp-python"], urls["llama-server"],
                                            urls.get("vllm")))
    key = cli(home, "keys", "create", "--name", "t").stdout.strip().splitlines()[-1]
    port = free_port()
    server = start_server(home, port, "--config", str(home / "node.toml"))
    try:
        root = f"http://127.0.0.1:{port}"
        wait_healthy(root, server)
        yield LiveServer(root=root, key=key, home=home)
        server.terminate()
        log = server.communicate(timeout=30)[0]
        assert "counted" not in log, log   # the engine saw exactly the node's prompt tokens
    finally:
        if server.poll() is None:
            stop(server)


@pytest.fixture
def claude(node):
    with anthropic.Anthropic(api_key=node.key, base_url=node.base_url, max_retries=0) as c:
        yield c


@pytest.fixture
def gpt(node):
    with openai.OpenAI(api_key=node.key, base_url=node.base_url, max_retries=0) as c:
        yield c


def test_both_models_are_listed(claude, gpt):
    assert {m.id for m in gpt.models.list().data} == LISTED
    assert {m.id for m in claude.models.list().data} == LISTED


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


@pytest.mark.parametrize("model", BOTH)
def test_the_grammar_reaches_the_engine_and_forces_a_value_no_model_would_write(claude, model):
    # valid JSON alone could be the model's own doing; this value can only come from the
    # grammar (an engine that ignored the field, as vLLM ignores unknown ones, fails here)
    schema = {"type": "object", "properties": {"word": {"enum": ["xyzzy-plugh-17"]}},
              "required": ["word"], "additionalProperties": False}
    message = claude.messages.create(
        model=model, max_tokens=30, messages=HI, extra_body=GREEDY,
        output_config={"format": {"type": "json_schema", "schema": schema}})
    assert json.loads(message.content[0].text) == {"word": "xyzzy-plugh-17"}


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


@pytest.mark.parametrize("model", [LLAMA_SERVER, ON_VLLM])
def test_a_repeated_prefix_is_reported_as_cached_on_both_apis(claude, gpt, model):
    # the cached tokens llama-server's and vLLM's usage report (llama-cpp-python's server
    # reports none; the embedded engine's prefix cache has its own tests)
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
        engines, tmp_path):
    llama_url = engines.urls["llama-server"]
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


needs_vllm = pytest.mark.skipif(NO_VLLM is not None, reason=f"vLLM: {NO_VLLM}")


def _vllm_settled(engines: _Engines) -> bool:
    """vLLM runs no request and has stopped generating (its token count holds still)."""
    url = engines.urls["vllm"]
    if vllm.metric(url, "vllm:num_requests_running") != 0:
        return False
    before = vllm.metric(url, "vllm:generation_tokens_total")
    time.sleep(1)
    return vllm.metric(url, "vllm:generation_tokens_total") == before


def _until(check: Callable[[], bool], seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


@needs_vllm
def test_a_closed_stream_stops_the_generation_inside_vllm(engines, claude):
    # vLLM batches: a next request would be answered even if the abandoned one ran on (2,000
    # tokens, over a minute here), so the proof is vLLM's own gauge and token counter
    url = engines.urls["vllm"]
    before = vllm.metric(url, "vllm:generation_tokens_total")
    with claude.messages.stream(model=VLLM, max_tokens=2000, messages=[
            {"role": "user", "content": "Write a very long story about a river."}],
            extra_body={"temperature": 1.0}) as stream:
        for _ in stream.text_stream:
            break
    assert _until(lambda: _vllm_settled(engines))
    assert vllm.metric(url, "vllm:generation_tokens_total") - before < 200


@needs_vllm
def test_a_stop_sequence_ends_the_reply_and_the_generation_inside_vllm(engines, claude, gpt):
    url = engines.urls["vllm"]
    ask = [{"role": "user", "content": "Count from 1 to 300, separated by commas."}]
    before = vllm.metric(url, "vllm:generation_tokens_total")
    message = claude.messages.create(model=VLLM, max_tokens=1500, messages=ask,
                                     stop_sequences=["17"], extra_body=GREEDY)
    assert message.stop_reason == "stop_sequence" and message.stop_sequence == "17"
    assert "17" not in message.content[0].text and "16" in message.content[0].text
    chat = gpt.chat.completions.create(model=VLLM, max_tokens=1500, messages=ask,
                                       stop=["17"], temperature=0)
    assert chat.choices[0].finish_reason == "stop"
    assert chat.choices[0].message.content == message.content[0].text
    assert _until(lambda: _vllm_settled(engines))
    # two replies of about 50 tokens each, not 1,500
    assert vllm.metric(url, "vllm:generation_tokens_total") - before < 300


@needs_vllm
def test_an_auto_tool_call_on_vllm_is_spliced_into_a_valid_call(claude):
    # tool_choice auto: the reply runs free until <tool_call>, then a second request
    # generates the call under the tool grammar (vLLM takes one grammar per request)
    message = claude.messages.create(model=VLLM, max_tokens=80, tools=[WEATHER],
                                     messages=[{"role": "user",
                                                "content": "What is the weather in Paris?"}],
                                     extra_body=GREEDY)
    assert message.stop_reason == "tool_use"
    (call,) = [b for b in message.content if b.type == "tool_use"]
    assert call.name == "get_weather"
    jsonschema.validate(call.input, WEATHER["input_schema"])


@needs_vllm
def test_vllm_log_probabilities_name_each_sampled_token(gpt):
    chat = gpt.chat.completions.create(model=VLLM, max_tokens=5, messages=HI, temperature=0,
                                       logprobs=True, top_logprobs=3)
    entries = chat.choices[0].logprobs.content
    assert len(entries) == chat.usage.completion_tokens
    assert "".join(e.token for e in entries) == chat.choices[0].message.content
    for entry in entries:   # greedy: the sampled token is the most likely one
        assert len(entry.top_logprobs) == 3
        assert entry.top_logprobs[0].token == entry.token
        assert entry.top_logprobs[0].logprob == pytest.approx(entry.logprob, abs=1e-3)


@needs_vllm
def test_a_node_configured_past_vllm_max_model_len_says_so_and_answers_503(engines, tmp_path):
    (tmp_path / "node.toml").write_text(_vllm_model(engines.urls["vllm"], "b3os/too-long",
                                                    window=2 * vllm.WINDOW))
    key = cli(tmp_path, "keys", "create", "--name", "t").stdout.strip().splitlines()[-1]
    port = free_port()
    server = start_server(tmp_path, port, "--config", str(tmp_path / "node.toml"))
    root = f"http://127.0.0.1:{port}"
    try:
        health = _first_answer(root + "/healthz", server)
        assert health.status_code == 503
        assert "with a window of 4,096 tokens, less than context_window = 8,192" in \
            health.json()["models"]["b3os/too-long"]["problem"]
        with anthropic.Anthropic(api_key=key, base_url=root + "/v1/infer",
                                 max_retries=0) as client, \
                pytest.raises(anthropic.APIStatusError) as refused:
            client.messages.create(model="b3os/too-long", max_tokens=8, messages=HI)
        assert refused.value.status_code == 503
        assert refused.value.body["b3os"]["code"] == "upstream_window_too_small"
    finally:
        stop(server)
