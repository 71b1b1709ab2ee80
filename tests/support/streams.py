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


class _Fold:
    """Folds the events after ``message_start`` into the message, asserting as it goes."""

    def __init__(self, start: dict[str, Any]) -> None:
        self.message = dict(start["message"])
        self.message["content"] = []
        self.open_index: int | None = None
        self.signatures = 0
        self.buffers: dict[int, str] = {}

    def block_start(self, payload: dict[str, Any]) -> None:
        assert self.open_index is None, "a block started before the previous one stopped"
        assert payload["index"] == len(self.message["content"]), "indexes must be 0, 1, 2 ..."
        self.open_index = payload["index"]
        self.message["content"].append(dict(payload["content_block"]))
        self.signatures = 0

    def block_delta(self, payload: dict[str, Any]) -> None:
        assert self.open_index is not None and payload["index"] == self.open_index, \
            "a delta for a block that is not open"
        block, delta = self.message["content"][self.open_index], payload["delta"]
        assert delta["type"] in _DELTAS[block["type"]]
        assert self.signatures == 0, "nothing may follow a signature_delta in its block"
        kind = delta["type"]
        if kind == "signature_delta":
            block["signature"] = delta["signature"]
            self.signatures += 1
        elif kind == "input_json_delta":
            self.buffers[self.open_index] = (self.buffers.get(self.open_index, "")
                                             + delta["partial_json"])
        else:
            field = "text" if kind == "text_delta" else "thinking"
            block[field] += delta[field]

    def block_stop(self, payload: dict[str, Any]) -> None:
        assert self.open_index is not None and payload["index"] == self.open_index
        block = self.message["content"][self.open_index]
        if block["type"] == "thinking":
            assert self.signatures == 1 and block["signature"], "one signature_delta, last"
        if block["type"] == "tool_use" and self.open_index in self.buffers:
            block["input"] = json.loads(self.buffers[self.open_index])
        self.open_index = None

    def message_delta(self, payload: dict[str, Any]) -> None:
        assert self.open_index is None, "message_delta while a block is open"
        self.message.update(payload["delta"])
        self.message["usage"] = {**self.message["usage"], **payload["usage"]}


def check_message_stream(frames: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Asserts the event grammar; returns the message the stream folds into."""
    names = [name for name, _ in frames if name != "ping"]
    assert names[0] == "message_start" and names.count("message_start") == 1
    assert names[-1] == "message_stop" and names.count("message_stop") == 1
    assert names[-2] == "message_delta"
    fold = _Fold(frames[0][1])
    steps = {"content_block_start": fold.block_start, "content_block_delta": fold.block_delta,
             "content_block_stop": fold.block_stop, "message_delta": fold.message_delta}
    for name, payload in frames[1:]:
        if step := steps.get(name):
            step(payload)
    return fold.message
