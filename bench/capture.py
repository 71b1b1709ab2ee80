"""Record the first request Claude Code sends, with its default flags, as a fixture.

``python -m bench.capture tests/fixtures/claude_code_first_request.json`` starts a small
server on loopback that stands in for the Messages API, runs Claude Code (tests/js) once
against it with a throw-away home and working directory, and writes the request that a
server like ours answers. Claude Code's first attempt carries a ``system``-role message
last in ``messages``; the stand-in refuses it with the real API's wording, as ours does,
and Claude Code sends the same request without it, which is the one kept. The stand-in
answers that one with a short streamed message so that Claude Code ends normally.
``--claude PATH`` runs another Claude Code (the newest one of tests/js/newest); the
fixture also keeps the refused first attempt and the ``anthropic-beta`` header.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from b3os_infer.anthropic.decode import SYSTEM_ROLE_MESSAGE

ROOT = Path(__file__).resolve().parents[1]
CLAUDE = ROOT / "tests" / "js" / "node_modules" / ".bin" / "claude"
# the working directory Claude Code sees; it is part of its system prompt
PROJECT = "/tmp/b3os-bench/project"


def has_system_message(body: dict[str, Any]) -> bool:
    return any(m.get("role") == "system" for m in body.get("messages") or [])


def short_reply(model: str) -> bytes:
    """A whole streamed message of one word, as Server-Sent Events."""
    usage = {"input_tokens": 1, "output_tokens": 1}
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_capture", "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": "Columbia."}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "usage": {"output_tokens": 1},
                           "delta": {"stop_reason": "end_turn", "stop_sequence": None}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n"
                   for name, data in events).encode()


class Recorder(BaseHTTPRequestHandler):
    """Keeps every Messages request that it answers (``server.kept``)."""

    server: CaptureServer

    def do_POST(self) -> None:  # noqa: N802 (the name http.server calls)
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        if not self.path.split("?")[0].endswith("/v1/messages"):
            self._send(404, "application/json", b'{"type": "error"}')
        elif has_system_message(body):
            self.server.refused.append(body)
            error = {"type": "error", "error": {"type": "invalid_request_error",
                                                "message": SYSTEM_ROLE_MESSAGE}}
            self._send(400, "application/json", json.dumps(error).encode())
        else:
            self.server.kept.append(body)
            self.server.betas.append(self.headers.get("anthropic-beta", ""))
            self._send(200, "text/event-stream", short_reply(body.get("model", "")))

    def do_GET(self) -> None:  # noqa: N802
        self._send(404, "application/json", b'{"type": "error"}')

    def _send(self, status: int, kind: str, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


class CaptureServer(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Recorder)
        self.kept: list[dict[str, Any]] = []
        self.refused: list[dict[str, Any]] = []
        self.betas: list[str] = []


def run_claude(claude: Path, base_url: str, model: str, prompt: str
               ) -> subprocess.CompletedProcess[str]:
    Path(PROJECT).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="b3os-capture-home-") as home:
        env = {"PATH": os.environ["PATH"], "HOME": home, "ANTHROPIC_BASE_URL": base_url,
               "ANTHROPIC_AUTH_TOKEN": "capture", "DISABLE_TELEMETRY": "1",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
        return subprocess.run([str(claude), "-p", prompt, "--model", model], env=env,
                              cwd=PROJECT, capture_output=True, text=True, timeout=300)


def _difference(refused: dict[str, Any], kept: dict[str, Any]) -> dict[str, Any]:
    """The fields of a refused attempt that the kept request sent otherwise."""
    return {k: v for k, v in refused.items() if kept.get(k) != v}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.capture", description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--model", default="b3os/qwen2.5-coder-0.5b")
    parser.add_argument("--prompt", default="Name one river in Oregon.")
    parser.add_argument("--claude", type=Path, default=CLAUDE)
    args = parser.parse_args()
    server = CaptureServer()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        done = run_claude(args.claude, f"http://127.0.0.1:{server.server_address[1]}/v1/infer",
                          args.model, args.prompt)
    finally:
        server.shutdown()
    if not server.kept:
        raise SystemExit(f"Claude Code sent no request we kept:\n{done.stdout}{done.stderr}")
    version = subprocess.run([str(args.claude), "--version"], capture_output=True, text=True)
    fixture: dict[str, Any] = {
        "source": f"the first Messages request of `claude -p` with default flags, "
                  f"Claude Code {version.stdout.strip()}, working directory {PROJECT}, "
                  "as sent again without its system-role message",
        "request": server.kept[0]}
    if args.claude != CLAUDE:   # the pinned fixture stays as it was recorded
        fixture["anthropic_beta"] = server.betas[0]
        fixture["refused_attempts"] = [_difference(body, server.kept[0])
                                       for body in server.refused]
    args.out.write_text(json.dumps(fixture, indent=1, ensure_ascii=False) + "\n")
    print(f"{args.out}: {len(json.dumps(server.kept[0]))} bytes, "
          f"{len(server.kept[0].get('tools') or [])} tools")


if __name__ == "__main__":
    main()
