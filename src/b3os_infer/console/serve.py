"""Serving the console's static files at ``/console`` (pure ASGI), with a strict CSP.

The page needs no key to load: it holds no data. The admin key the operator signs in with
stays in the browser's ``sessionStorage`` and goes with every data call the page's scripts
make (``Authorization: Bearer``); the server never sets a cookie. The files are read once,
from the package, and only those are served: no path reaches the file system.
"""

from __future__ import annotations

from importlib import resources

from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from ..envelopes import error_response
from ..errors import MethodNotAllowed, NotFound

PREFIX = "/console"
_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
          ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml", ".png": "image/png"}
# Scripts and styles from this origin only (no inline script, no eval); data calls to
# this origin only; nothing may frame the page.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
HEADERS = {"content-security-policy": CSP, "x-content-type-options": "nosniff",
           "referrer-policy": "no-referrer", "x-frame-options": "DENY",
           "cache-control": "no-cache"}


def load_files() -> dict[str, tuple[bytes, str]]:
    """``name -> (content, media type)`` for every file in ``static/``."""
    root = resources.files(__package__ or "b3os_infer.console").joinpath("static")
    files: dict[str, tuple[bytes, str]] = {}
    for entry in root.iterdir():
        suffix = "." + entry.name.rsplit(".", 1)[-1]
        if entry.is_file() and suffix in _TYPES:
            files[entry.name] = (entry.read_bytes(), _TYPES[suffix])
    return files


def is_console_path(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


class Console:
    """Answers ``GET /console`` (the page) and ``GET /console/<file>``; passes the rest on."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.files = load_files()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_console_path(scope.get("path", "")):
            await self.app(scope, receive, send)
            return
        await self._respond(scope)(scope, receive, send)

    def _respond(self, scope: Scope) -> Response:
        path = scope["path"]
        rid = scope.get("state", {}).get("request_id")
        if scope.get("method") not in ("GET", "HEAD"):
            return error_response(path, MethodNotAllowed(
                f"{scope.get('method')} is not allowed on {path}; the console is read with "
                "GET"), rid)
        found = self.files.get(path[len(PREFIX):].lstrip("/") or "index.html")
        if found is None:
            return error_response(path, NotFound(f"{path} is not a file of the console",
                                                 code="route_not_found"), rid)
        content, media_type = found
        return Response(content, 200, HEADERS, media_type=media_type)
