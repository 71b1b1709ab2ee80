"""A node that dies in the middle of a stream: the client still gets the API's own end.

Once a node's stream has begun no other node can take the request over, so the edge ends
the client's stream the way the API ends a failed one (Anthropic's ``error`` event, OpenAI's
``data:`` object with ``error`` or the Responses ``error`` event). For that event to be read
as one, the edge passes a node's stream on in whole frames: the bytes after the last blank
line wait for the rest of their frame, and a frame the node never finished is dropped.
"""

from __future__ import annotations

from ...envelopes import error_event
from ...errors import InternalError

_END = b"\n\n"


class WholeFrames:
    """Cuts a server-sent-event stream after its last complete frame, and counts the
    frames passed (the Responses ``error`` event is numbered after them)."""

    def __init__(self) -> None:
        self.pending = b""
        self.frames = 0

    def feed(self, chunk: bytes) -> bytes:
        data = self.pending + chunk
        end = data.rfind(_END)
        if end < 0:
            self.pending = data
            return b""
        ready, self.pending = data[:end + len(_END)], data[end + len(_END):]
        self.frames += ready.count(b"\ndata: ") + ready.startswith(b"data: ")
        return ready


def node_lost(request_id: str) -> InternalError:
    return InternalError(
        f"the node serving this request stopped before its response was complete "
        f"(request {request_id}); the reply is cut here, send the request again",
        code="node_lost")


def cut_event(path: str, request_id: str, frames: WholeFrames) -> bytes:
    """The event that ends a stream whose node broke off."""
    return error_event(path, node_lost(request_id), request_id, frames.frames)
