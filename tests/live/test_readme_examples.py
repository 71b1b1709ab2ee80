"""The README's examples, run as printed against the live server (only the port differs).

They are the seed page's examples with the localhost base URL, so this keeps both the
README and the seed page's promises true.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
JS = ROOT / "tests" / "js"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
MODEL = "b3os/smollm2-135m-instruct"


def blocks(language: str) -> list[str]:
    text = (ROOT / "README.md").read_text()
    return [body for lang, body in BLOCK.findall(text) if lang == language]


def localize(code: str, root: str) -> str:
    return code.replace("http://127.0.0.1:8000", root)


@pytest.fixture
def env(live):
    return {**os.environ, "B3OS_API_KEY": live.key, "B3OS_MODEL": MODEL}


def run(args: list[str], env: dict[str, str], cwd: Path = ROOT) -> str:
    done = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_readme_has_the_examples():
    assert len(blocks("bash")) >= 3 and len(blocks("python")) >= 2 and len(blocks("ts")) == 1


def test_bash_examples(live, env):
    discover, create, refused = [b for b in blocks("bash") if "curl" in b][:3]
    model = run(["bash", "-c", localize(discover, live.root) + 'echo "$B3OS_MODEL"'], env)
    assert model.strip() == MODEL
    message = json.loads(run(["bash", "-c", localize(create, live.root)], env))
    assert message["type"] == "message" and message["content"][0]["text"]
    error = json.loads(run(["bash", "-c", localize(refused, live.root)], env))
    assert error["error"]["type"] == "not_found_error"
    assert error["b3os"] == {"code": "model_not_available", "param": "model"}


def test_python_examples(live, env):
    for code in blocks("python"):
        output = run([sys.executable, "-c", localize(code, live.root)], env)
        assert output.strip()


def test_typescript_example(live, env):
    (code,) = blocks("ts")
    script = JS / "readme_example.gen.ts"
    script.write_text(localize(code, live.root))
    try:
        output = run([str(JS / "node_modules" / ".bin" / "tsx"), script.name], env, cwd=JS)
    finally:
        script.unlink()
    assert "input_tokens" in output and "text" in output
