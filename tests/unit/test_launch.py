"""``b3os-infer claude`` / ``codex``: the command and environment each agent is started with."""

from __future__ import annotations

import json
import stat
import tomllib
from pathlib import Path
from typing import Any

import httpx
import pytest

from b3os_infer.cli import main
from b3os_infer.launch import (
    IDLE_TIMEOUT_MS,
    LaunchError,
    ServedModel,
    Target,
    chat_models,
    claude_command,
    codex_command,
    command,
    named_model,
)

TARGET = Target(url="http://10.1.2.3:9000", key="b3os_k")
SMALL = ServedModel(id="b3os/small", context_window=16_384, max_output_tokens=8_192)
CODER = ServedModel(id="b3os/coder", context_window=32_768, max_output_tokens=8_192)
LISTING = {"object": "list", "data": [
    {"id": "b3os/all-minilm-l6-v2", "object": "model",
     "b3os": {"kind": "embedding", "dimensions": 384}},
    {"id": "b3os/small", "object": "model",
     "b3os": {"kind": "chat", "context_window": 16_384, "max_output_tokens": 8_192}},
    {"id": "b3os/coder", "object": "model",
     "b3os": {"kind": "chat", "context_window": 32_768, "max_output_tokens": 8_192}},
]}


def listing_transport(seen: list[httpx.Request], status: int = 200) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if status != 200:
            return httpx.Response(status, json={"error": {"message": "invalid key"}})
        return httpx.Response(200, json=LISTING)
    return httpx.MockTransport(answer)


def test_the_listing_is_read_with_the_key_and_only_chat_models_are_kept():
    seen: list[httpx.Request] = []
    assert chat_models(TARGET, listing_transport(seen)) == [SMALL, CODER]
    assert str(seen[0].url) == "http://10.1.2.3:9000/v1/infer/models"
    assert seen[0].headers["authorization"] == "Bearer b3os_k"


def test_a_refused_listing_is_an_error_with_the_servers_message():
    with pytest.raises(LaunchError, match="401 to the model listing: invalid key"):
        chat_models(TARGET, listing_transport([], status=401))


def test_no_server_is_an_error_that_says_how_to_start_one():
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)
    with pytest.raises(LaunchError, match="no server answers at .*b3os-infer serve"):
        chat_models(TARGET, httpx.MockTransport(refuse))


def test_the_target_comes_from_b3os_url_and_b3os_api_key_with_a_local_default():
    assert Target.from_env({"B3OS_API_KEY": "k"}) == Target("http://127.0.0.1:8000", "k")
    assert Target.from_env({"B3OS_API_KEY": "k", "B3OS_URL": "http://h:1/"}).url == "http://h:1"
    with pytest.raises(LaunchError, match="B3OS_API_KEY is not set"):
        Target.from_env({})


@pytest.mark.parametrize(("args", "found"), [
    (["-p", "hi"], None),
    (["--model", "b3os/coder", "-p", "hi"], "b3os/coder"),
    (["-p", "hi", "--model=b3os/coder"], "b3os/coder"),
])
def test_the_model_named_in_the_agents_own_arguments_is_found(args, found):
    assert named_model(args, ("--model",)) == found


def test_claude_gets_the_server_the_key_and_the_first_models_limits():
    ready = claude_command(TARGET, ["-p", "hi"], [SMALL, CODER],
                           {"PATH": "/bin", "ANTHROPIC_API_KEY": "sk-ant-other"}, "/bin/claude")
    assert ready.argv == ["/bin/claude", "--model", "b3os/small", "-p", "hi"]
    assert "ANTHROPIC_API_KEY" not in ready.env and ready.env["PATH"] == "/bin"
    assert ready.env["ANTHROPIC_BASE_URL"] == "http://10.1.2.3:9000/v1/infer"
    assert ready.env["ANTHROPIC_AUTH_TOKEN"] == "b3os_k"
    assert ready.env["CLAUDE_CODE_MAX_CONTEXT_TOKENS"] == "16384"
    assert ready.env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] == "8192"
    assert ready.env["CLAUDE_STREAM_IDLE_TIMEOUT_MS"] == str(IDLE_TIMEOUT_MS)
    assert ready.env["ANTHROPIC_SMALL_FAST_MODEL"] == "b3os/small"


def test_claude_keeps_a_model_named_in_its_arguments_and_gets_that_models_limits():
    ready = claude_command(TARGET, ["--model", "b3os/coder"], [SMALL, CODER], {}, "claude")
    assert ready.argv == ["claude", "--model", "b3os/coder"]
    assert ready.env["CLAUDE_CODE_MAX_CONTEXT_TOKENS"] == "32768"


