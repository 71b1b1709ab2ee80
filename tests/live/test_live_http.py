"""What every response carries, disconnects, and the first start."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import httpx

from support.servers import free_port, start_server, wait_healthy

MODEL = "b3os/smollm2-135m-instruct"
RID = re.compile(r"req_[0-9a-hjkmnp-tv-z]{26}")


def check_headers(response: httpx.Response) -> None:
    assert RID.fullmatch(response.headers["x-request-id"])
    assert response.headers["request-id"] == response.headers["x-request-id"]
    # the phases over when the headers left (docs/metrics.md), then total
    assert re.fullmatch(r"((load|queue|prefill|decode);dur=\d+(\.\d+)?, )*total;dur=\d+(\.\d+)?",
                        response.headers["server-timing"])


def test_headers_on_every_kind_of_response(live):
    key = {"x-api-key": live.key}
    body = {"model": MODEL, "max_tokens": 2, "messages": [{"role": "user", "content": "Hi"}]}
    responses = [
        httpx.get(live.root + "/healthz"),
        httpx.get(live.base_url + "/models", headers=key),
        httpx.get(live.base_url + "/models"),
        httpx.post(live.base_url + "/v1/messages", json=body, headers=key, timeout=60),
        httpx.post(live.base_url + "/v1/messages", json={**body, "model": "x"}, headers=key),
        httpx.get(live.base_url + "/nope", headers=key),
        httpx.get(live.root + "/"),
    ]
    with httpx.stream("POST", live.base_url + "/v1/messages", json={**body, "stream": True},
                      headers=key, timeout=60) as streamed:
        streamed.read()
        responses.append(streamed)
    for response in responses:
        check_headers(response)


def test_a_disconnected_stream_frees_its_sequence(live):
    key = {"x-api-key": live.key}
    body = {"model": MODEL, "max_tokens": 4000, "stream": True,
            "messages": [{"role": "user", "content": "Write a very long story."}]}
    with httpx.stream("POST", live.base_url + "/v1/messages", json=body, headers=key,
                      timeout=60) as response:
        for _ in response.iter_lines():
            break
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        state = httpx.get(live.root + "/healthz").json()["models"][MODEL]
        if state["active"] == 0 and state["waiting"] == 0:
            return
        time.sleep(0.1)
    raise AssertionError(f"the sequence was not freed: {state}")


def test_first_start_makes_a_key_and_prints_exports(tmp_path):
    port = free_port()
    process = start_server(tmp_path, port)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", process)
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=30)
    key = re.search(r'^export B3OS_API_KEY="(b3os_\S+)"$', output, re.M)
    assert key, output
    base = f"http://127.0.0.1:{port}/v1/infer"
    assert f'export ANTHROPIC_BASE_URL="{base}"' in output
    assert f'export OPENAI_BASE_URL="{base}"' in output
    listed = subprocess.run([sys.executable, "-m", "b3os_infer.cli", "keys", "list"],
                            env={**os.environ, "B3OS_INFER_HOME": str(tmp_path)},
                            capture_output=True, text=True, check=True).stdout
    assert "default" in listed and key.group(1) not in listed


def test_b3os_infer_status_shows_the_running_servers_models_device_window_and_memory(live):
    env = {**os.environ, "B3OS_URL": live.root, "B3OS_API_KEY": live.key}
    done = subprocess.run([sys.executable, "-m", "b3os_infer.cli", "status"], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines()[1:3]}
    chat = rows["b3os/smollm2-135m-instruct"]
    assert chat[1:4] == ["chat", "ready", "cpu"]
    window = httpx.get(f"{live.base_url}/models", headers={
        "Authorization": f"Bearer {live.key}"}).json()["data"]
    served = {m["id"]: m["b3os"].get("context_window") for m in window}
    assert chat[4] == f"{served['b3os/smollm2-135m-instruct']:,}"
    assert rows["b3os/all-minilm-l6-v2"][1:3] == ["embedding", "ready"]
    memory = re.search(r"resident memory ([\d,]+) MiB", done.stdout)
    assert memory and int(memory[1].replace(",", "")) > 50
