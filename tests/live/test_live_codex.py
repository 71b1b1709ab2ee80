"""Codex CLI against a real server process, configured with only the README's provider
config (its `base_url` pointed at the server's port).

The server serves the scripted engine under the default model's id, the way a capable
model would answer Codex: it calls Codex's shell tool (`exec_command`), Codex runs the
command and sends its output back, and the model answers from it. Codex's own request
(its system prompt, a dozen tools, a namespace, web search) goes through unchanged.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.servers import LiveServer, cli, free_port, start_server, stop, wait_healthy

ROOT = Path(__file__).resolve().parents[2]
CODEX = ROOT / "tests" / "js" / "node_modules" / ".bin" / "codex"
MODEL = "b3os/smollm2-135m-instruct"
RIVER = "The river is the Willamette."
NO_METADATA = "Model metadata for"
GREETING = "Hello from Codex"


def readme_config() -> str:
    """The README's Codex CLI config, as a user would copy it."""
    section = (ROOT / "README.md").read_text().split("### Codex CLI", 1)[1]
    found = re.search(r"^```toml\n(.*?)^```", section, re.S | re.M)
    assert found, "the README's Codex CLI section lost its toml block"
    return found.group(1)


def test_the_readme_config_names_this_server_and_the_responses_wire():
    config = tomllib.loads(readme_config())
    assert config["model"] == MODEL and config["model_provider"] == "b3os"
    provider = config["model_providers"]["b3os"]
    assert provider["base_url"] == "http://127.0.0.1:8000/v1/infer"
    assert (provider["env_key"], provider["wire_api"]) == ("B3OS_API_KEY", "responses")


def shell(command: str, think: str) -> str:
    call = {"name": "exec_command", "arguments": {"cmd": command}}
    return f"{think}\n\n<tool_call>\n{json.dumps(call)}\n</tool_call>"


SCRIPT = {"template": "native", "context_window": 400_000, "replies": [
    {"text": shell("cat notes.txt", "I will read the file."),
     "when": {"last_user_contains": "Read the file notes.txt"}},
    {"text": "The file says: " + RIVER, "when": {"last_user_contains": "Willamette"}},
    {"text": shell(f"printf '{GREETING}\\n' > hello.txt && echo wrote hello.txt",
                   "I will write the file."),
     "when": {"last_user_contains": "Create the file hello.txt"}},
    {"text": "I created hello.txt.", "when": {"last_user_contains": "wrote hello.txt"}},
    {"text": "The script has no answer for this.", "repeat": True},
]}


@pytest.fixture
def scripted_live(tmp_path: Path) -> Iterator[LiveServer]:
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT))
    (tmp_path / "b3os.toml").write_text(f'[model]\nid = "{MODEL}"\nengine = "scripted"\n'
                                        'script = "script.json"\n')
    key = cli(home, "keys", "create", "--name", "codex").stdout.strip().splitlines()[-1]
    port = free_port()
    process = start_server(home, port, "--config", str(tmp_path / "b3os.toml"))
    root = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(root, process)
        yield LiveServer(root=root, key=key, home=home)
    finally:
        stop(process)


def codex(live: LiveServer, tmp_path: Path, prompt: str, program: Path = CODEX
          ) -> tuple[str, list[dict], str]:
    """``codex exec`` in a work directory; its last message, its JSON events and all it
    printed."""
    codex_home, work = tmp_path / "codex", tmp_path / "work"
    codex_home.mkdir()
    config = readme_config().replace("http://127.0.0.1:8000/v1/infer", live.base_url)
    (codex_home / "config.toml").write_text(config)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "CODEX_HOME": str(codex_home),
           "B3OS_API_KEY": live.key}
    last = tmp_path / "last.txt"
    done = subprocess.run(
        [str(program), "exec", "--skip-git-repo-check", "--ephemeral", "--json",
         "--dangerously-bypass-approvals-and-sandbox", "-C", str(work), "-o", str(last),
         prompt], env=env, cwd=work, capture_output=True, text=True, timeout=300)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0, done.stdout + done.stderr
    return last.read_text().strip(), events, done.stdout + done.stderr


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "work").mkdir()
    return tmp_path / "work"


def commands(events: list[dict]) -> list[dict]:
    return [e["item"] for e in events if e.get("type") == "item.completed"
            and e["item"].get("type") == "command_execution"]


def test_codex_runs_a_shell_command_to_read_a_file_and_answers_from_it(
        scripted_live, tmp_path, work, codex_cli):
    (work / "notes.txt").write_text(RIVER + "\n")
    answer, events, printed = codex(scripted_live, tmp_path, "Read the file notes.txt and "
                                    "tell me the river.", codex_cli.path)
    ran = commands(events)
    assert [("cat notes.txt" in c["command"], c.get("exit_code")) for c in ran] == \
        [(True, 0)], events
    assert "Willamette" in ran[0]["aggregated_output"]
    assert answer == "The file says: " + RIVER
    # the README's config names no model catalog: Codex falls back to metadata of its own
    assert NO_METADATA in printed


def test_codex_creates_a_file(scripted_live, tmp_path, work, codex_cli):
    answer, events, _ = codex(scripted_live, tmp_path, "Create the file hello.txt with a "
                              "greeting.", codex_cli.path)
    assert (work / "hello.txt").read_text() == GREETING + "\n"
    assert answer == "I created hello.txt."
    assert [c.get("exit_code") for c in commands(events)] == [0]


def test_b3os_infer_codex_reads_a_file_with_no_codex_config_and_knows_the_models_metadata(
        scripted_live, tmp_path, work, codex_cli):
    (work / "notes.txt").write_text(RIVER + "\n")
    codex_home = tmp_path / "empty-codex-home"
    codex_home.mkdir()
    env = {"PATH": f"{codex_cli.path.parent}:{os.environ['PATH']}", "HOME": str(tmp_path),
           "CODEX_HOME": str(codex_home), "B3OS_URL": scripted_live.root,
           "B3OS_API_KEY": scripted_live.key}
    last = tmp_path / "last.txt"
    done = subprocess.run(
        [str(Path(sys.executable).parent / "b3os-infer"), "codex", "exec",
         "--skip-git-repo-check", "--ephemeral", "--json",
         "--dangerously-bypass-approvals-and-sandbox", "-C", str(work), "-o", str(last),
         "Read the file notes.txt and tell me the river."],
        env=env, cwd=work, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [("cat notes.txt" in c["command"], c.get("exit_code")) for c in commands(events)] \
        == [(True, 0)], events
    assert last.read_text().strip() == "The file says: " + RIVER
    assert not list(codex_home.glob("config.toml"))
    # the catalog b3os-infer wrote under the B3OS home (in HOME) gave Codex the metadata
    assert NO_METADATA not in done.stdout + done.stderr, done.stdout + done.stderr
    [catalog] = (tmp_path / ".local" / "share" / "b3os-infer" / "codex").glob("*.json")
    assert [m["slug"] for m in json.loads(catalog.read_text())["models"]] == [MODEL]
