"""The web console in a real headless Chromium, against the real server (``b3os-infer serve``)
on the scripted engine: sign in, create a key and see its secret once, revoke it, stream
replies in the playground through both wire formats, read the usage charts.

Screenshots of every view are kept in the test's temporary directory and copied to
``test-artifacts/console/`` (ignored by git); docs/console.png is one of them.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from support.chromium import Browser, Page, chromium_path
from support.servers import cli, free_port, start_server, stop, wait_healthy

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "console"
MODEL = "b3os/scripted"
THINK_AND_CALL = ("<think>\nThe user asks for the weather in Paris; get_weather can tell."
                  "\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                  "{\"city\": \"Paris\"}}\n</tool_call>")
REPLIES = [
    {"text": THINK_AND_CALL, "when": {"last_user_contains": "weather"}, "repeat": True},
    {"text": "<think>\nThe tool says 18 C and sunny.\n</think>\n\nIt is 18 °C and sunny in "
             "Paris.", "when": {"last_user_contains": "18 C"}, "repeat": True},
    {"text": " ".join(f"word{i}" for i in range(30)), "when": {"last_user_contains": "slowly"},
     "repeat": True, "delay_s": 0.1},
    {"text": "Markup such as <b>bold</b> and <img src=x> stays text.", "repeat": True},
]


@dataclass(frozen=True)
class Console:
    root: str
    admin: str
    home: Path

    @property
    def url(self) -> str:
        return self.root + "/console"


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    home = tmp_path_factory.mktemp("console-home")
    (home / "replies.json").write_text(json.dumps({"template": "native", "replies": REPLIES}))
    (home / "config.toml").write_text(f'[model]\nid = "{MODEL}"\nengine = "scripted"\n'
                                      'script = "replies.json"\n')
    admin = cli(home, "keys", "create", "--name", "ops", "--scope", "admin").stdout
    port = free_port()
    process = start_server(home, port, "--config", str(home / "config.toml"))
    root = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(root, process)
        yield Console(root, admin.strip().splitlines()[-1], home)
    finally:
        stop(process)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    chrome = Browser(chromium_path(), tmp_path_factory.mktemp("chromium"))
    try:
        yield chrome
    finally:
        chrome.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    tab = browser.new_page()
    yield tab
    browser.call("Target.closeTarget", {"targetId": tab.target})


def keep(page: Page, tmp_path: Path, name: str) -> Path:
    shot = page.screenshot(tmp_path / f"{name}.png")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(shot, ARTIFACTS / shot.name)
    assert shot.stat().st_size > 10_000   # a real picture, not an empty page
    return shot


def sign_in(page: Page, console: Console, key: str | None = None) -> None:
    page.goto(console.url)
    page.wait("document.querySelector('#admin-key')")
    page.fill("#admin-key", key or console.admin)
    page.click("#sign-in-button")


def view(page: Page, console: Console, name: str) -> None:
    page.click(f'#nav a[data-view="{name}"]')
    page.wait(f"document.querySelector('#view-{name}[data-ready]')")


def test_signing_in_keeps_the_key_in_the_session_and_sends_it_with_every_data_call(
        page: Page, browser: Browser, console: Console, tmp_path: Path) -> None:
    sign_in(page, console, "b3os_nosuchkey_0000")
    error = page.wait("document.querySelector('#sign-in-error')?.textContent")
    assert "invalid API key" in error
    assert page.eval("sessionStorage.length") == 0
    keep(page, tmp_path, "sign-in-refused")
    sign_in(page, console)
    page.wait("document.querySelector('#view-models[data-ready]')")
    row = page.eval(f"document.querySelector('#models-table tr[data-model=\"{MODEL}\"]')"
                    ".innerText")
    assert "healthy" in row and "8,192" in row
    assert page.eval("Object.keys(sessionStorage)") == ["b3os.console.key"]
    assert page.eval("document.cookie") == ""
    assert page.call("Network.getCookies")["cookies"] == []
    calls = [r for r in browser.requests if "/v1/infer/" in r["url"]]
    sent = [{k.lower(): v for k, v in r["headers"].items()}.get("authorization") for r in calls]
    assert sent[0] == "Bearer b3os_nosuchkey_0000"
    assert len(sent) >= 3 and set(sent[1:]) == {f"Bearer {console.admin}"}
    assert not any("b3os_" in r["url"] for r in browser.requests)
    keep(page, tmp_path, "models")


def test_a_created_key_is_shown_once_works_and_is_refused_once_revoked(
        page: Page, console: Console, tmp_path: Path) -> None:
    sign_in(page, console)
    page.wait("document.querySelector('#view-models[data-ready]')")
    view(page, console, "keys")
    page.fill('#create-key input[name="name"]', "browser-made")
    page.click('#create-key input[value="admin"]')      # off by default: now on
    page.click('#create-key input[value="admin"]')      # and off again
    page.eval("document.querySelector('#create-key select[name=expires]').value = '30d'")
    page.click("#create-key-button")
    secret = page.wait("document.querySelector('#secret-value')?.textContent")
    key_id = secret.split("_")[1]
    keep(page, tmp_path, "keys-created")
    row = page.eval(f"document.querySelector('tr[data-key=\"{key_id}\"]').innerText")
    assert "browser-made" in row and "infer" in row and "models:read" in row
    assert "admin" not in row and "active" in row
    models = httpx.get(console.root + "/v1/infer/models", headers={"x-api-key": secret})
    assert models.status_code == 200
    page.click("#secret-done")
    page.wait("!document.querySelector('#secret-value')")
    assert secret not in page.eval("document.body.innerText")
    page.click(f'tr[data-key="{key_id}"] button.revoke')     # arms it
    page.click(f'tr[data-key="{key_id}"] button.revoke')     # revokes
    page.wait(f"document.querySelector('tr[data-key=\"{key_id}\"].revoked')")
    keep(page, tmp_path, "keys-revoked")
    refused = httpx.get(console.root + "/v1/infer/models", headers={"x-api-key": secret})
    assert refused.status_code == 401


def _send(page: Page, text: str, replies: int) -> None:
    page.fill("#pg-input", text)
    page.click("#pg-send")
    page.wait(f"document.querySelectorAll('.reply-status[data-done]').length === {replies}")


def _blocks(page: Page) -> list[list[str]]:
    return page.eval("[...document.querySelectorAll('.turn')].map(t => "
                     "[...t.querySelectorAll('.block')].map(b => b.dataset.block || 'text'))")


@pytest.mark.parametrize("wire", ["anthropic", "openai"])
def test_the_playground_streams_thinking_a_tool_call_and_the_answer(
        page: Page, console: Console, tmp_path: Path, wire: str) -> None:
    sign_in(page, console)
    page.wait("document.querySelector('#view-models[data-ready]')")
    view(page, console, "playground")
    page.eval(f"document.querySelector('#pg-wire').value = '{wire}'")
    page.click("#pg-thinking")
    page.click("#pg-tools-on")
    _send(page, "What is the weather in Paris?", 1)
    call = page.eval("document.querySelector('.block.tool_use pre').textContent")
    assert json.loads(call) == {"city": "Paris"}
    assert "get_weather can tell" in page.eval(
        "document.querySelector('.block.thinking').textContent")
    _send(page, "18 C and sunny", 2)
    assert _blocks(page) == [["text"], ["thinking", "tool_use"], ["tool_result"],
                             ["thinking", "text"]]
    last = page.eval("[...document.querySelectorAll('.turn.assistant')].pop().innerText")
    assert "It is 18 °C and sunny in Paris." in last
    status = page.eval("[...document.querySelectorAll('.reply-status')].map(s => s.innerText)")
    stops = {"anthropic": ("tool_use", "end_turn"), "openai": ("tool_calls", "stop")}[wire]
    assert [s.split(" · ")[0] for s in status] == [f"stop: {stop}" for stop in stops]
    assert all(" in / " in s and "req_" in s for s in status)
    keep(page, tmp_path, f"playground-{wire}")


def _running(console: Console) -> int:
    load = httpx.get(console.root + "/healthz").json()["models"][MODEL]
    return int(load["active"])


def test_a_reply_appears_while_it_streams_stop_cancels_it_and_markup_stays_text(
        page: Page, console: Console) -> None:
    sign_in(page, console)
    page.wait("document.querySelector('#view-models[data-ready]')")
    view(page, console, "playground")
    page.fill("#pg-input", "Answer slowly")
    page.click("#pg-send")
    partial = page.wait("(() => { const t = document.querySelector('.turn.assistant "
                        ".block.text')?.textContent; return t && "
                        "!document.querySelector('.reply-status[data-done]') && t; })()")
    assert partial.startswith("word0") and "word29" not in partial
    assert _running(console) == 1
    page.click("#pg-stop")
    status = page.wait("document.querySelector('.reply-status[data-done]')?.innerText")
    assert status.startswith("stopped")
    kept = page.eval("document.querySelector('.turn.assistant .block.text').textContent")
    assert "word29" not in kept
    deadline = time.monotonic() + 30
    while _running(console) and time.monotonic() < deadline:   # the server lets it go
        time.sleep(0.1)
    assert _running(console) == 0
    _send(page, "Hello", 2)
    text = page.eval("[...document.querySelectorAll('.turn.assistant')].pop().innerText")
    assert "Markup such as <b>bold</b> and <img src=x> stays text." in text
    assert page.eval("document.querySelectorAll('#transcript b, #transcript img').length") == 0


SSE = ("event: message_start\ndata: {\"a\": 1}\n\n: a comment\n\n"
       "event: content_block_delta\r\ndata: line one\r\ndata: line two\r\n\r\n"
       "data: [DONE]\n\n")


def test_the_sse_reader_yields_the_same_events_however_the_stream_is_cut(
        page: Page, console: Console) -> None:
    page.goto(console.url)
    cuts = page.eval(f"""(async () => {{
        const {{ events }} = await import("/console/sse.js");
        const text = {json.dumps(SSE)};
        const bytes = new TextEncoder().encode(text);
        const seen = new Set();
        for (let at = 0; at <= bytes.length; at++) {{
          const body = new ReadableStream({{ start(c) {{
            c.enqueue(bytes.slice(0, at)); c.enqueue(bytes.slice(at)); c.close(); }} }});
          const got = [];
          for await (const e of events(new Response(body))) got.push([e.event, e.data]);
          seen.add(JSON.stringify(got));
        }}
        return [...seen];
    }})()""")
    assert [json.loads(c) for c in cuts] == [[["message_start", '{"a": 1}'],
                                              ["content_block_delta", "line one\nline two"],
                                              ["message", "[DONE]"]]]


def test_usage_charts_show_each_keys_requests(page: Page, console: Console,
                                             tmp_path: Path) -> None:
    app = cli(console.home, "keys", "create", "--name", "app").stdout.strip().splitlines()[-1]
    for key, words in ((app, "Hi"), (app, "Hello"), (console.admin, "Hey")):
        answer = httpx.post(console.root + "/v1/infer/v1/messages", headers={"x-api-key": key},
                            json={"model": MODEL, "max_tokens": 64,
                                  "messages": [{"role": "user", "content": words}]})
        assert answer.status_code == 200
    sign_in(page, console)
    page.wait("document.querySelector('#view-models[data-ready]')")
    view(page, console, "usage")
    page.eval("const s = document.querySelector('#usage-bucket'); s.value = 'minute'; "
              "s.dispatchEvent(new Event('change'))")
    page.wait("document.querySelector('#usage-bucket').value === 'minute' && "
              "document.querySelectorAll('svg.chart rect.seg').length > 0")
    legend = page.eval("[...document.querySelectorAll('.legend-item')].map(i => i.innerText)")
    app_id = app.split("_")[1]
    assert f"app · {app_id}" in legend and any(item.startswith("ops · ") for item in legend)
    titles = page.eval("[...document.querySelectorAll('svg.chart rect.seg title')]"
                       ".map(t => t.textContent)")
    assert any(f"app · {app_id}:" in t for t in titles)
    totals = page.eval("[...document.querySelectorAll('#usage-table tbody tr')]"
                       ".map(r => r.innerText.split('\\t'))")
    assert [MODEL, "2", "0"] in [row[1:4] for row in totals if row[0] == "app"]
    keep(page, tmp_path, "usage")
