"""Batch pieces on their own: the docs' policy tables, ``[batches]`` settings, multipart
uploads, input-file lines and OpenAI cursor pages."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from b3os_infer.batches import policy
from b3os_infer.batches.multipart import parse_form
from b3os_infer.batches.openai_api.lines import read_lines
from b3os_infer.batches.pages import after_page
from b3os_infer.config import ConfigError, load_config
from b3os_infer.errors import InvalidRequest

DOC = Path(__file__).resolve().parents[2] / "docs" / "batches.md"


def test_docs_are_rendered_from_the_table():
    rendered = re.search(r"<!-- policy:begin -->\n(.*)<!-- policy:end -->", DOC.read_text(),
                         re.S)
    assert rendered, "docs/batches.md lost its policy markers"
    assert rendered.group(1).strip() == policy.render_markdown().strip(), \
        "run: python -m b3os_infer.batches.policy, and paste it between the markers"


def test_batches_settings_come_from_the_config_and_are_checked(tmp_path):
    path = tmp_path / "serve.toml"
    path.write_text("[batches]\nconcurrency = 2\nreserve_slots = 0\n"
                    "expires_after_seconds = 3600\n")
    settings = load_config(path).batches
    assert (settings.concurrency, settings.reserve_slots, settings.expires_after_seconds) == \
        (2, 0, 3600)
    path.write_text("[batches]\nconcurrency = 0\n")
    with pytest.raises(ConfigError, match=r"\[batches\]: concurrency should be an integer >= 1"):
        load_config(path)
    path.write_text("[batches]\nparallel = 3\n")
    with pytest.raises(ConfigError, match="unknown key 'parallel'"):
        load_config(path)


def test_a_multipart_upload_gives_its_fields_and_the_files_bytes_unchanged():
    content = b'{"a": 1}\r\n{"b": 2}\n\xc3\xa9\n'
    body = (b"--XyZ\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n"
            b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"in.jsonl\""
            b"\r\nContent-Type: application/octet-stream\r\n\r\n" + content +
            b"\r\n--XyZ--\r\n")
    form = parse_form("multipart/form-data; boundary=XyZ", body)
    assert form["purpose"].data == b"batch"
    assert form["file"].filename == "in.jsonl" and form["file"].data == content
    with pytest.raises(InvalidRequest):
        parse_form("application/json", b"{}")


def test_input_lines_become_requests_in_order_or_errors_with_their_numbers():
    good = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    text = "\n".join([
        json.dumps({"custom_id": "a", "method": "POST", "url": "/v1/chat/completions",
                    "body": good}),
        "",
        json.dumps({"custom_id": "b", "method": "POST", "url": "/v1/chat/completions",
                    "body": good}),
    ])
    rows, errors = read_lines(text, "/v1/chat/completions")
    assert errors == [] and [(r.idx, r.custom_id, r.model) for r in rows] == \
        [(0, "a", "m"), (1, "b", "m")]
    extra = json.dumps({"custom_id": "c", "method": "POST", "url": "/v1/chat/completions",
                        "body": good, "priority": 1})
    rows, errors = read_lines(extra, "/v1/chat/completions")
    assert [(e.line, e.code, e.param) for e in errors] == [(1, "unsupported_parameter",
                                                           "priority")]


@dataclass(frozen=True)
class Row:
    id: str


def test_after_pages_walk_a_listing():
    rows = [Row(str(i)) for i in range(5)]
    page, more = after_page(rows, {"limit": "2"})
    assert [r.id for r in page] == ["0", "1"] and more
    page, more = after_page(rows, {"limit": "2", "after": "3"})
    assert [r.id for r in page] == ["4"] and not more
    assert after_page(rows, {"after": "nope"}) == ([], False)
