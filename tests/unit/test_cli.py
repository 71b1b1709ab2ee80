import re
import subprocess
import sys
from pathlib import Path

from b3os_infer.cli import claude_code_hint
from b3os_infer.compose import DEFAULT_MODEL_WINDOW
from b3os_infer.node.cards import DEFAULT_MODEL_ID, ModelCard, max_output_tokens

ROOT = Path(__file__).resolve().parents[2]


def cli(home, *args):
    return subprocess.run([sys.executable, "-m", "b3os_infer.cli", *args], capture_output=True,
                          text=True, env={"B3OS_INFER_HOME": str(home), "PATH": "/usr/bin"},
                          check=False)


def test_keys_create_prints_the_key_alone_on_the_last_line(tmp_path):
    made = cli(tmp_path, "keys", "create", "--name", "ci", "--scope", "infer")
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip().splitlines()[-1]
    assert key.startswith("b3os_") and " " not in key
    listed = cli(tmp_path, "keys", "list")
    assert "ci" in listed.stdout and key not in listed.stdout
    revoked = cli(tmp_path, "keys", "revoke", key)
    assert revoked.returncode == 0 and "revoked" in revoked.stdout
    assert "revoked" in cli(tmp_path, "keys", "list").stdout


def test_bad_input_is_a_message_not_a_traceback(tmp_path):
    bad = cli(tmp_path, "keys", "revoke", "nope")
    assert bad.returncode == 1 and "Traceback" not in bad.stderr and "nope" in bad.stderr
    bad_config = tmp_path / "c.toml"
    bad_config.write_text("[engine]\nthreds = 2\n")
    served = cli(tmp_path, "serve", "--config", str(bad_config))
    assert served.returncode == 2 and "threds" in served.stderr


def test_the_claude_code_hint_gives_the_models_window_and_output_limit():
    card = ModelCard(id="b3os/x", display_name="X", kind="chat", context_window=32768,
                     max_output_tokens=8192)
    hint = claude_code_hint(card)
    assert "export CLAUDE_CODE_MAX_CONTEXT_TOKENS=32768" in hint
    assert "export CLAUDE_CODE_MAX_OUTPUT_TOKENS=8192" in hint
    assert "export CLAUDE_STREAM_IDLE_TIMEOUT_MS=1800000" in hint
    assert hint.endswith("claude --model b3os/x")


def test_the_docs_show_the_claude_code_lines_serve_prints_for_the_default_model():
    """README's "Claude Code by hand" and docs/anthropic.md quote what `serve` prints at
    start for the embedded default model at its default window, word for word."""
    card = ModelCard(id=DEFAULT_MODEL_ID, display_name="SmolLM2", kind="chat",
                     context_window=DEFAULT_MODEL_WINDOW,
                     max_output_tokens=max_output_tokens(DEFAULT_MODEL_WINDOW))
    printed = claude_code_hint(card)
    for doc in (ROOT / "README.md", ROOT / "docs" / "anthropic.md"):
        quoted = re.findall(r"^```text\n(Claude Code on .*?)\n```", doc.read_text(), re.S | re.M)
        assert quoted == [printed], doc.name


def test_keys_and_usage_use_the_database_that_the_config_names(tmp_path):
    home, config = tmp_path / "home", tmp_path / "edge.toml"
    config.write_text(f'[edge]\ndatabase_url = "sqlite:///{tmp_path / "edge.sqlite3"}"\n')
    made = cli(home, "keys", "create", "--config", str(config), "--name", "fleet")
    assert made.returncode == 0, made.stderr
    # the key is in the edge's database, before or after the subcommand, not in the home's
    assert "fleet" in cli(home, "keys", "--config", str(config), "list").stdout
    assert "fleet" in cli(home, "keys", "list", "--config", str(config)).stdout
    assert "fleet" not in cli(home, "keys", "list").stdout
    assert (tmp_path / "edge.sqlite3").is_file()
    usage = cli(home, "usage", "--config", str(config))
    assert usage.returncode == 0 and "no requests recorded yet" in usage.stdout
    missing = cli(home, "keys", "list", "--config", str(tmp_path / "none.toml"))
    assert missing.returncode == 2 and "none.toml" in missing.stderr
    assert "Traceback" not in missing.stderr
