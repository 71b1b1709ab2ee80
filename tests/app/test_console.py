"""The console's static files as the edge serves them: no key to load, a strict
Content-Security-Policy, no cookie, only the package's files; also at a fleet's edge."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from b3os_infer.app import create_edge_app
from b3os_infer.console.serve import load_files
from b3os_infer.edge.access.keys import KeyStore
from b3os_infer.edge.fleet.nodes import NodePool
from b3os_infer.edge.state import EdgeState
from b3os_infer.edge.storage.db import open_database
from b3os_infer.engine.scripted.script import Reply

pytestmark = pytest.mark.anyio


async def _root(scripted_app) -> httpx.AsyncClient:
    app = await scripted_app(Reply(text="hi", repeat=True))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app.app), base_url="http://test")


async def test_the_page_loads_without_a_key_under_a_strict_csp_and_sets_no_cookie(
        scripted_app) -> None:
    async with await _root(scripted_app) as http:
        for path in ("/console", "/console/"):
            page = await http.get(path)
            assert page.status_code == 200
            assert page.headers["content-type"] == "text/html; charset=utf-8"
            csp = page.headers["content-security-policy"]
            assert "default-src 'none'" in csp and "script-src 'self';" in csp
            assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
            assert "frame-ancestors 'none'" in csp
            assert page.headers["x-content-type-options"] == "nosniff"
            assert "set-cookie" not in page.headers
            assert "<title>B3OS Infer console</title>" in page.text


async def test_every_file_the_page_and_its_modules_name_is_served_with_its_type(
        scripted_app) -> None:
    files = load_files()
    named = set(re.findall(r'(?:src|href)="/console/([\w.]+)"', files["index.html"][0].decode()))
    for name, (content, _) in files.items():
        if name.endswith(".js"):
            named |= set(re.findall(r'from "\./([\w.]+)"', content.decode()))
    assert named >= {"app.js", "style.css", "api.js", "sse.js", "wires.js", "chart.js"}
    types = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
    async with await _root(scripted_app) as http:
        for name in named:
            answer = await http.get(f"/console/{name}")
            assert answer.status_code == 200, name
            assert answer.headers["content-type"] == types[Path(name).suffix]
            assert answer.content == files[name][0]


@pytest.mark.parametrize("path", ["/console/nothing.js", "/console/static/app.js",
                                  "/console/..%2Fserve.py", "/console/__init__.py"])
async def test_only_the_consoles_own_files_are_served(scripted_app, path: str) -> None:
    async with await _root(scripted_app) as http:
        answer = await http.get(path)
        assert answer.status_code == 404
        assert answer.json()["error"]["code"] == "route_not_found"


async def test_the_console_answers_only_reads(scripted_app) -> None:
    async with await _root(scripted_app) as http:
        answer = await http.post("/console", content=b"{}")
        assert answer.status_code == 405
        assert answer.json()["error"]["code"] == "method_not_allowed"


async def test_a_fleet_edge_serves_the_console_and_the_admin_api(tmp_path: Path) -> None:
    keys = KeyStore(open_database(f"sqlite:///{tmp_path / 'edge.sqlite3'}"))
    _, admin = keys.create("ops", ("admin",))
    edge = EdgeState.for_keys(keys)
    app = create_edge_app(edge, NodePool([], "secret"), "secret", "http://127.0.0.1:9")
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://edge") as http:
            assert (await http.get("/console")).status_code == 200
            listing = await http.get("/v1/infer/admin/keys", headers={"x-api-key": admin})
            assert listing.status_code == 200
            assert [k["name"] for k in listing.json()["data"]] == ["ops"]
    finally:
        edge.ledger.close()
        keys.engine.dispose()
