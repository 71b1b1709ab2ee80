"""The Vercel AI SDK (npm `ai`, `@ai-sdk/openai`, `@ai-sdk/anthropic`) with its defaults:
`openai(model)` is the Responses API, `openai.chat(model)` Chat Completions."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from support.client_matrix import MATRIX

JS = Path(__file__).resolve().parents[2] / "js"
APIS = ["openai", "openai-chat", "anthropic"]
FLOWS = ["text", "stream", "tool"]


def run_flow(served, api: str, flow: str) -> dict:
    env = {**os.environ, "B3OS_BASE_URL": served.base_url, "B3OS_API_KEY": served.key,
           "B3OS_MODEL": served.model, "B3OS_MATRIX": MATRIX.as_json()}
    done = subprocess.run([str(JS / "node_modules" / ".bin" / "tsx"), "clients/vercel_ai.ts",
                           api, flow], cwd=JS, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("api", APIS)
def test_vercel_ai_generate_text_returns_the_models_answer(served, api):
    assert run_flow(served, api, "text")["text"] == MATRIX.text_answer


@pytest.mark.parametrize("api", APIS)
def test_vercel_ai_stream_text_arrives_in_pieces_that_join_to_the_answer(served, api):
    assert run_flow(served, api, "stream")["pieces"] > 1


@pytest.mark.parametrize("api", APIS)
def test_vercel_ai_runs_the_called_tool_and_answers_from_its_result(served, api):
    result = run_flow(served, api, "tool")
    assert (result["steps"], result["text"]) == (2, MATRIX.tool_answer)
