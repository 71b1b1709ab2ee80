"""The edit and depth scenarios' logic: the expected file, the check every reply passes or
fails, the choice of llama-server's best variant, the streams they time (an in-memory
transport stands in for the servers; no model)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx

from bench import depth, edit, report
from bench.servers import LlamaServer, Server, Setup, _our_config, llama_server_command

SERVER = Server(name="s", chat_url="http://s/v1/chat/completions", model="m",
                headers={"x-api-key": "k"}, extra_body={"stream_options": {"include_usage": True}},
                usage_in_stream=True, messages_url="http://s/v1/messages")


def test_each_change_replaces_one_line_of_the_subject_and_keeps_its_indentation():
    text = edit.subject()
    assert 90 <= len(text.splitlines()) <= 110
    for change in edit.CHANGES:
        changed = edit.expected(text, change)
        before, after = text.splitlines(), changed.splitlines()
        differing = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
        assert len(differing) == 1
        line = after[differing[0]]
        assert line.strip() == change.new
        assert line[:len(line) - len(line.lstrip())] == \
            before[differing[0]][:len(before[differing[0]]) - len(before[differing[0]].lstrip())]


def test_a_fenced_reply_with_trailing_spaces_and_words_around_it_is_whole():
    want = edit.expected(edit.subject(), edit.CHANGES[0])
    reply = "Here it is:\n\n```python\n" + "\n".join(
        line + "  " for line in want.splitlines()) + "\n```\nDone."
    assert edit.verdict(reply, want) == "whole"
    assert edit.verdict(want, want) == "whole"   # no fence at all


def test_a_reply_that_writes_less_or_misses_the_change_fails():
    text = edit.subject()
    want = edit.expected(text, edit.CHANGES[0])
    total = len(edit.normalise(want))
    cut = "```python\n" + "\n".join(edit.normalise(want)[:40]) + "\n"   # stopped mid-file
    assert edit.verdict(cut, want) == f"40 lines of {total}"
    unchanged = edit.verdict(f"```python\n{text}```", want)
    changed_at = 1 + edit.normalise(text).index("MAX_ATTEMPTS = 4")
    assert unchanged == f"differs at line {changed_at} of {total}"


def test_one_blank_line_for_two_is_whole_but_a_missing_code_line_is_not():
    want = edit.expected(edit.subject(), edit.CHANGES[0])
    assert "\n\n\n" in want
    assert edit.verdict(want.replace("\n\n\n", "\n\n"), want) == "whole"
    lines = want.splitlines()
    dropped = lines.index("MAX_ATTEMPTS = 6") + 1   # the line after the change
    without = "\n".join(lines[:dropped] + lines[dropped + 1:]) + "\n"
    assert edit.verdict(without, want).startswith(f"differs at line {dropped + 1} of ")


def chat_stream(*chunks: dict[str, Any]) -> bytes:
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"


def test_ask_checks_the_streamed_text_and_reads_the_usage_and_drafts():
    want = edit.expected(edit.subject(), edit.CHANGES[1])
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        half = len(want) // 2
        return httpx.Response(200, content=chat_stream(
            {"choices": [{"delta": {"content": "```python\n" + want[:half]}}]},
            {"choices": [{"delta": {"content": want[half:] + "```"}}]},
            {"choices": [], "usage": {"completion_tokens": 812},
             "timings": {"draft_n": 700, "draft_n_accepted": 650}}))

    async def ask() -> edit.Reply:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            return await edit.ask(client, SERVER, edit.CHANGES[1])

    reply = asyncio.run(ask())
    assert reply.whole and reply.tokens == 812
    assert (reply.drafted, reply.accepted) == (700, 650)
    assert seen[0]["temperature"] == 0.0 and seen[0]["max_tokens"] == edit.MAX_TOKENS
    assert edit.CHANGES[1].new in seen[0]["messages"][0]["content"]


def measured(rate: float, verdict: str = "whole") -> edit.Measured:
    one = edit.Reply(0.0, 1.0, 1.0 + 800 / rate, 801, verdict)
    return edit.Measured([one] * 3, [one] * 4)


def test_the_best_spec_type_is_the_fastest_whose_replies_all_passed():
    peers = {"none": measured(16), "ngram-map-k": measured(40),
             "ngram-mod": measured(90, "12 lines of 103"), "ngram-simple": measured(37)}
    assert report.best_spec(peers, together=False) == "ngram-map-k"
    table = report.edit_rows(measured(45), peers, 4)
    by_metric = {row.metric: row for row in table}
    plain = by_metric["edit, 1 stream: decode vs no speculation"]
    assert (plain.ratio, plain.met) == ("2.81x", True)
    best = by_metric["edit, 1 stream: decode vs best --spec-type (ngram-map-k)"]
    assert (best.ratio, best.met) == ("1.12x", True)
    assert "ngram-mod 0/7" in by_metric["edit: replies whole with the change"].peer


def test_our_reply_that_fails_the_check_never_meets_a_target():
    peers = {"none": measured(16), "ngram-map-k": measured(40)}
    table = report.edit_rows(measured(500, "40 lines of 103"), peers, 4)
    targeted = [row for row in table if row.target]
    assert targeted and all(row.met is False for row in targeted)
    assert all(row.ours == "failed the check" for row in table[:4])


def test_our_config_takes_engine_lines_and_llama_server_takes_extra_arguments():
    setup = Setup(model_path="/m.gguf", threads=2, context_window=4096, parallel=8)
    config = _our_config(setup, "qwen2.5-coder-0.5b", ("speculative = false",))
    assert config == "[engine]\nthreads = 2\nspeculative = false\n"
    peer = LlamaServer(Path("/bin/llama-server"), "/m.gguf", 2, 32768, 4,
                       ("--spec-type", "ngram-mod"))
    command = llama_server_command(peer, 8123)
    assert command[-2:] == ["--spec-type", "ngram-mod"]
    assert command[command.index("--ctx-size") + 1] == str(32768 * 4)


def test_depth_times_decode_from_the_first_delta_and_reads_the_output_tokens():
    events = [
        {"type": "message_start", "message": {"usage": {
            "input_tokens": 30, "cache_read_input_tokens": 17000, "output_tokens": 0}}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "text_delta", "text": "HTTP"}},
        {"type": "message_delta", "delta": {"stop_reason": "max_tokens"},
         "usage": {"output_tokens": depth.TOKENS}},
        {"type": "message_stop"},
    ]
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(200, content="".join(
            f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode())

    body = {"model": "claude", "max_tokens": 32000, "stream": True,
            "messages": [{"role": "user", "content": "Name one river in Oregon."}]}

    async def send() -> depth.Reply:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            return await depth.send(client, SERVER, depth.request(body, "m", depth.PROMPTS[0]))

    reply = asyncio.run(send())
    assert (reply.prompt_tokens, reply.cached_tokens) == (17030, 17000)
    assert (reply.output_tokens, reply.stop_reason) == (depth.TOKENS, "max_tokens")
    assert reply.decode > 0 and reply.decode_rate == (depth.TOKENS - 1) / reply.decode
    assert seen[0]["max_tokens"] == depth.TOKENS
    assert seen[0]["messages"][-1]["content"] == depth.PROMPTS[0]
