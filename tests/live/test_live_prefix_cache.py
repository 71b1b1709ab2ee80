"""The prefix cache as clients see it: usage reports the cached tokens, across
conversations, across a client that gave up during prefill, and across a restart."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import anthropic
import httpx
import pytest

from support.servers import LiveServer, cli, free_port, start_server, stop, wait_healthy

MODEL = "b3os/smollm2-135m-instruct"


def document(tag: str, clauses: int = 200) -> str:
    """A long text no other test sends (``tag`` makes it unique from its first words)."""
    return f"Lease {tag}. " + " ".join(
        f"Clause {i}: the tenant of {tag} keeps the lantern lit on night {i}."
        for i in range(clauses))


def test_two_conversations_with_the_same_long_system_prompt_share_it(
        anthropic_client: anthropic.Anthropic):
    system = document("shared-system", 100)
    first = anthropic_client.messages.create(
        model=MODEL, max_tokens=4, system=system,
        messages=[{"role": "user", "content": "Which clause mentions night 3?"}])
    second = anthropic_client.messages.create(
        model=MODEL, max_tokens=4, system=system,
        messages=[{"role": "user", "content": "Summarise the lease in one line."}])
    assert first.usage.cache_read_input_tokens == 0
    cached = second.usage.cache_read_input_tokens
    assert cached is not None
    # Anthropic's input_tokens are those not read from the cache: here, the question's
    assert cached > 1800 and second.usage.input_tokens < 0.1 * cached


def stream_until_started(live: LiveServer, body: dict[str, object], wait: float) -> None:
    """Start a streamed message, read up to ``message_start`` (the request is admitted and
    its prompt is being computed), then give up ``wait`` seconds later, as a client would."""
    headers = {"x-api-key": live.key}
    with httpx.stream("POST", live.base_url + "/v1/messages", json=body, headers=headers,
                      timeout=120) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data:") and json.loads(line[5:])["type"] == "message_start":
                break
        time.sleep(wait)


def test_a_stream_closed_during_prefill_leaves_its_prompt_cached_for_the_retry(live):
    body = {"model": MODEL, "max_tokens": 4, "stream": True,
            "messages": [{"role": "user", "content": document("abandoned", 160)}]}
    stream_until_started(live, body, wait=2.0)
    with anthropic.Anthropic(auth_token=live.key, base_url=live.base_url,
                             max_retries=0) as client:
        retry = client.messages.create(**{**body, "stream": False})  # type: ignore[arg-type]
    cached = retry.usage.cache_read_input_tokens
    assert cached is not None
    total = retry.usage.input_tokens + cached   # input_tokens: those not read from the cache
    assert total > 3000
    assert 0 < cached and retry.usage.input_tokens > 1, "the rest was computed on the retry"


@pytest.fixture
def restartable(tmp_path: Path) -> Iterator[tuple[Path, list[object]]]:
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "b3os.toml").write_text(
        "[engine]\nparallel = 2\nprefix_cache_min_tokens = 512\n"
        "[model]\ncontext_window = 8192\n")
    processes: list[object] = []
    yield tmp_path, processes
    for process in processes:
        stop(process)  # type: ignore[arg-type]


def test_a_long_prompt_is_cached_across_a_restart_of_the_server(restartable):
    folder, processes = restartable
    home = folder / "home"
    key = cli(home, "keys", "create", "--name", "t").stdout.strip().splitlines()[-1]
    body = {"model": MODEL, "max_tokens": 4, "system": document("restart", 100),
            "messages": [{"role": "user", "content": "Which clause mentions night 5?"}]}

    def serve_once() -> anthropic.types.Usage:
        port = free_port()
        process = start_server(home, port, "--config", str(folder / "b3os.toml"))
        processes.append(process)
        root = f"http://127.0.0.1:{port}"
        wait_healthy(root, process)
        with anthropic.Anthropic(auth_token=key, base_url=root + "/v1/infer",
                                 max_retries=0) as client:
            usage = client.messages.create(**body).usage  # type: ignore[arg-type]
        stop(process)   # a clean stop: the prefix file is written before it exits
        processes.remove(process)
        return usage

    before = serve_once()
    assert before.cache_read_input_tokens == 0 and before.input_tokens > 1800
    assert list((home / "prefix-cache").glob("*/*.kv")), "the long prefix was saved"
    after = serve_once()
    # input_tokens: those not read from the cache (the last prompt token is always one)
    assert (after.input_tokens, after.cache_read_input_tokens) == (1, before.input_tokens - 1)
