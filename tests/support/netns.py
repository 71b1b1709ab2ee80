"""A web server in a network namespace of its own, reached over a veth pair.

``netns_web_server(pages)`` makes the namespace ``b3os-wf-<pid>``, a veth pair whose host
end is ``10.231.<n>.1/30`` and whose namespace end is ``10.231.<n>.2/30``, and starts a
small HTTP server inside the namespace on port 8080 serving ``pages`` (path -> HTML). The
addresses are private, as a test network's are: the server under test reaches them only
because its config lists the /30 in ``[web_fetch] allow_networks`` (an operator's setting,
which no request can change). Everything is removed on exit: the server process (by its
pid) and the namespace, which takes its veth end, and so the pair, with it. Needs root and
``ip``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SERVER = """
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
pages = json.loads(sys.argv[2])
class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path != "/ready":
            with open(sys.argv[3], "a") as log:
                log.write(f"{self.headers.get('Host')} {self.path}\\n")
        body = pages.get(self.path)
        status = 200 if body is not None else 404
        data = (body or "not found").encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def log_message(self, *args):
        pass
HTTPServer((sys.argv[1], 8080), Handler).serve_forever()
"""


@dataclass(frozen=True)
class NamespacedServer:
    namespace: str
    address: str          # the server's, inside the namespace
    network: str          # the /30 the veth pair is on
    log: Path             # one line per request: its Host header and path

    @property
    def url(self) -> str:
        return f"http://{self.address}:8080"

    def requests(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


def available() -> str | None:
    """Why a namespace cannot be made here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "the `ip` command (iproute2) is not installed"
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@contextmanager
def netns_web_server(pages: dict[str, str], log: Path) -> Iterator[NamespacedServer]:
    pid = os.getpid()
    n = pid % 250 + 1
    namespace, host_end, ns_end = f"b3os-wf-{pid}", f"b3wh{pid % 100000}", f"b3wn{pid % 100000}"
    served = NamespacedServer(namespace, f"10.231.{n}.2", f"10.231.{n}.0/30", log)
    _ip("netns", "add", namespace)
    process: subprocess.Popen[str] | None = None
    try:
        _ip("link", "add", host_end, "type", "veth", "peer", "name", ns_end)
        _ip("link", "set", ns_end, "netns", namespace)
        _ip("addr", "add", f"10.231.{n}.1/30", "dev", host_end)
        _ip("link", "set", host_end, "up")
        _ip("netns", "exec", namespace, "ip", "addr", "add", f"{served.address}/30", "dev",
            ns_end)
        _ip("netns", "exec", namespace, "ip", "link", "set", ns_end, "up")
        _ip("netns", "exec", namespace, "ip", "link", "set", "lo", "up")
        process = subprocess.Popen(
            ["ip", "netns", "exec", namespace, sys.executable, "-c", SERVER, served.address,
             json.dumps(pages), str(log)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        _wait(served.url + "/ready", process)    # a probe the log leaves out
        yield served
    finally:
        if process is not None:
            process.terminate()
            process.wait(timeout=10)
            if process.stdout is not None:
                process.stdout.close()
        subprocess.run(["ip", "link", "del", host_end], capture_output=True)
        subprocess.run(["ip", "netns", "del", namespace], capture_output=True)


def _wait(url: str, process: subprocess.Popen[str], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            said = process.stdout.read() if process.stdout else ""
            raise RuntimeError(f"the namespaced server exited: {said}")
        try:
            urllib.request.urlopen(url, timeout=1)   # noqa: S310 - our own test server
            return
        except urllib.error.HTTPError:
            return           # it answered (404 for an unknown path)
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"the namespaced server at {url} did not answer")
