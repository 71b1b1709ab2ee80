"""A reusable checker of the invariants an Anthropic SSE stream must keep."""

from __future__ import annotations

import json
from typing import Any

_DELTAS = {"text": {"text_delta"}, "thinking": {"thinking_delta", "signature_delta"},
           "tool_use": {"input_json_delta"}}


def parse_sse(raw: str) -> list[tuple[str, dict[str, Any]]]:
    """Frames as (event name, payload); every frame must have both lines."""
    frames = []
    for frame in raw.strip().split("\n\n"):
        lines = frame.split("\n")
        assert len(lines) == 2, f"unexpected frame: {frame!r}"
        event, data = lines
        assert event.startswith("event: ") and data.startswith("data: "), frame
        payload = json.loads(data.removeprefix("data: "))
        assert payload["type"] == event.removeprefix("event: "), frame
        frames.append((payload["type"], payload))
    return frames


def check_message_stream(frames: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Asserts the event grammar; returns the message the stream folds into."""
    names = [name for name, _ in frames if name != "ping"]
    assert names[0] == "message_start" and names.count("message_start") == 1
    assert names[-1] == "message_stop" and names.count("message_stop") == 1
    assert names[-2] == "message_delta"
    message = dict(frames[0][1]["message"])
    message["content"] = []
    open_index: int | None = None
    signatures = 0
    buffers: dict[int, str] = {}
    for name, payload in frames[1:]:
        if name == "content_block_start":
            assert open_index is None, "a block started before the previous one stopped"
            assert payload["index"] == len(message["content"]), "indexes must be 0, 1, 2 ..."
            open_index = payload["index"]
            message["content"].append(dict(payload["content_block"]))
            signatures = 0
        elif name == "content_block_delta":
            assert payload["index"] == open_index, "a delta for a block that is not open"
            block, delta = message["content"][open_index], payload["delta"]
            assert delta["type"] in _DELTAS[block["type"]]
            assert signatures == 0, "nothing may follow a signature_delta in its block"
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
                signatures += 1
            else:
                buffers[open_index] = buffers.get(open_index, "") + delta["partial_json"]
        elif name == "content_block_stop":
            assert payload["index"] == open_index
            block = message["content"][open_index]
            if block["type"] == "thinking":
                assert signatures == 1 and block["signature"], "one signature_delta, last"
            if block["type"] == "tool_use" and open_index in buffers:
                block["input"] = json.loads(buffers[open_index])
            open_index = None
        elif name == "message_delta":
            assert open_index is None, "message_delta while a block is open"
            message.update(payload["delta"])
            message["usage"] = {**message["usage"], **payload["usage"]}
    return message
