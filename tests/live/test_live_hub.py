"""Models from the Hub for real: the CLI pulls SmolLM2's GGUF from a local Hub
(``HF_ENDPOINT``, tests/support/hub_server.py), ``serve --model hf.co/…`` serves it, and both
SDKs talk to it. By hand: ``flock /tmp/b3os-heavy.lock .venv/bin/pytest
tests/live/test_live_hub.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from b3os_infer.node.cards import default_model_path
from support.gguf_split import split
from support.hub_server import HubFile, HubRepo, LocalHub, local_hub
from support.servers import cli, free_port, start_server, stop, wait_healthy

REPO = "HuggingFaceTB/SmolLM2-135M-Instruct-GGUF"
FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
NAME = f"hf.co/{REPO}:Q4_1"
SPLIT_REPO = "tests/SmolLM2-split-GGUF"


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalHub]:
    """SmolLM2's GGUF as one file, and cut in two as a split GGUF that llama.cpp loads."""
    parts = split(default_model_path(), 2, tmp_path_factory.mktemp("split"),
                  "SmolLM2-135M-Instruct-Q4_1")
    with local_hub({REPO: HubRepo({FILE: HubFile(default_model_path())}),
                    SPLIT_REPO: HubRepo({p.name: HubFile(p) for p in parts})}) as running:
        yield running


def hf_env(hub: LocalHub, home: Path) -> dict[str, str]:
    return {"HF_ENDPOINT": hub.url, "HF_HOME": str(home / "hf")}


def models_add(home: Path, hub: LocalHub, name: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "B3OS_INFER_HOME": str(home), **hf_env(hub, home)}
    return subprocess.run([sys.executable, "-m", "b3os_infer.cli", "models", "add", name],
                          env=env, capture_output=True, text=True, timeout=600, check=False)


def ask_both(root: str, key: str, model: str) -> tuple[str, str]:
    """One OpenAI chat completion and one Anthropic message on ``model``: their texts."""
    base = f"{root}/v1/infer"
    with openai.OpenAI(api_key=key, base_url=base, max_retries=0) as client:
        chat = client.chat.completions.create(
            model=model, max_tokens=16, temperature=0,
            messages=[{"role": "user", "content": "Name one river in Oregon."}])
    with anthropic.Anthropic(api_key=key, base_url=base, max_retries=0) as client:
        message = client.messages.create(
            model=model, max_tokens=16,
            messages=[{"role": "user", "content": "Name one river in Oregon."}])
    assert chat.model == model and message.model == model
    assert message.content[0].type == "text"
    return chat.choices[0].message.content or "", message.content[0].text


def test_models_add_pulls_the_verified_gguf_and_serve_answers_both_sdks_with_it(
        tmp_path: Path, hub: LocalHub) -> None:
    home = tmp_path / "home"
    added = models_add(home, hub, f"hf.co/{REPO}")
    assert added.returncode == 0, added.stderr[-3000:]
    gguf = home / "models" / "hf.co" / REPO / FILE
    assert added.stdout.startswith(f"installed {NAME}: {gguf}\n")
    assert gguf.read_bytes() == default_model_path().read_bytes()
    hub.seen.clear()

    key = cli(home, "keys", "create", "--name", "tests").stdout.strip().splitlines()[-1]
    port = free_port()
    root = f"http://127.0.0.1:{port}"
    process = start_server(home, port, "--model", f"hf.co/{REPO}:q4_1", env=hf_env(hub, home))
    try:
        wait_healthy(root, process, timeout=300)
        card = httpx.get(f"{root}/v1/infer/models/{NAME}",
                         headers={"Authorization": f"Bearer {key}"}).json()
        openai_text, anthropic_text = ask_both(root, key, NAME)
    finally:
        stop(process)
    # installed: serving asked the Hub nothing (not even huggingface_hub's agent registry)
    assert hub.seen == []
    assert card["id"] == NAME and card["b3os"]["kind"] == "chat"
    # the name comes from the GGUF's metadata (general.name), not from the Hub
    assert card["b3os"]["display_name"] == "Smollm2 135M 8k Lc100K Mix1 Ep2 (Q4_1)"
    assert openai_text.strip() and anthropic_text.strip()


def test_serve_of_a_hub_model_not_installed_pulls_it_first(
        tmp_path: Path, hub: LocalHub) -> None:
    home = tmp_path / "home"
    key = cli(home, "keys", "create", "--name", "tests").stdout.strip().splitlines()[-1]
    port = free_port()
    root = f"http://127.0.0.1:{port}"
    hub.seen.clear()
    process = start_server(home, port, "--model", f"hf.co/{REPO}", env=hf_env(hub, home))
    try:
        wait_healthy(root, process, timeout=300)
        openai_text, _ = ask_both(root, key, NAME)
    finally:
        stop(process)
    # (huggingface_hub itself also asks for /api/agent-harnesses once a day per HF_HOME)
    asked = [s.path for s in hub.seen if s.path != "/api/agent-harnesses"]
    assert [p.split("/")[1] for p in asked] == ["api", REPO.split("/")[0], "cdn"], asked
    assert openai_text.strip()
    listed = cli(home, "models", "list").stdout
    assert any(line.split()[:4] == [NAME, "98.4", "MB", "installed"]
               for line in listed.splitlines())


def test_serve_of_a_split_gguf_pulls_every_part_and_llama_cpp_serves_it_from_the_first(
        tmp_path: Path, hub: LocalHub) -> None:
    home = tmp_path / "home"
    added = models_add(home, hub, f"hf.co/{SPLIT_REPO}:q4_1")
    assert added.returncode == 0, added.stderr[-3000:]
    name = f"hf.co/{SPLIT_REPO}:Q4_1"
    folder = home / "models" / "hf.co" / SPLIT_REPO
    assert sorted(p.name for p in folder.glob("*.gguf")) == [
        "SmolLM2-135M-Instruct-Q4_1-00001-of-00002.gguf",
        "SmolLM2-135M-Instruct-Q4_1-00002-of-00002.gguf"]
    assert "2 file(s), SHA-256 checked" in added.stdout
    key = cli(home, "keys", "create", "--name", "tests").stdout.strip().splitlines()[-1]
    port = free_port()
    root = f"http://127.0.0.1:{port}"
    process = start_server(home, port, "--model", name, env=hf_env(hub, home))
    try:
        wait_healthy(root, process, timeout=300)
        openai_text, anthropic_text = ask_both(root, key, name)
    finally:
        stop(process)
    assert openai_text.strip() and anthropic_text.strip()
