"""A batch survives its server: killed part-way, restarted, it completes.

The real server process (``b3os-infer serve``) on a scripted model with slow replies, so
no model loads; the batch's state is in the home's SQLite database.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import anthropic

from support.servers import cli, free_port, start_server, stop, wait_healthy

MODEL = "b3os/scripted"
REQUESTS = 8


def _config(tmp_path: Path) -> Path:
    script = tmp_path / "replies.json"
    script.write_text(json.dumps({"replies": [
        {"text": "one two three four five six seven eight", "delay_s": 0.05,
         "repeat": True}]}))
    config = tmp_path / "serve.toml"
    config.write_text(f'[model]\nid = "{MODEL}"\nengine = "scripted"\nscript = "{script}"\n\n'
                      "[batches]\nconcurrency = 2\n")
    return config


def _done(home: Path) -> int:
    with sqlite3.connect(home / "b3os.sqlite3") as db:
        (count,) = db.execute("SELECT count(*) FROM batch_items "
                              "WHERE state != 'pending'").fetchone()
    return int(count)


def _serve(home: Path, config: Path):  # type: ignore[no-untyped-def]
    port = free_port()
    process = start_server(home, port, "--config", str(config))
    root = f"http://127.0.0.1:{port}"
    wait_healthy(root, process)
    return process, root


def test_a_batch_killed_part_way_resumes_after_a_restart_and_completes(tmp_path):
    home, config = tmp_path / "home", _config(tmp_path)
    key = cli(home, "keys", "create", "--name", "tests").stdout.strip().splitlines()[-1]
    process, root = _serve(home, config)
    try:
        client = anthropic.Anthropic(api_key=key, base_url=root + "/v1/infer", max_retries=0)
        batch = client.messages.batches.create(requests=[
            {"custom_id": f"r{i}", "params": {"model": MODEL, "max_tokens": 16, "messages": [
                {"role": "user", "content": f"job {i}"}]}} for i in range(REQUESTS)])
        deadline = time.monotonic() + 60
        while _done(home) == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        process.kill()   # no shutdown: whatever ran at this moment is cut off
        process.wait()
        before = _done(home)
        assert 0 < before < REQUESTS
    finally:
        stop(process)
    process, root = _serve(home, config)
    try:
        client = anthropic.Anthropic(api_key=key, base_url=root + "/v1/infer", max_retries=0)
        deadline = time.monotonic() + 60
        while client.messages.batches.retrieve(batch.id).processing_status != "ended":
            assert time.monotonic() < deadline, "the batch did not end after the restart"
            time.sleep(0.1)
        ended = client.messages.batches.retrieve(batch.id)
        assert ended.request_counts.succeeded == REQUESTS
        results = {r.custom_id: r.result for r in client.messages.batches.results(batch.id)}
        assert sorted(results) == sorted(f"r{i}" for i in range(REQUESTS))
        assert all(r.type == "succeeded" and r.message.content[0].text ==  # type: ignore[union-attr]
                   "one two three four five six seven eight" for r in results.values())
    finally:
        stop(process)