def test_a_model_the_server_does_not_serve_is_an_error_listing_those_it_does():
    with pytest.raises(LaunchError, match="claude-opus-4 is not served there; the chat models "
                       "are: b3os/small, b3os/coder"):
        claude_command(TARGET, ["--model", "claude-opus-4"], [SMALL, CODER], {}, "claude")


def overrides(argv: list[str]) -> dict[str, Any]:
    """Codex's `-c key=value` flags read back as TOML, as Codex reads them."""
    pairs = [argv[i + 1] for i, arg in enumerate(argv) if arg == "-c"]
    return {key: tomllib.loads(f"v = {value}")["v"]
            for key, _, value in (pair.partition("=") for pair in pairs)}


def test_codex_gets_a_responses_provider_for_the_server_and_the_models_window():
    env = {"PATH": "/bin", "B3OS_INFER_HOME": "/srv/b3os"}
    ready = codex_command(TARGET, ["exec", "-m", "b3os/coder", "Read it"], [SMALL, CODER],
                          env, "/bin/codex")
    assert ready.argv[0] == "/bin/codex" and ready.argv[-4:] == ["exec", "-m", "b3os/coder",
                                                                 "Read it"]
    catalog = overrides(ready.argv).pop("model_catalog_json")
    assert catalog.startswith("/srv/b3os/codex/models-") and catalog.endswith(".json")
    assert {k: v for k, v in overrides(ready.argv).items() if k != "model_catalog_json"} == {
        "model": "b3os/coder", "model_provider": "b3os",
        "model_providers.b3os.name": "B3OS Infer",
        "model_providers.b3os.base_url": "http://10.1.2.3:9000/v1/infer",
        "model_providers.b3os.env_key": "B3OS_API_KEY",
        "model_providers.b3os.wire_api": "responses",
        "model_providers.b3os.stream_idle_timeout_ms": IDLE_TIMEOUT_MS,
        "model_context_window": 32_768, "model_auto_compact_token_limit": 32_768 - 8_192}
    assert ready.env == {**env, "B3OS_API_KEY": "b3os_k"}


def test_codex_gets_a_model_catalog_with_every_served_model_so_none_uses_fallback_metadata():
    vision = ServedModel(id="b3os/eyes", context_window=8_192, max_output_tokens=2_048,
                         vision=True)
    ready = codex_command(TARGET, [], [SMALL, vision], {"B3OS_INFER_HOME": "/h"}, "/bin/codex")
    [(path, text)] = ready.files.items()
    assert str(path) == overrides(ready.argv)["model_catalog_json"]
    models = json.loads(text)["models"]
    assert [(m["slug"], m["priority"], m["context_window"], m["max_context_window"],
             m["input_modalities"]) for m in models] == [
        ("b3os/small", 1, 16_384, 16_384, ["text"]),
        ("b3os/eyes", 2, 8_192, 8_192, ["text", "image"])]
    assert all(m["base_instructions"] and m["shell_type"] == "default" for m in models)


def test_each_server_gets_its_own_codex_catalog_file():
    other = Target(url="http://127.0.0.1:8000", key="k")
    first = codex_command(TARGET, [], [SMALL], {"B3OS_INFER_HOME": "/h"}, "/bin/codex")
    second = codex_command(other, [], [SMALL], {"B3OS_INFER_HOME": "/h"}, "/bin/codex")
    assert set(first.files).isdisjoint(second.files)


def test_the_listing_says_which_models_read_images():
    listing = {"data": [{"id": "m", "b3os": {"kind": "chat", "context_window": 10,
                                             "max_output_tokens": 5,
                                             "capabilities": {"vision": True}}}]}
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=listing))
    assert chat_models(TARGET, transport)[0].vision


def test_a_missing_agent_cli_is_an_error_with_the_npm_command(tmp_path: Path):
    with pytest.raises(LaunchError, match="npm install -g @openai/codex"):
        command("codex", [], {"PATH": str(tmp_path), "B3OS_API_KEY": "k"})


def test_the_cli_prints_the_launch_error_and_exits_2(tmp_path: Path, monkeypatch, capsys):
    fake = tmp_path / "claude"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("B3OS_API_KEY", raising=False)
    assert main(["claude", "-p", "hi"]) == 2
    assert "b3os-infer claude: B3OS_API_KEY is not set" in capsys.readouterr().err

