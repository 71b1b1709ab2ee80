"""What the node remembers of each reply's prompt, to say why a later one missed the cache.

A print is a handful of digests: of the model, the system prompt, the tools, the other
settings that shape the prompt, and all the messages, with how many there were and how
many tokens the prompt had. A later request that names an earlier reply is compared with
that reply's print in the order a prompt is built and cached: model, system, tools, then
the earlier messages (which the new request must repeat unchanged before adding its own).
The first difference is the reason. When everything matches but the engine served fewer
cached tokens than the earlier prompt held, the cache itself let the prefix go (evicted,
or a restart): that is reported as ``unavailable``, never as the client's change.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Literal

from ..core import ChatRequest

MissReason = Literal["model_changed", "system_changed", "tools_changed", "messages_changed",
                     "previous_not_found", "unavailable"]
# an earlier prompt's last tokens (its generation prompt, a dropped reasoning section) may
# differ from what the next turn renders there; a shortfall up to this is still a hit
_SLACK_TOKENS = 64


@dataclass(frozen=True)
class CacheMiss:
    reason: MissReason
    # roughly what would have been read from the cache had the prefix matched
    missed_tokens: int = 0


@dataclass(frozen=True)
class PromptPrint:
    model: str
    system: bytes
    tools: bytes
    settings: bytes
    message_count: int
    messages: bytes
    prompt_tokens: int


def _digest(value: object) -> bytes:
    return hashlib.sha256(repr(value).encode()).digest()[:16]


def prompt_print(request: ChatRequest, prompt_tokens: int) -> PromptPrint:
    settings = (request.thinking is not None, request.tool_choice, request.response_schema)
    return PromptPrint(model=request.model, system=_digest(request.system),
                       tools=_digest(_listed(request)), settings=_digest(settings),
                       message_count=len(request.messages),
                       messages=_digest(request.messages), prompt_tokens=prompt_tokens)


def _listed(request: ChatRequest) -> list[tuple[object, ...]]:
    """The tool list at the top of the prompt: what tools loaded or withdrawn later in the
    conversation leave as it was."""
    return [(t.name, t.description, t.input_schema) for t in request.tools if not t.inline]


class PromptPrints:
    """The prints of the last ``capacity`` replies, by reply id."""

    def __init__(self, capacity: int = 10_000) -> None:
        self.capacity = capacity
        self._prints: OrderedDict[str, PromptPrint] = OrderedDict()

    def remember(self, reply_id: str, print_: PromptPrint) -> None:
        self._prints[reply_id] = print_
        self._prints.move_to_end(reply_id)
        while len(self._prints) > self.capacity:
            self._prints.popitem(last=False)

    def diagnose(self, previous_id: str, request: ChatRequest, current: PromptPrint,
                 cached_tokens: int) -> CacheMiss | None:
        """Why this prompt did not reuse the earlier reply's prefix; None when it did."""
        earlier = self._prints.get(previous_id)
        if earlier is None:
            return CacheMiss("previous_not_found")
        missed = max(0, earlier.prompt_tokens - cached_tokens)
        for reason, same in (("model_changed", earlier.model == current.model),
                             ("system_changed", earlier.system == current.system),
                             ("tools_changed", earlier.tools == current.tools),
                             ("messages_changed", _extends(request, earlier))):
            if not same:
                return CacheMiss(reason, missed)  # type: ignore[arg-type]
        if earlier.settings != current.settings or missed > _SLACK_TOKENS:
            return CacheMiss("unavailable")
        return None


def _extends(request: ChatRequest, earlier: PromptPrint) -> bool:
    """The request repeats the earlier messages unchanged (and may add more after them)."""
    count = earlier.message_count
    return len(request.messages) >= count and \
        _digest(request.messages[:count]) == earlier.messages
